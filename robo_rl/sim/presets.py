"""Every task's presets, collected from the task folders.

A task folder `robo_rl/sim/TASK/` may have a `presets.py` whose `PRESETS` maps preset names to functions returning
an `ExperimentConfig`; nothing else registers them. The presets' YAML files (robo_rl/configs/NAME.yaml, written by
`python -m robo_rl.api.configs --write`) are what `robo-rl train NAME` reads, so that naming a preset does not import
every simulator; a test keeps the files equal to these functions.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from collections.abc import Callable
from pathlib import Path

from robo_rl.experiment import ExperimentConfig

Preset = Callable[[], ExperimentConfig]

_SIM = Path(__file__).resolve().parent


def preset_modules() -> list[str]:
    """The import paths of the task folders' presets modules, sorted."""
    folders = sorted(info.name for info in pkgutil.iter_modules([str(_SIM)]) if info.ispkg)
    return [f"robo_rl.sim.{name}.presets" for name in folders if (_SIM / name / "presets.py").is_file()]


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
