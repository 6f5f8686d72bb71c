"""Load generator of bench/ros_latency.py: run by .venv-ros's Python inside a loopback-only network namespace.

argv: POLICY RATE_HZ SECONDS LOG. Starts policy_node (quadrotor_crazyflie profile, observation trigger, deadline
one period) as a process, publishes nav_msgs/Odometry at RATE_HZ on a fixed grid with the send time as header
stamp, and receives the commands (std_msgs/Float32MultiArray). The commands are received by an executor spinning in
a thread of its own (the nodes' executor: rclpy's EventsExecutor where available), so that a command is
timestamped when it arrives, not when the publishing loop next gets round to it. A command carries no sequence
number, so each one is paired with the latest odometry sent before it arrived: exact for latencies below one
period, an understatement beyond (a late command is paired with a newer message). Late commands are therefore
counted by the node itself (`node_missed_deadlines`: its header stamp → publish latency above one period). Prints
one JSON line: end-to-end odometry-send → command-receive latencies, the node's own diagnostics (its stamp →
publish latency and missed deadlines), its CPU time per command, and counts.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from nav_msgs.msg import Odometry
from rclpy.qos import qos_profile_sensor_data
from std_msgs.msg import Float32MultiArray

from robo_rl.real.ros.executor import make_executor

NODE = "/bench/policy_node"
WARMUP_S = 2.0
PAUSE_S = 0.02
"""Between warm-up and measurement: shorter than any profile's staleness timeout, so no safe command follows."""
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Record:
    """What the probe saw: odometry send times, command arrivals and the node's latest diagnostics."""

    sent: list[int] = field(default_factory=list)
    """Monotonic ns of each odometry publish."""
    received: list[tuple[int, int]] = field(default_factory=list)
    """(monotonic ns, number of odometry messages sent before it) of each command."""
    diagnostics: dict[str, str] = field(default_factory=dict)

    def on_command(self, _message: Float32MultiArray) -> None:
        self.received.append((time.monotonic_ns(), len(self.sent)))

    def on_diagnostics(self, message: DiagnosticArray) -> None:
        for status in message.status:
            if status.name == NODE:
                self.diagnostics.update({kv.key: kv.value for kv in status.values})

    def clear(self) -> None:
        self.sent.clear()
        self.received.clear()


def main() -> None:
    policy, rate, seconds, log = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), Path(sys.argv[4])
    period = 1.0 / rate
    node_process = _start_node(policy, period, log)
    rclpy.init()
    probe = rclpy.create_node("load")
    record = Record()
    probe.create_subscription(Float32MultiArray, "/bench/cmd_motors", record.on_command, 1000)
    probe.create_subscription(DiagnosticArray, "/diagnostics", record.on_diagnostics, 100)
    publisher = probe.create_publisher(Odometry, "/bench/odom", qos_profile_sensor_data)
    stop = threading.Event()
    spinner = threading.Thread(target=_spin, args=(probe, stop), daemon=True)
    spinner.start()
    message = Odometry()
    message.pose.pose.orientation.w = 1.0
    _wait_for_answer(probe, publisher, message, record)
    _drive(probe, publisher, message, period, WARMUP_S, record.sent)
    time.sleep(PAUSE_S)  # the warm-up's last commands arrive before the window starts
    record.clear()
    start_diagnostics, start_cpu = dict(record.diagnostics), _cpu_seconds(node_process.pid)
    _drive(probe, publisher, message, period, seconds, record.sent)
    node_cpu = _cpu_seconds(node_process.pid) - start_cpu
    # Commands after the stream stops are the watchdog's safe ones (from the staleness timeout on): not counted.
    stream_end = time.monotonic_ns() + int(period * 1e9)
    time.sleep(1.5)  # the last diagnostics
    node_process.send_signal(signal.SIGINT)
    node_process.wait(10)
    stop.set()
    spinner.join()
    # Commands of the window: after its first odometry, before the stream's end.
    answered = [r for r in record.received if r[1] > 0 and r[0] <= stream_end]
    summary = _summary(rate, seconds, record.sent, answered, start_diagnostics, record.diagnostics)
    summary["node_cpu_us_per_command"] = node_cpu / max(len(answered), 1) * 1e6
    print(json.dumps(summary))


def _start_node(policy: str, period: float, log: Path) -> subprocess.Popen:
    params = [f"policy:={policy}", "profile:=quadrotor_crazyflie", "autostart:=true", f"deadline:={period}"]
    params += ["max_missed_deadlines:=0", "diagnostics_period:=0.5"]
    argv = [str(Path(sys.executable).parent / "policy_node"), "--ros-args", "-r", "__node:=policy_node"]
    argv += ["-r", "__ns:=/bench", *[item for p in params for item in ("-p", p)]]
    return subprocess.Popen(argv, stdout=log.open("w"), stderr=subprocess.STDOUT)


def _spin(probe: Any, stop: threading.Event) -> None:
    executor = make_executor()
    executor.add_node(probe)
    while not stop.is_set():
        executor.spin_once(timeout_sec=0.05)


def _wait_for_answer(probe: Any, publisher: Any, message: Odometry, record: Record) -> None:
    """Publish every 50 ms until the node is active and answers (30 s at most)."""
    deadline = time.monotonic() + 30.0
    while not record.received and time.monotonic() < deadline:
        _publish(probe, publisher, message, record.sent)
        time.sleep(0.05)


def _drive(probe: Any, publisher: Any, message: Odometry, period: float, seconds: float, sent: list[int]) -> None:
    """Publish on the grid start + k × period, sleeping in between (the receiving thread runs meanwhile)."""
    start = time.monotonic()
    for k in range(round(seconds / period)):
        delay = start + k * period - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        _publish(probe, publisher, message, sent)


def _publish(probe: Any, publisher: Any, message: Odometry, sent: list[int]) -> None:
    message.header.stamp = probe.get_clock().now().to_msg()
    sent.append(time.monotonic_ns())  # before publishing: the command may arrive before publish() returns
    publisher.publish(message)


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def _summary(
    rate: float, seconds: float, sent: list[int], received: list[tuple[int, int]], start: dict, end: dict
) -> dict[str, Any]:
    latencies = np.array([(t - sent[n - 1]) * 1e-9 for t, n in received])
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
