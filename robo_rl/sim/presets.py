"""Every task's presets, collected from the task folders.

A task folder `robo_rl/sim/TASK/` may have a `presets.py` whose `PRESETS`, a dict literal, maps preset names to
functions returning an `ExperimentConfig`; nothing else registers them. The presets' YAML files
(robo_rl/configs/NAME.yaml, written by `python -m robo_rl.api.configs --write`) are what `robo-rl train NAME`
reads, so that naming a preset does not import every simulator; a test keeps the files equal to these functions.
The names are read from the source (`declared_presets`), so a folder's presets are known without importing it (and
the simulator it configures, whose backend may not be installed).
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the names are read without the training code
    from robo_rl.experiment import ExperimentConfig

Preset = Callable[[], "ExperimentConfig"]

_SIM = Path(__file__).resolve().parent


def preset_modules() -> list[str]:
    """The import paths of the task folders' presets modules (robo_rl/sim/TASK/presets.py), sorted by folder."""
    folders = sorted(info.name for info in pkgutil.iter_modules([str(_SIM)]) if info.ispkg)
    return [f"robo_rl.sim.{name}.presets" for name in folders if (_SIM / name / "presets.py").is_file()]


def declared_presets(module: str) -> list[str]:
    """The preset names of the presets module `module` (`preset_modules`), read from the keys of its `PRESETS`
    dict literal without importing it; ValueError where `PRESETS` is not a dict literal with string keys."""
    path = _SIM.joinpath(*module.split(".")[2:]).with_suffix(".py")
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "PRESETS" for t in node.targets):
            keys = node.value.keys if isinstance(node.value, ast.Dict) else [None]
            names = [key.value for key in keys if isinstance(key, ast.Constant) and isinstance(key.value, str)]
            if len(names) != len(keys):
                raise ValueError(f"{path}: PRESETS must be a dict literal with string keys")
            return names
    raise ValueError(f"{path}: no `PRESETS = {{...}}` at its top level")


def presets_of(module: str) -> dict[str, Preset]:
    """The presets of the presets module `module`, imported (and with it the simulator they configure)."""
    found: dict[str, Preset] = importlib.import_module(module).PRESETS
    if list(found) != declared_presets(module):
        raise ValueError(f"{module}: PRESETS must be a dict literal with string keys")
    return found


def all_presets() -> dict[str, Preset]:
    """Every preset by name (imports every task folder's presets, and with them the simulators they configure)."""
    presets: dict[str, Preset] = {}
    for path in preset_modules():
        found = presets_of(path)
        clash = sorted(set(found) & set(presets))
        if clash:
            raise ValueError(f"{path}: preset name(s) {clash} already defined by another task folder")
        presets.update(found)
    return presets
