"""Loading robot profiles: bundled ones by name, others from a YAML path, parsed data through
`robo_rl.config.from_dict`; every error is one ProfileError line naming the file."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from robo_rl.config import ConfigError, from_dict
from robo_rl.real.profile.errors import ProfileError
from robo_rl.real.profile.schema import RobotProfile


def profile_from_dict(data: Any, source: str = "profile") -> RobotProfile:
    """Build a profile from parsed YAML (`robo_rl.config.from_dict`: strict keys and types); `source` prefixes
    error messages."""
    try:
        return from_dict(RobotProfile, data)
    except ConfigError as err:  # a ProfileError of a section's check too, at its key's path
        raise ProfileError(f"{source}: {err}") from None


def load_profile(name_or_path: str | Path) -> RobotProfile:
    """Load a bundled profile by name (`quadrotor_crazyflie`, `quadrotor_crazyswarm2`, `quadrotor_px4`, `rc_car`,
    `arm`) or a YAML path."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml"):
        if not path.is_file():
            raise ProfileError(f"{path}: no such profile file")
        text, label = _read_text(path), path.name
    else:
        resource = resources.files("robo_rl.real").joinpath("profiles", f"{name_or_path}.yaml")
        if not resource.is_file():
            raise ProfileError(f"unknown profile {name_or_path!r} (bundled: {', '.join(bundled_profiles())})")
        text, label = resource.read_text(), f"{name_or_path}.yaml"
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ProfileError(f"{label}: invalid YAML: {_first_line(err)}") from None
    if data is None:
        raise ProfileError(f"{label}: empty profile file")
    return profile_from_dict(data, label)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ProfileError(f"{path.name}: not a YAML profile (not UTF-8 text: byte {err.start})") from None
    except OSError as err:
        raise ProfileError(f"{path.name}: cannot read ({err.strerror})") from None


def bundled_profiles() -> tuple[str, ...]:
    """Names of the profiles shipped in `robo_rl/real/profiles/`."""
    folder = resources.files("robo_rl.real").joinpath("profiles")
    return tuple(sorted(p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml")))


def _first_line(err: Exception) -> str:
    lines = str(err).strip().splitlines()
    return lines[0] if lines else type(err).__name__
