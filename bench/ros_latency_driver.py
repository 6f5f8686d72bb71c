"""Load generator of bench/ros_latency.py: run by .venv-ros's Python inside a loopback-only network namespace.

argv: POLICY RATE_HZ SECONDS LOG. Starts policy_node (quadrotor_crazyflie profile, observation trigger, deadline
one period) as a process, publishes nav_msgs/Odometry at RATE_HZ on a fixed grid with the send time as header
stamp, and receives the commands (std_msgs/Float32MultiArray). A command carries no sequence number, so each one is
paired with the latest odometry sent before it arrived: exact for latencies below one period, an understatement
beyond (a late command is paired with a newer message). Late commands are therefore counted by the node itself
(`node_missed_deadlines`: its header stamp → publish latency above one period). Prints one JSON line:
end-to-end odometry-send → command-receive latencies, the node's own diagnostics (its stamp → publish latency and
missed deadlines) and counts.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from nav_msgs.msg import Odometry
from rclpy.qos import qos_profile_sensor_data
from std_msgs.msg import Float32MultiArray

NODE = "/bench/policy_node"
WARMUP_S = 2.0


def main() -> None:
    policy, rate, seconds, log = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), Path(sys.argv[4])
    period = 1.0 / rate
    params = [f"policy:={policy}", "profile:=quadrotor_crazyflie", "autostart:=true", f"deadline:={period}"]
    params += ["max_missed_deadlines:=0", "diagnostics_period:=0.5"]
    argv = [str(Path(sys.executable).parent / "policy_node"), "--ros-args", "-r", "__node:=policy_node"]
    argv += ["-r", "__ns:=/bench", *[item for p in params for item in ("-p", p)]]
    node_process = subprocess.Popen(argv, stdout=log.open("w"), stderr=subprocess.STDOUT)
    rclpy.init()
    probe = rclpy.create_node("load")
    sent: list[int] = []  # monotonic ns of each odometry publish
    received: list[tuple[int, int]] = []  # (monotonic ns, number of odometry messages sent before it)
    diagnostics: dict[str, str] = {}

    def on_command(_message: Float32MultiArray) -> None:
        received.append((time.monotonic_ns(), len(sent)))

    def on_diagnostics(message: DiagnosticArray) -> None:
        for status in message.status:
            if status.name == NODE:
                diagnostics.update({kv.key: kv.value for kv in status.values})

    probe.create_subscription(Float32MultiArray, "/bench/cmd_motors", on_command, 1000)
    probe.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 100)
    publisher = probe.create_publisher(Odometry, "/bench/odom", qos_profile_sensor_data)
    message = Odometry()
    message.pose.pose.orientation.w = 1.0
    deadline = time.monotonic() + 30.0
    while not received and time.monotonic() < deadline:  # until the node is active and answers
        publisher.publish(message)
        rclpy.spin_once(probe, timeout_sec=0.05)
    _drive(probe, publisher, message, period, WARMUP_S, sent)
    sent.clear()
    received.clear()
    start_diagnostics = dict(diagnostics)
    _drive(probe, publisher, message, period, seconds, sent)
    # Commands after the stream stops are the watchdog's safe ones (from the staleness timeout on): not counted.
    stream_end = time.monotonic_ns() + int(period * 1e9)
    end = time.monotonic() + 1.5
    while time.monotonic() < end:  # the last diagnostics
        rclpy.spin_once(probe, timeout_sec=0.05)
    node_process.send_signal(signal.SIGINT)
    node_process.wait(10)
    answered = [r for r in received if r[0] <= stream_end]
    print(json.dumps(_summary(rate, seconds, sent, answered, start_diagnostics, diagnostics)))


def _drive(probe: Any, publisher: Any, message: Odometry, period: float, seconds: float, sent: list[int]) -> None:
    """Publish on the grid start + k × period; between publishes, spin (callbacks) and spin-wait the last 0.3 ms."""
    start = time.monotonic()
    k = 0
    while (now := time.monotonic()) < start + seconds:
        due = start + k * period
        if now >= due:
            stamp = probe.get_clock().now().to_msg()
            message.header.stamp = stamp
            publisher.publish(message)
            sent.append(time.monotonic_ns())
            k += 1
            continue
        if due - now > 0.0005:
            rclpy.spin_once(probe, timeout_sec=due - now - 0.0003)


def _summary(
    rate: float, seconds: float, sent: list[int], received: list[tuple[int, int]], start: dict, end: dict
) -> dict[str, Any]:
    latencies = np.array([(t - sent[n - 1]) * 1e-9 for t, n in received if n > 0])
    node_missed = int(end.get("missed_deadlines", 0)) - int(start.get("missed_deadlines", 0))

    def ms(q: float) -> float | None:
        return float(np.percentile(latencies, q) * 1e3) if latencies.size else None

    return {
        "rate_hz": rate,
        "seconds": seconds,
        "sent": len(sent),
        "commands": len(received),
        "lost": len(sent) - len(received),
        "e2e_p50_ms": ms(50),
        "e2e_p99_ms": ms(99),
        "e2e_max_ms": float(latencies.max() * 1e3) if latencies.size else None,
        "e2e_over_period": int((latencies > 1.0 / rate).sum()),
        "node_missed_deadlines": node_missed,
        "node_stamp_latency_p50_ms": float(end.get("stamp_latency_p50_ms", "nan")),
        "node_stamp_latency_p99_ms": float(end.get("stamp_latency_p99_ms", "nan")),
        "node_compute_latency_p50_ms": float(end.get("compute_latency_p50_ms", "nan")),
        "node_compute_latency_p99_ms": float(end.get("compute_latency_p99_ms", "nan")),
        "send_jitter_p99_ms": float(np.percentile(np.abs(np.diff(sent) * 1e-9 - 1.0 / rate), 99) * 1e3),
    }


if __name__ == "__main__":
    main()
