"""policy_node with a chunked policy: a 100 Hz timer loop sends the steps of the chunks made from 25 Hz odometry
(receding horizon), then the safe command once odometry stops.

argv: LOG_DIR POLICY (test_chunks.py's quadrotor_crazyflie policy of 6 steps, every rotor at -0.5 + 0.1 i).
Odometry until FED_COMMANDS commands have arrived, then none until SAFE_COMMANDS safe commands and a stale warning
have: counted, not timed, with the profile's staleness timeout made generous (harness.generous_profile), so that a
busy machine only takes longer. Which step is due when (and a chunk spent by a late observation) is checked on stepped
time in tests/real/test_chunks.py.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from harness import Processes, finish, generous_profile, ros_args, spin_publishing_until, spin_until
from nav_msgs.msg import Odometry
from rclpy.qos import qos_profile_sensor_data
from std_msgs.msg import Float32MultiArray

FED_COMMANDS = 150
SAFE_COMMANDS = 30
SETTLE_S = 60.0
"""Bound on waiting for an effect: reached only when it never comes (the check then fails)."""


def main() -> None:
    log_dir, policy = Path(sys.argv[1]), sys.argv[2]
    processes = Processes(log_dir)
    params = {
        "policy": policy,
        "profile": generous_profile(log_dir, "quadrotor_crazyflie"),
        "autostart": True,
        "trigger": "timer",
        "chunk_execution": "receding",
        "chunk_execute": 4,
        "diagnostics_period": 0.2,
    }
    processes.start("policy_node", "policy_node", *ros_args("policy_node", "/cf1", **params))
    rclpy.init()
    probe = rclpy.create_node("probe")
    commands: list[tuple[float, list[float]]] = []
    statuses: list[tuple[float, int, str, dict[str, str]]] = []
    probe.create_subscription(
        Float32MultiArray, "/cf1/cmd_motors", lambda m: commands.append((time.monotonic(), list(m.data))), 100
    )

    def on_diagnostics(m: DiagnosticArray) -> None:
        statuses.extend(
            (time.monotonic(), s.level[0], s.message, {kv.key: kv.value for kv in s.values})
            for s in m.status
            if "policy_node" in s.name
        )

    probe.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 100)
    odom_pub = probe.create_publisher(Odometry, "/cf1/odom", qos_profile_sensor_data)

    def publish() -> None:
        message = Odometry()
        message.header.stamp = probe.get_clock().now().to_msg()
        message.pose.pose.orientation.w = 1.0
        odom_pub.publish(message)

    ready = spin_until(probe, lambda: odom_pub.get_subscription_count() > 0 and len(commands) > 0, 30.0)
    start = time.monotonic()
    mark = len(commands)
    spin_publishing_until(probe, lambda: len(commands) >= mark + FED_COMMANDS, SETTLE_S, publish, 0.04)
    stop = time.monotonic()
    spin_until(probe, lambda: any(s[0] > stop and "stale observation" in s[2] for s in statuses), SETTLE_S)
    after = len(commands)
    spin_until(probe, lambda: len(commands) >= after + SAFE_COMMANDS + 5, SETTLE_S)
    results = {"ready": ready, "start": start, "stop": stop, "commands": commands, "statuses": statuses}
    probe.destroy_node()
    finish(results, processes, ["policy_node"])


if __name__ == "__main__":
    main()
