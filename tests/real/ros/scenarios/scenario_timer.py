"""policy_node with `trigger: timer`: a fixed-rate loop on the latest observation, whatever the input rate.

argv: LOG_DIR POLICY (a quadrotor_crazyflie policy.onnx). A few odometry messages at 50 Hz, then none: the loop
keeps commanding from the latest one (the policy's action) until it goes stale, then sends the safe command. The
node runs the profile with a generous staleness timeout (harness.generous_profile), so that the counts do not depend
on the machine's speed; the wall-clock rates are measured for bench/ros_timing.py, not asserted. Commands every tick
at the profile's rate: tests/real/test_node_core.py, on stepped time.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import rclpy
from harness import Processes, finish, generous_profile, ros_args, spin_for, spin_until
from nav_msgs.msg import Odometry
from rclpy.qos import qos_profile_sensor_data
from std_msgs.msg import Float32MultiArray

FED_MESSAGES = 10
"""Odometry messages sent, at 50 Hz."""
FOLLOWING = 30
"""Safe commands recorded once the odometry went stale."""
SETTLE_S = 30.0
"""Bound on waiting for an effect: reached only when it never comes (the check then fails)."""


def _safe(command: tuple[float, list[float]]) -> bool:
    return all(v == 0.0 for v in command[1])


def _rate_hz(commands: list[tuple[float, list[float]]]) -> float:
    """Wall-clock rate of `commands` (a measurement for the benchmark, never asserted)."""
    return (len(commands) - 1) / (commands[-1][0] - commands[0][0]) if len(commands) > 1 else 0.0


def main() -> None:
    log_dir, policy = Path(sys.argv[1]), sys.argv[2]
    processes = Processes(log_dir)
    profile = generous_profile(log_dir, "quadrotor_crazyflie")
    params = {"policy": policy, "profile": profile, "autostart": True, "trigger": "timer"}
    processes.start("policy_node", "policy_node", *ros_args("policy_node", "/cf1", **params))
    rclpy.init()
    probe = rclpy.create_node("probe")
    commands: list[tuple[float, list[float]]] = []
    probe.create_subscription(
        Float32MultiArray, "/cf1/cmd_motors", lambda m: commands.append((time.monotonic(), list(m.data))), 100
    )
    odom_pub = probe.create_publisher(Odometry, "/cf1/odom", qos_profile_sensor_data)

    def publish() -> None:
        message = Odometry()
        message.header.stamp = probe.get_clock().now().to_msg()
        message.pose.pose.orientation.w = 1.0
        odom_pub.publish(message)

    spin_until(probe, lambda: odom_pub.get_subscription_count() > 0 and len(commands) > 0, SETTLE_S)
    mark = len(commands)
    spin_for(probe, FED_MESSAGES * 0.02, publish, 0.02)
    # The loop's commands from the policy, from the first to the first safe one after it (the odometry gone stale).
    spin_until(probe, lambda: any(not _safe(c) for c in commands[mark:]), SETTLE_S)
    first = next((i for i in range(mark, len(commands)) if not _safe(commands[i])), len(commands))
    spin_until(probe, lambda: any(_safe(c) for c in commands[first:]), SETTLE_S)
    stale_from = next((i for i in range(first, len(commands)) if _safe(commands[i])), len(commands))
    spin_until(probe, lambda: len(commands) >= stale_from + FOLLOWING, SETTLE_S)
    fed, stale = commands[first:stale_from], commands[stale_from:]
    results = {
        "fed_messages": FED_MESSAGES,
        "fed_count": len(fed),
        "fed_rate_hz": _rate_hz(fed),
        "stale_count": len(stale),
        "stale_rate_hz": _rate_hz(stale),
        "stale_all_safe": bool(stale) and all(_safe(c) for c in stale),
    }
    probe.destroy_node()
    finish(results, processes, ["policy_node"])


if __name__ == "__main__":
    main()
