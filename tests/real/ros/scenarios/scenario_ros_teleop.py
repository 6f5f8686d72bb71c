"""RosTeleop (the HIL training device) fed by a real teleop_node: joystick → operator action while held.

argv: LOG_DIR. teleop_node runs as a process in /cf1 (quadrotor_crazyflie profile); a probe publishes Joy at
50 Hz: dead-man held, then released, then the e-stop button. The device is polled like a training loop does.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import rclpy
import torch
from harness import Processes, finish, ros_args, spin_until
from sensor_msgs.msg import Joy

from robo_rl.hil.ros_teleop import RosTeleop

AXES = [0.5, -0.5, 0.25, 2.0]


def main() -> None:
    log_dir = Path(sys.argv[1])
    processes = Processes(log_dir)
    processes.start("teleop_node", "teleop_node", *ros_args("teleop_node", "/cf1", profile="quadrotor_crazyflie"))
    rclpy.init()
    device = RosTeleop(num_envs=2, action_dim=4, namespace="/cf1")
    probe = rclpy.create_node("probe")
    joy = probe.create_publisher(Joy, "/cf1/joy", 10)
    spin_until(probe, lambda: joy.get_subscription_count() > 0, 30.0)
    phases = {}
    for name, buttons in (("held", [0, 1]), ("released", [0, 0]), ("estop", [1, 0])):
        polls = []
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            joy.publish(Joy(axes=AXES, buttons=buttons))
            rclpy.spin_once(probe, timeout_sec=0.0)
            command = device.poll(torch.zeros(2, 22))
            polls.append((command.active.tolist(), command.action[0].tolist(), sorted(command.buttons)))
            time.sleep(0.02)
        phases[name] = polls
    device.close()
    probe.destroy_node()
    settled = {name: polls[len(polls) // 2 :] for name, polls in phases.items()}  # the second half of each phase
    results = {
        "held_active": all(p[0] == [True, False] for p in settled["held"]),
        "held_action": settled["held"][-1][1],
        "released_active": any(p[0][0] for p in settled["released"]),
        "estop_presses": sum("estop" in p[2] for name in phases for p in phases[name]),
    }
    finish(results, processes, ["teleop_node"])


if __name__ == "__main__":
    main()
