"""`ros2 run robo_rl train --ros-args -p preset:=NAME ...`: training as a node of a `ros2 launch` file (the colcon
package's `lib/robo_rl/train`); the ROS arguments (`-p`, launch_ros's `--params-file`s, `-r __node:=`) become
`robo-rl train` flags (`robo_rl.launch.train_node`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from robo_rl.cli.main import main as cli
from robo_rl.launch.errors import LaunchError
from robo_rl.launch.train_node import train_argv

STOPPED_CODE = 0
"""Exit status after a launcher's SIGINT or SIGTERM stopped training with its checkpoint and export saved: 0, as the
other nodes (robo_rl.real.ros.spin), so that ros2 launch reports "finished cleanly" (`robo-rl train`: 130)."""


def main(argv: Sequence[str] | None = None) -> int:
    try:
        arguments = train_argv(sys.argv[1:] if argv is None else argv)
    except LaunchError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if argv is None:
        # The ROS arguments were this entry's. The trainer's rclpy.init() reads sys.argv, where `-r __node:=NAME`
        # would rename every node of the process (robot_env, ...) as it does not under `robo-rl launch`.
        sys.argv = [sys.argv[0], *arguments]
        return cli(stopped_code=STOPPED_CODE)  # as the program: it ends the process at once when stopped by a signal
    return cli(arguments, stopped_code=STOPPED_CODE)
