"""What a node process must know before `rclpy.init`: its name, namespace, enclave and a few parameters.

rcl applies DDS-Security when the context starts, so the secure mode (`secure`, `keystore` parameters) is read
from the command line before rcl reads it: `-r __node:=NAME`, `-r __ns:=/NS`, `--enclave NAME` / `-e NAME`,
`-p NAME:=VALUE` and the `--params-file` files (their sections for this node: `/**`, `/**/NAME`, the full name,
nested or not), in rcl's order (later wins). Other ROS arguments are left to rcl.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from robo_rl.real.ros.params_file import SECTION_KEY


@dataclass(frozen=True)
class StartupArguments:
    """A node's name, namespace, `--enclave` ("" when not given) and the parameters read before rclpy.init."""

    name: str
    namespace: str = "/"
    enclave: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)

    @property
    def full_name(self) -> str:
        return f"{self.namespace.rstrip('/')}/{self.name}"


def startup_arguments(argv: Sequence[str], default_name: str, wanted: Sequence[str]) -> StartupArguments:
    """The `wanted` parameters of node `default_name` (renamed by `-r __node:=`) from argv's ROS arguments."""
    name, namespace, enclave = default_name, "/", ""
    layers: list[tuple[str, Any]] = []  # ("file", path) or ("param", (key, value)) in command-line order
    for option, value in _ros_options(argv):
        if option in ("-r", "--remap") and value.startswith("__node:="):
            name = value.split(":=", 1)[1]
        elif option in ("-r", "--remap") and value.startswith("__ns:="):
            namespace = value.split(":=", 1)[1] or "/"
        elif option in ("-e", "--enclave"):
            enclave = value
        elif option == "--params-file":
            layers.append(("file", Path(value)))
        elif option in ("-p", "--param") and ":=" in value:
            key, text = value.split(":=", 1)
            layers.append(("param", (key, yaml.safe_load(text) if text else "")))
    arguments = StartupArguments(name, namespace, enclave)
    for kind, item in layers:
        found = file_parameters(item, arguments) if kind == "file" else dict([item])
        arguments.parameters.update({key: value for key, value in found.items() if key in wanted})
    return arguments


FLAGS = frozenset(
    f"--{switch}-{logs}-logs" for switch in ("enable", "disable") for logs in ("rosout", "stdout", "external-lib")
)
"""The ROS options that take no value (rcl/arguments.c); every other one takes the next argument."""


def _ros_options(argv: Sequence[str]) -> Iterator[tuple[str, str]]:
    in_ros, index = False, 0
    while index < len(argv):
        item = argv[index]
        if item == "--ros-args":
            in_ros = True
        elif in_ros and item == "--":
            in_ros = False
        elif in_ros and item.startswith("-") and item not in FLAGS and index + 1 < len(argv):
            yield item, argv[index + 1]
            index += 1
        index += 1


def file_parameters(path: Path, node: StartupArguments) -> dict[str, Any]:
    """The parameters the parameter file `path` gives `node` (a file rcl will refuse gives none here: spin.run
    reports it)."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    found: dict[str, Any] = {}
    for key, values in _sections(data, ""):
        if _applies(key, node):
            found.update(values)
    return found


def _sections(data: Any, prefix: str) -> Iterator[tuple[str, dict[str, Any]]]:
    if not isinstance(data, dict):
        return
    for key, value in data.items():
        if key == SECTION_KEY and isinstance(value, dict):
            yield prefix or "/", value
        elif isinstance(value, dict):
            yield from _sections(value, f"{prefix}/{str(key).strip('/')}")


def _applies(key: str, node: StartupArguments) -> bool:
    """rcl's node-name match: `/**`, exact full name, or a pattern with `*` (one name) and `**` (any)."""
    key = "/" + key.strip("/")
    if key in ("/**", node.full_name):
        return True
    pattern = key.replace("**", "\0").replace("*", "[!/]*").replace("\0", "*")
    return "*" in key and fnmatch.fnmatchcase(node.full_name, pattern)
