"""teleop_node → policy_node: the dead-man button hands the robot to the joystick; the e-stop button latches.

argv: LOG_DIR POLICY (a quadrotor_crazyflie policy.onnx). Odometry at 100 Hz and Joy at 50 Hz from a probe.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import rclpy
from harness import Processes, finish, ros_args, spin_for, spin_until
from nav_msgs.msg import Odometry
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import Joy
from std_msgs.msg import Bool, Float32MultiArray, String

AXES = [0.5, -0.5, 0.25, 2.0]


def main() -> None:
    log_dir, policy = Path(sys.argv[1]), sys.argv[2]
    processes = Processes(log_dir)
    profile = "quadrotor_crazyflie"
    processes.start(
        "policy_node", "policy_node", *ros_args("policy_node", "/cf1", policy=policy, profile=profile, autostart=True)
    )
    processes.start("teleop_node", "teleop_node", *ros_args("teleop_node", "/cf1", profile=profile))
    rclpy.init()
    probe = rclpy.create_node("probe")
    commands: list[tuple[float, list[float]]] = []
    intervening: list[bool] = []
    probe.create_subscription(
        Float32MultiArray, "/cf1/cmd_motors", lambda m: commands.append((time.monotonic(), list(m.data))), 100
    )
    probe.create_subscription(Bool, "/cf1/intervening", lambda m: intervening.append(bool(m.data)), 100)
    events: list[str] = []
    probe.create_subscription(String, "/cf1/episode_event", lambda m: events.append(str(m.data)), 100)
    odom_pub = probe.create_publisher(Odometry, "/cf1/odom", qos_profile_sensor_data)
    joy_pub = probe.create_publisher(Joy, "/cf1/joy", 10)
    buttons = [0, 0, 0, 0]  # estop, takeover, success, reset (teleop_node's defaults)
    tick = [0]

    def publish() -> None:
        odom = Odometry()
        odom.header.stamp = probe.get_clock().now().to_msg()
        odom.pose.pose.orientation.w = 1.0
        odom_pub.publish(odom)
        tick[0] += 1
        if tick[0] % 2 == 0:
            joy_pub.publish(Joy(axes=AXES, buttons=list(buttons)))

    spin_until(probe, lambda: joy_pub.get_subscription_count() > 0 and len(commands) > 0, 30.0)
    phases = {}
    steps = [("policy", [0, 0, 0, 0]), ("takeover", [0, 1, 0, 0]), ("released", [0, 0, 0, 0])]
    steps += [("success", [0, 0, 1, 0]), ("reset", [0, 0, 0, 1]), ("estop", [1, 0, 0, 0])]
    for name, pressed in steps:
        buttons[:] = pressed
        mark = time.monotonic()
        spin_for(probe, 0.6, publish, 0.01)
        phases[name] = [c[1] for c in commands if c[0] > mark + 0.15]
    expected = [32767.5 + 32767.5 * min(max(a, -1.0), 1.0) for a in AXES]
    matches = {name: sum(_close(c, expected) for c in found) for name, found in phases.items()}
    results = {
        "counts": {name: len(found) for name, found in phases.items()},
        "operator_commands": matches,
        "estop_all_safe": all(all(v == 0.0 for v in c) for c in phases["estop"]),
        "intervening_seen": True in intervening,
        "intervening_last": intervening[-1] if intervening else None,
        "episode_events": events,
    }
    probe.destroy_node()
    finish(results, processes, ["policy_node", "teleop_node"])


def _close(command: list[float], expected: list[float]) -> bool:
    return all(abs(a - b) < 0.01 for a, b in zip(command, expected, strict=True))


if __name__ == "__main__":
    main()
