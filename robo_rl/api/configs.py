"""Experiment configs where they are read: a preset name or a YAML file, and `key=value` overrides.

The edge where text becomes typed config: a task's settings (`task.config`, `task.eval_config`) arrive from YAML or
`--set` as mappings and leave as the task's own config class (`resolve_task`). `--set task.KEY=VALUE`, KEY not a
field of `TaskConfig`, is short for `task.config.KEY=VALUE`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from robo_rl.config import (
    ConfigError,
    apply_overrides,
    differences,
    load_yaml,
    merge,
    set_values,
    to_dict,
)
from robo_rl.experiment import ExperimentConfig, TaskConfig

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
"""The presets as YAML files (robo_rl/configs/NAME.yaml): what `robo-rl train NAME` reads; to read and to copy."""
HEADER = (
    "# The preset {name}, written from robo_rl/sim/*/presets.py by `python -m robo_rl.api.configs --write`\n"
    "# (tests check it): what it changes from ExperimentConfig's defaults (robo_rl/experiment.py); task.config:\n"
    "# what it changes from the task's defaults; task.eval_config: what evaluation changes from task.config.\n"
    "# A run's config.yaml has every key.\n"
)
_TASK_FIELDS = frozenset(field.name for field in dataclasses.fields(TaskConfig))


def preset_names() -> list[str]:
    """The presets `robo-rl train NAME` knows, sorted (their files in robo_rl/configs)."""
    return sorted(path.stem for path in CONFIGS.glob("*.yaml"))


def resolve_config(
    source: str, overrides: Sequence[str] = (), values: Mapping[str, Any] | None = None
) -> ExperimentConfig:
    """`source` is a YAML file or a preset name; `values` (typed, by dotted key) then `overrides` (`key=value`
    strings) are applied last. The task's settings come back typed."""
    if Path(source).suffix in (".yaml", ".yml") or Path(source).is_file():
        cfg = load_config_file(source)
    elif (CONFIGS / f"{source}.yaml").is_file():
        cfg = load_config_file(CONFIGS / f"{source}.yaml")
    else:
        raise ConfigError(f"{source}: neither a YAML file nor a preset (presets: {', '.join(preset_names())})")
    return override(cfg, overrides, values)


def preset(name: str) -> ExperimentConfig:
    """The preset `name`, as `robo-rl train NAME` runs it."""
    if not (CONFIGS / f"{name}.yaml").is_file():
        raise ConfigError(f"{name}: no such preset (presets: {', '.join(preset_names())})")
    return resolve_config(name)


def load_config_file(path: str | os.PathLike[str]) -> ExperimentConfig:
    """A YAML experiment config (the task's settings typed); ConfigError naming the file."""
    cfg = load_yaml(ExperimentConfig, path, allow_empty=False)
    try:
        return resolve_task(cfg)
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None


def override(
    cfg: ExperimentConfig, overrides: Sequence[str] = (), values: Mapping[str, Any] | None = None
) -> ExperimentConfig:
    """`cfg` with typed `values` by dotted key, then `key=value` `overrides` (shorthands expanded), the task's
    settings typed again. A change to `task.config` reaches the evaluation env too, whose `eval_config` says only
    what differs."""
    if values:
        cfg = set_values(cfg, {_task_key(key): value for key, value in values.items()})
    if overrides:
        cfg = apply_overrides(cfg, expand_overrides(overrides))
    return resolve_task(cfg) if values or overrides else cfg


def resolve_task(cfg: ExperimentConfig) -> ExperimentConfig:
    """`cfg` with `task.config` and `task.eval_config` as the task's config class (mappings of changes laid over its
    defaults and over `task.config`); ConfigError naming the field that does not fit."""
    from robo_rl.sim import names, task_settings

    task = cfg.task
    if task.name not in names():
        raise ConfigError(f"task.name: unknown task {task.name!r} (robo-rl tasks lists them: {', '.join(names())})")
    config = task_settings(task.name, task.config)
    evaluation = task.eval_config
    if isinstance(evaluation, Mapping):  # what differs from the training settings
        evaluation = _over(config, evaluation)
    elif evaluation is not None:
        evaluation = task_settings(task.name, evaluation, "task.eval_config")
    config = None if task.config is None else config
    return dataclasses.replace(cfg, task=dataclasses.replace(task, config=config, eval_config=evaluation))


def _over(base: Any, changes: Mapping[str, Any]) -> Any:
    return merge(base, changes, "task.eval_config")


def expand_overrides(overrides: Sequence[str]) -> list[str]:
    """`key=value` overrides with the task shorthand spelled out (`task.KEY=...` → `task.config.KEY=...`)."""
    out: list[str] = []
    for text in overrides:
        key, sep, raw = text.partition("=")
        out.append(f"{_task_key(key.strip())}{sep}{raw}" if sep else text)
    return out


def _task_key(key: str) -> str:
    """`task.KEY...` → `task.config.KEY...` where KEY is not a `TaskConfig` field (the task's own setting)."""
    parts = key.split(".")
    if len(parts) > 1 and parts[0] == "task" and parts[1] not in _TASK_FIELDS:
        return ".".join(["task", "config", *parts[1:]])
    return key


def preset_yaml(name: str, presets: Mapping[str, Any] | None = None) -> str:
    """The text of robo_rl/configs/NAME.yaml: the preset's keys whose values differ from the defaults (the task's
    config from the task's defaults, its evaluation config from its config), nested sections only where something
    in them differs. `resolve_config(NAME)` reads it back equal to the preset."""
    from robo_rl.sim import default_config
    from robo_rl.sim.presets import all_presets

    cfg = (presets or all_presets())[name]()
    data = to_dict(cfg)
    if cfg.task.config is not None:
        own = differences(to_dict(cfg.task.config), to_dict(default_config(cfg.task.name)))
        data["task"]["config"] = own or None
    changed = differences(data, to_dict(ExperimentConfig()))
    return HEADER.format(name=name) + yaml.safe_dump(changed, sort_keys=False)


@dataclasses.dataclass(frozen=True)
class PresetFiles:
    """The preset files' texts as the code writes them, task folder by task folder."""

    texts: dict[str, str]
    """NAME → the text of robo_rl/configs/NAME.yaml, for every preset whose task folder imports."""
    declared: frozenset[str]
    """Every preset name (read from the task folders without importing them)."""
    unavailable: dict[str, str]
    """Presets module → the package it needs that is not installed (a simulator's backend): its files are kept."""


def preset_files() -> PresetFiles:
    """Every preset file's text, a task folder at a time: a folder whose simulator needs a package that is not
    installed (MuJoCo, PyBullet, ...) is left out and named, so that the others are written with the core install."""
    from robo_rl.sim.presets import declared_presets, preset_modules, presets_of

    texts: dict[str, str] = {}
    declared: set[str] = set()
    unavailable: dict[str, str] = {}
    for module in preset_modules():
        names = set(declared_presets(module))
        if names & declared:
            raise ValueError(f"{module}: preset name(s) {sorted(names & declared)} already defined by another task")
        declared |= names
        try:
            presets = presets_of(module)
            texts |= {name: preset_yaml(name, presets) for name in presets}
        except ModuleNotFoundError as err:
            if err.name is None or err.name.partition(".")[0] == "robo_rl":
                raise
            unavailable[module] = err.name
    return PresetFiles(texts, frozenset(declared), unavailable)


def stale_preset_files(files: PresetFiles | None = None) -> list[str]:
    """Preset files that are missing, out of date, or without a preset (those of `files.unavailable` unchecked)."""
    files = files or preset_files()
    stale = [name for name, text in sorted(files.texts.items()) if _read(CONFIGS / f"{name}.yaml") != text]
    return stale + sorted(p.stem for p in CONFIGS.glob("*.yaml") if p.stem not in files.declared)


def _read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.is_file() else None


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(
        description="Write or check robo_rl/configs/*.yaml from the presets in robo_rl/sim/*/presets.py."
    )
    parser.add_argument("--write", action="store_true", help="rewrite every preset file (and remove orphans)")
    args = parser.parse_args()
    files = preset_files()
    for module, package in sorted(files.unavailable.items()):
        print(f"{module} needs {package}, which is not installed: its preset files are kept as they are")
    if not args.write:
        stale = stale_preset_files(files)
        print(f"out of date: {', '.join(stale)}" if stale else "every preset file is current")
        return 1 if stale else 0
    for path in CONFIGS.glob("*.yaml"):
        if path.stem not in files.declared:
            path.unlink()
    for name, text in sorted(files.texts.items()):
        (CONFIGS / f"{name}.yaml").write_text(text, encoding="utf-8")
    print(f"wrote {len(files.texts)} preset files to {CONFIGS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
