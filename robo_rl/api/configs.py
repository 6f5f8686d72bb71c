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


CONFIGS = Path(__file__).resolve().parents[1] / "configs"
"""The presets as YAML files (robo_rl/configs/NAME.yaml), to read and to copy."""
HEADER = (
    "# The preset {name}: what it changes from ExperimentConfig's defaults (robo_rl/experiment.py);\n"
    "# a run's config.yaml shows every key. Written by `python -m robo_rl.api.configs --write` (tests check it).\n"
)


def preset_yaml(name: str) -> str:
    """The text of robo_rl/configs/NAME.yaml: the preset's keys whose values differ from the defaults, nested
    sections only where something in them differs. `load_yaml` reads it back equal to the preset."""
    import yaml

    from robo_rl.config import to_dict

    changed = _differences(to_dict(PRESETS[name]()), to_dict(ExperimentConfig()))
    return HEADER.format(name=name) + yaml.safe_dump(changed, sort_keys=False)


def _differences(values: dict[str, object], defaults: dict[str, object]) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in values.items():
        default = defaults.get(key)
        if isinstance(value, dict) and isinstance(default, dict):
            nested = _differences(value, default)
            if nested:
                out[key] = nested
        elif value != default:
            out[key] = value
    return out


def stale_preset_files() -> list[str]:
    """Preset files that are missing, out of date, or without a preset."""
    stale = [name for name in sorted(PRESETS) if _read(CONFIGS / f"{name}.yaml") != preset_yaml(name)]
    return stale + sorted(p.stem for p in CONFIGS.glob("*.yaml") if p.stem not in PRESETS)


def _read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.is_file() else None


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(description="Write or check robo_rl/configs/*.yaml from the presets.")
    parser.add_argument("--write", action="store_true", help="rewrite every preset file (and remove orphans)")
    args = parser.parse_args()
    if not args.write:
        stale = stale_preset_files()
        print(f"out of date: {', '.join(stale)}" if stale else "every preset file is current")
        return 1 if stale else 0
    for path in CONFIGS.glob("*.yaml"):
        if path.stem not in PRESETS:
            path.unlink()
    for name in sorted(PRESETS):
        (CONFIGS / f"{name}.yaml").write_text(preset_yaml(name), encoding="utf-8")
    print(f"wrote {len(PRESETS)} preset files to {CONFIGS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
