"""An experiment config from a preset name or a YAML file, with `key=value` overrides."""

from __future__ import annotations

from pathlib import Path

from robo_rl.config import ConfigError, apply_overrides, load_yaml
from robo_rl.experiment import PRESETS, ExperimentConfig


def resolve_config(source: str, overrides: list[str]) -> ExperimentConfig:
    """`source` is a YAML file or a preset name; `overrides` are `key=value` strings applied last."""
    if Path(source).suffix in (".yaml", ".yml") or Path(source).is_file():
        cfg = load_yaml(ExperimentConfig, source, allow_empty=False)
    elif source in PRESETS:
        cfg = PRESETS[source]()
    else:
        raise ConfigError(f"{source}: neither a YAML file nor a preset (presets: {', '.join(sorted(PRESETS))})")
    return apply_overrides(cfg, overrides)
