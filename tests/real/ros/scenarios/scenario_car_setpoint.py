"""The RC car's command chain without an inverse conversion: a drive command message → sim_bridge → the ESC.

argv: LOG_DIR COMMAND_TYPE SPEED... . In this process: a real sim_bridge node (rclpy, the rc_car profile, task
rc_car/race on the oval track) and a probe node that publishes the profile's command message (AckermannDriveStamped
`drive.speed` or Twist `linear.x`, m/s, wheels straight) for each speed in turn, until the simulator has stepped
with it past the car's delays. Reported per speed: the speed sent, the simulated ESC's speed setpoint then
(`RCCarRace.speed_setpoint`), the drive action the bridge applied, and the car's forward speed over the next steps.
"""

from __future__ import annotations

import sys
from typing import Any

import rclpy
from harness import finish
from rclpy.executors import SingleThreadedExecutor

SETTLE_STEPS = 5
"""Simulator steps with one command before reading the setpoint: more than the car's delays (2 steps)."""
FOLLOW_STEPS = 10
"""Steps over which the car's forward speed is recorded after that."""


def _message(command_type: str, speed: float) -> Any:
    if command_type.endswith("AckermannDriveStamped"):
        from ackermann_msgs.msg import AckermannDriveStamped

        message = AckermannDriveStamped()
        message.drive.speed = speed
        return message
    from geometry_msgs.msg import Twist

    message = Twist()
    message.linear.x = speed
    return message


def main() -> None:
    command_type, speeds = sys.argv[2], [float(v) for v in sys.argv[3:]]
    params = ["profile:=rc_car", "task:=rc_car/race", "task_params:=[track=oval]", f"command_type:={command_type}"]
    rclpy.init(args=["--ros-args", *(arg for p in params for arg in ("-p", p))])
    from robo_rl.sim.ros_bridge import SimBridge

    bridge = SimBridge()
    probe = rclpy.create_node("probe")
    kind = type(_message(command_type, 0.0))
    publisher = probe.create_publisher(kind, bridge.command_spec.topic, 10)
    executor = SingleThreadedExecutor()
    executor.add_node(bridge)
    executor.add_node(probe)
    results: dict[str, Any] = {"topic": bridge.command_spec.topic, "cases": []}
    for speed in speeds:
        start = bridge.steps
        while bridge.steps < start + SETTLE_STEPS:
            publisher.publish(_message(command_type, speed))
            executor.spin_once(timeout_sec=0.005)
        env = bridge.env
        case = {"sent": speed, "setpoint": float(env.speed_setpoint[0]), "drive": float(bridge.action[1])}
        case["vx"] = []
        while len(case["vx"]) < FOLLOW_STEPS:
            before = bridge.steps
            publisher.publish(_message(command_type, speed))
            executor.spin_once(timeout_sec=0.005)
            if bridge.steps > before:
                case["vx"].append(float(env.state[0, 3]))
        results["cases"].append(case)
    results["crashes"] = bridge.crashes
    finish(results)


if __name__ == "__main__":
    main()
