"""RosTeleop (the HIL training device) fed by a real teleop_node: joystick → operator action while held.

argv: LOG_DIR. teleop_node runs as a process in /cf1 (quadrotor_crazyflie profile); a probe publishes Joy at
50 Hz: dead-man held, then released, then the e-stop button, each until its effect shows (however slow the
machine). The device is polled like a training loop does.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import rclpy
import torch
from harness import Processes, finish, ros_args, spin_until
from sensor_msgs.msg import Joy

from robo_rl.hil.ros_teleop import RosTeleop

AXES = [0.5, -0.5, 0.25, 2.0]
SETTLE_S = 60.0
STEADY = 25


def main() -> None:
    log_dir = Path(sys.argv[1])
    processes = Processes(log_dir)
    processes.start("teleop_node", "teleop_node", *ros_args("teleop_node", "/cf1", profile="quadrotor_crazyflie"))
    rclpy.init()
    device = RosTeleop(num_envs=2, action_dim=4, namespace="/cf1")
    probe = rclpy.create_node("probe")
    joy = probe.create_publisher(Joy, "/cf1/joy", 10)
    spin_until(probe, lambda: joy.get_subscription_count() > 0, 30.0)
    polls: list[tuple[list[bool], list[float], list[str]]] = []

    def phase(buttons: list[int], done: Callable[[], bool]) -> bool:
        """Publish Joy with `buttons` at 50 Hz, polling the device as a training loop does, until `done()` holds
        (however long the machine takes to pass the messages on, up to SETTLE_S); whether it did."""
        deadline = time.monotonic() + SETTLE_S
        while time.monotonic() < deadline:
            joy.publish(Joy(axes=AXES, buttons=buttons))
            rclpy.spin_once(probe, timeout_sec=0.0)
            command = device.poll(torch.zeros(2, 22))
            polls.append((command.active.tolist(), command.action[0].tolist(), sorted(command.buttons)))
            if done():
                return True
            time.sleep(0.02)
        return False

    def last(count: int, check: Callable[[tuple], bool]) -> Callable[[], bool]:
        return lambda: len(polls) >= count and all(check(p) for p in polls[-count:])

    # Each phase lasts until its effect shows on STEADY polls in a row; the e-stop button stays pressed STEADY
    # polls past its first report, which must stay the only one.
    held = phase([0, 1], last(STEADY, lambda p: p[0] == [True, False]))
    held_action = polls[-1][1]
    released = phase([0, 0], last(STEADY, lambda p: not p[0][0]))
    reported = phase([1, 0], lambda: any("estop" in p[2] for p in polls))
    mark = len(polls)
    phase([1, 0], lambda: len(polls) >= mark + STEADY)
    device.close()
    probe.destroy_node()
    results = {
        "held_active": held,
        "held_action": held_action,
        "released_active": not released,
        "estop_reported": reported,
        "estop_presses": sum("estop" in p[2] for p in polls),
    }
    finish(results, processes, ["teleop_node"])


if __name__ == "__main__":
    main()
