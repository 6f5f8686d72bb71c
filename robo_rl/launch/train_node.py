"""`ros2 run robo_rl train --ros-args -p preset:=quadrotor_hover_ppo -p seed:=1`: training started by `ros2 launch`.

The `train_*.launch.yaml` files declare training as a node of robo_rl with inline parameters. `robo-rl launch`
turns them into `robo-rl train` flags itself; under `ros2 launch` the colcon package's `lib/robo_rl/train` runs
`robo_rl.cli.ros_train`, which translates the ROS arguments with `train_argv` here and runs `robo-rl train`.
"""

from __future__ import annotations

from collections.abc import Sequence

from robo_rl.launch.errors import LaunchError
from robo_rl.launch.param_file import infer_type
from robo_rl.launch.runner import train_flag


def train_argv(argv: Sequence[str]) -> list[str]:
    """`robo-rl train` arguments from a command line `[ARGS...] --ros-args -r ... -p NAME:=VALUE ...`."""
    plain, ros = _split(list(argv))
    flags = ["train"]
    index = 0
    while index < len(ros):
        option = ros[index]
        value = ros[index + 1] if index + 1 < len(ros) else None
        if value is None or option not in ("-p", "--param", "-r", "--remap", "--params-file"):
            raise LaunchError(f"train: unsupported ROS argument {option!r} (only -p NAME:=VALUE and -r)")
        if option == "--params-file":
            raise LaunchError("train: parameter files are not supported; give the parameters inline (-p)")
        if option in ("-p", "--param"):
            name, separator, text = value.partition(":=")
            if not separator:
                raise LaunchError(f"train: expected -p NAME:=VALUE, got {value!r}")
            parsed = infer_type(text)
            if parsed != "":
                flags += train_flag(name, parsed, None)
        index += 2
    return [*flags, *plain]


def _split(argv: list[str]) -> tuple[list[str], list[str]]:
    if "--ros-args" not in argv:
        return argv, []
    at = argv.index("--ros-args")
    ros = argv[at + 1 :]
    if "--" in ros:
        ros = ros[: ros.index("--")]
    return argv[:at], ros
