"""ROS parameter files given to a node (`--ros-args --params-file FILE`), checked before rcl reads them.

rcl reads them in `rclpy.init`: it ignores an empty or scalar file silently (the node then runs on its defaults)
and refuses a malformed one with a traceback. The check here refuses both, in one line naming the file: an
unreadable, undecodable or empty file, invalid YAML, or a document that is not nested mappings ending in
`ros__parameters` mappings. Any file rcl takes parameters from passes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

ROS_ARGS = "--ros-args"
PARAMS_FILE = "--params-file"
SECTION_KEY = "ros__parameters"


class ParamsFileError(ValueError):
    """A parameter file a node was given is unusable; the message is `PATH: PROBLEM`, one line."""


def params_files(argv: Sequence[str]) -> list[Path]:
    """The files of the `--params-file FILE` pairs among argv's ROS arguments (`--ros-args ... [--]`)."""
    files, in_ros_args, expect_file = [], False, False
    for arg in argv:
        if expect_file:
            files.append(Path(arg))
            expect_file = False
        elif arg == ROS_ARGS:
            in_ros_args = True
        elif arg == "--":
            in_ros_args = False
        elif in_ros_args and arg == PARAMS_FILE:
            expect_file = True
    return files


def check_params_file(path: Path) -> None:
    """Raise ParamsFileError naming `path` unless it holds node sections: `NAME: {ros__parameters: {...}}`, names
    possibly nested (`/ns: {node: {ros__parameters: ...}}`)."""
    data = _parse(path, _read(path))
    if data is None:
        raise ParamsFileError(f"{path}: empty parameter file")
    if not isinstance(data, dict):
        raise ParamsFileError(f"{path}: expected node names mapping to {{{SECTION_KEY}: ...}}, got a {_kind(data)}")
    _check_sections(path, data, "")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ParamsFileError(f"{path}: not a YAML parameter file (not UTF-8 text: byte {err.start})") from None
    except OSError as err:
        raise ParamsFileError(f"{path}: cannot read ({err.strerror})") from None


def _parse(path: Path, text: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = " ".join(str(getattr(err, "problem", None) or err).split())
        raise ParamsFileError(f"{path}: invalid YAML: {where}{problem}") from None
    except RecursionError:
        raise ParamsFileError(f"{path}: invalid YAML: nested too deeply") from None


def _check_sections(path: Path, data: dict[Any, Any], where: str) -> None:
    for key, value in data.items():
        name = f"{where}/{key}" if where else str(key)
        if key == SECTION_KEY:
            if value is not None and not isinstance(value, dict):
                raise ParamsFileError(f"{path}: {name!r}: expected a mapping of parameters, got a {_kind(value)}")
        elif isinstance(value, dict):
            _check_sections(path, value, name)
        else:
            raise ParamsFileError(f"{path}: {name!r}: expected a node section, got a {_kind(value)}")


def _kind(value: Any) -> str:
    return {list: "list", str: "string", bool: "boolean"}.get(type(value), type(value).__name__)
