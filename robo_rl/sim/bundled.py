"""Data files shipped inside the package (quadrotor frames, RC cars, tracks), looked up by name or given by path."""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import TypeVar

from robo_rl.config import ConfigError, from_dict, read_yaml

T = TypeVar("T")


def bundled_names(package: str, folder: str, suffix: str) -> list[str]:
    """Sorted names (file stems) of the `suffix` files in `package`/`folder`."""
    entries = (resources.files(package) / folder).iterdir()
    return sorted(entry.name.removesuffix(suffix) for entry in entries if entry.name.endswith(suffix))


def load_bundled(
    name_or_path: str | Path, package: str, folder: str, suffixes: tuple[str, ...], kind: str, read: Callable[[Path], T]
) -> T:
    """`read` applied to the bundled file `name_or_path` (a bare name, e.g. "crazyflie_2_1") or to the file at
    that path (anything with a "/" or one of `suffixes`). An unknown name raises ValueError listing the bundled
    names of this `kind` (e.g. "frame")."""
    if isinstance(name_or_path, str) and "/" not in name_or_path and not name_or_path.endswith(suffixes):
        names = bundled_names(package, folder, suffixes[0])
        if name_or_path not in names:
            raise ValueError(f"unknown {kind} {name_or_path!r}; bundled {kind}s: {names} (or a {suffixes[0]} path)")
        with resources.as_file(resources.files(package) / folder / f"{name_or_path}{suffixes[0]}") as path:
            return read(path)
    return read(Path(name_or_path))


def read_named_params(cls: type[T], path: str | Path) -> T:
    """Read a YAML file whose keys are the fields of the dataclass `cls`; its `name` field defaults to the file
    stem. Unknown or missing keys, wrong types and invalid values raise ConfigError naming the file and the key."""
    data = read_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of {cls.__name__} fields, got {type(data).__name__}")
    try:
        return from_dict(cls, {"name": Path(path).stem, **data})
    except ConfigError as error:
        raise ConfigError(f"{path}: {error}") from None
