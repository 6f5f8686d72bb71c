"""`robo-rl train --teleop ros` end to end: a joystick (through a real teleop_node) takes over training envs.

argv: LOG_DIR RUNS_ROOT. teleop_node runs in /cf1; `robo-rl train quadrotor_hover_sac --teleop ros` runs from
.venv-ros as a process; a probe holds the dead-man button (Joy at 50 Hz) until the training ends.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import rclpy
from harness import Processes, finish, ros_args, spin_until
from sensor_msgs.msg import Joy


def main() -> None:
    log_dir, runs = Path(sys.argv[1]), sys.argv[2]
    processes = Processes(log_dir)
    processes.start("teleop_node", "teleop_node", *ros_args("teleop_node", "/cf1", profile="quadrotor_crazyflie"))
    rclpy.init()
    probe = rclpy.create_node("probe")
    joy = probe.create_publisher(Joy, "/cf1/joy", 10)
    spin_until(probe, lambda: joy.get_subscription_count() > 0, 30.0)
    train = ["train", "quadrotor_hover_sac", "--teleop", "ros", "--set", "hil.ros_namespace=/cf1", "--num-envs", "4"]
    train += ["--max-iterations", "400", "--set", "off_policy.learning_starts=100", "--runs-root", runs, "--quiet"]
    trainer = processes.start("train", "robo-rl", *train)
    deadline = time.monotonic() + 240.0
    while trainer.poll() is None and time.monotonic() < deadline:
        joy.publish(Joy(axes=[0.2, 0.2, 0.2, 0.2], buttons=[0, 1]))
        rclpy.spin_once(probe, timeout_sec=0.0)
        time.sleep(0.02)
    probe.destroy_node()
    finish({"train_exit": trainer.wait(10)}, processes, ["train", "teleop_node"])


if __name__ == "__main__":
    main()
