"""`ros2 run robo_rl train --ros-args -p preset:=quadrotor_hover_ppo -p seed:=1`: training started by `ros2 launch`.

The `train_*.launch.yaml` files declare training as a node of robo_rl with inline parameters. `robo-rl launch`
turns them into `robo-rl train` flags itself; under `ros2 launch` the colcon package's `lib/robo_rl/train` runs
`robo_rl.cli.ros_train`, which translates the ROS arguments with `train_argv` here and runs `robo-rl train`.
launch_ros passes inline parameters as generated `--params-file`s (`/**:` or `/NS/NAME:` then `ros__parameters:`);
they combine with `-p NAME:=VALUE` as rcl combines them (`param_file.node_parameters`), for this node's name
(`-r __node:=NAME`, default `train`) and namespace (`-r __ns:=/NS`, default `/`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from robo_rl.launch.errors import LaunchError
from robo_rl.launch.param_file import WILDCARD_KEY, Section, infer_type, load_param_file, node_parameters
from robo_rl.launch.runner import train_flag

DEFAULT_NAME = "train"
ROS_OPTIONS = ("-p", "--param", "-r", "--remap", "--params-file")


@dataclass
class RosArguments:
    """What the train entry reads of a command line.

    Attributes:
        plain: the arguments outside `--ros-args ... [--]`, in order (passed on to `robo-rl train`).
        sections: parameter sections in command-line order (files' sections; `-p` as a `/**` section).
        name: the node name from `-r __node:=NAME`.
        namespace: the namespace from `-r __ns:=/NS`.
    """

    plain: list[str] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    name: str = DEFAULT_NAME
    namespace: str = "/"


def train_argv(argv: Sequence[str]) -> list[str]:
    """`robo-rl train` arguments from `[ARGS...] --ros-args [-r ...] [--params-file FILE] [-p NAME:=VALUE] ...`."""
    parsed = parse_ros_arguments(argv)
    params = node_parameters(parsed.sections, parsed.name, parsed.namespace)
    flags = ["train"]
    for name, value in params.items():
        if value != "":
            flags += train_flag(name, value, None)
    return [*flags, *parsed.plain]


def parse_ros_arguments(argv: Sequence[str]) -> RosArguments:
    """Split `argv` into plain arguments and the ROS arguments the train entry understands (one-line errors)."""
    parsed = RosArguments()
    in_ros, index = False, 0
    while index < len(argv):
        item = argv[index]
        if item == "--ros-args":
            in_ros = True
        elif in_ros and item == "--":
            in_ros = False
        elif not in_ros:
            parsed.plain.append(item)
        else:
            value = argv[index + 1] if index + 1 < len(argv) else None
            if value is None or item not in ROS_OPTIONS:
                raise LaunchError(f"train: unsupported ROS argument {item!r} (only -p, --params-file and -r)")
            _apply(parsed, item, value)
            index += 1
        index += 1
    return parsed


def _apply(parsed: RosArguments, option: str, value: str) -> None:
    if option == "--params-file":
        parsed.sections.extend(load_param_file(Path(value)))
        return
    name, separator, text = value.partition(":=")
    if not separator or not name:
        raise LaunchError(f"train: expected {option} NAME:=VALUE, got {value!r}")
    if option in ("-p", "--param"):
        parsed.sections.append((WILDCARD_KEY, {name: infer_type(text)}))
    elif name == "__node":
        parsed.name = text
    elif name == "__ns":
        parsed.namespace = text
