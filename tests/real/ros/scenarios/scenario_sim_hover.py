"""The whole simulated graph from the launch file: `robo-rl launch launch/sim_quadrotor.launch.yaml`.

argv: LOG_DIR POLICY SECONDS. sim_bridge (quadrotor/hover) + policy_node (autostart) run as real processes; a probe
records the odometry and the nodes' diagnostics, then SIGINT stops the launch (which stops its nodes).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from harness import Processes, finish, spin_for, spin_until
from nav_msgs.msg import Odometry
from rclpy.qos import qos_profile_sensor_data
from std_msgs.msg import Float32MultiArray


def main() -> None:
    log_dir, policy, seconds = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3])
    processes = Processes(log_dir)
    arguments = ("launch/sim_quadrotor.launch.yaml", f"policy:={policy}", "teleop:=false")
    processes.start("launch", "robo-rl", "launch", *arguments)
    rclpy.init()
    probe = rclpy.create_node("probe")
    poses: list[tuple[float, float, float, float]] = []
    commands: list[float] = []
    diagnostics: dict[str, dict[str, str]] = {}

    def on_odom(message: Odometry) -> None:
        p = message.pose.pose.position
        poses.append((time.monotonic(), p.x, p.y, p.z))

    def on_diagnostics(message: DiagnosticArray) -> None:
        for status in message.status:
            diagnostics[status.name] = {kv.key: kv.value for kv in status.values} | {"message": status.message}

    probe.create_subscription(Odometry, "/cf1/odom", on_odom, qos_profile_sensor_data)
    probe.create_subscription(Float32MultiArray, "/cf1/cmd_motors", lambda _: commands.append(time.monotonic()), 100)
    probe.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 100)
    started = spin_until(probe, lambda: len(commands) > 0, 60.0)
    first_command = time.monotonic()
    spin_for(probe, seconds if started else 0.0)
    end = time.monotonic()
    flying = [p for p in poses if p[0] >= first_command]
    last = [p for p in flying if p[0] >= end - seconds / 2]
    errors = [(x * x + y * y + z * z) ** 0.5 for _, x, y, z in last]
    results = {
        "started": started,
        "odom_rate_hz": len(flying) / max(end - first_command, 1e-9),
        "command_rate_hz": len([c for c in commands if c >= first_command]) / max(end - first_command, 1e-9),
        "error_max_m": max(errors) if errors else None,
        "error_mean_m": sum(errors) / len(errors) if errors else None,
        "initial_error_m": (sum(v * v for v in flying[0][1:]) ** 0.5) if flying else None,
        "bridge": diagnostics.get("/cf1/sim_bridge"),
        "policy": diagnostics.get("/cf1/policy_node"),
    }
    probe.destroy_node()
    finish(results, processes, ["launch"])


if __name__ == "__main__":
    main()
