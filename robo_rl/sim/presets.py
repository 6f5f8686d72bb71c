"""Every task's presets, collected from the task folders.

A task folder `robo_rl/sim/TASK/` may have a `presets.py` whose `PRESETS` maps preset names to functions returning
an `ExperimentConfig` (a one-file task keeps `PRESETS` in its folder's `__init__.py`); nothing else registers them.
The presets' YAML files (robo_rl/configs/NAME.yaml, written by `python -m robo_rl.api.configs --write`) are what
`robo-rl train NAME` reads, so that naming a preset does not import every simulator; a test keeps the files equal
to these functions.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from collections.abc import Callable
from pathlib import Path

from robo_rl.experiment import ExperimentConfig

Preset = Callable[[], ExperimentConfig]

_SIM = Path(__file__).resolve().parent


def preset_modules() -> list[str]:
    """The import paths of the modules holding the task folders' `PRESETS`, sorted by folder."""
    folders = sorted(info.name for info in pkgutil.iter_modules([str(_SIM)]) if info.ispkg)
    modules = []
    for name in folders:
        if (_SIM / name / "presets.py").is_file():
            modules.append(f"robo_rl.sim.{name}.presets")
        elif defines_presets(_SIM / name / "__init__.py"):
            modules.append(f"robo_rl.sim.{name}")
    return modules


def defines_presets(path: Path) -> bool:
    """Whether the module file `path` assigns `PRESETS` at its top level (read, not imported)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    targets = (
        node.target if isinstance(node, ast.AnnAssign) else node.targets[0]
        for node in tree.body
        if isinstance(node, (ast.Assign, ast.AnnAssign))
    )
    return any(isinstance(target, ast.Name) and target.id == "PRESETS" for target in targets)


def all_presets() -> dict[str, Preset]:
    """Every preset by name (imports every task folder's presets, and with them the simulators they configure)."""
    presets: dict[str, Preset] = {}
    for path in preset_modules():
        module = importlib.import_module(path)
        found: dict[str, Preset] = getattr(module, "PRESETS", {})
        clash = sorted(set(found) & set(presets))
        if clash:
            raise ValueError(f"{path}: preset name(s) {clash} already defined by another task folder")
        presets.update(found)
    return presets
