"""The whole simulated graph from the launch file: `robo-rl launch launch/sim_quadrotor.launch.yaml`.

argv: LOG_DIR POLICY STEPS. sim_bridge (quadrotor/hover, lockstep) + policy_node (autostart) run as real processes; a
probe records the odometry and the commands from the first command on, until STEPS odometry messages (simulated steps
of 0.01 s: in lockstep sim_bridge publishes one per step once commanded) have arrived, and the nodes' diagnostics;
then SIGINT stops the launch (which stops its nodes). Results are indexed by step, not by wall-clock time.

The launch file runs as a copy whose profile is the bundled one with a generous staleness timeout
(harness.generous_profile) and whose policy_node never latches the e-stop on missed deadlines: in lockstep the
simulated flight does not depend on the machine's speed, but policy_node's staleness timeout (50 ms) and deadlines
(one period) are wall-clock, and on a busy machine its safe command (motors off) would answer a lockstep tick. Those
timeouts are checked on stepped time (tests/real/test_node_core.py) and measured by bench/ros_timing.py.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from harness import Processes, finish, generous_profile, launch_copy, spin_until
from nav_msgs.msg import Odometry
from rclpy.qos import qos_profile_sensor_data
from std_msgs.msg import Float32MultiArray


def main() -> None:
    log_dir, policy, steps = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    processes = Processes(log_dir)
    profile = generous_profile(log_dir, "quadrotor_crazyflie")
    launch = launch_copy(log_dir, profile, {"max_missed_deadlines": 0})
    arguments = (str(launch), f"policy:={policy}", f"profile:={profile}", "teleop:=false")
    processes.start("launch", "robo-rl", "launch", *arguments)
    rclpy.init()
    probe = rclpy.create_node("probe")
    poses: list[tuple[float, float, float]] = []  # m, one per simulated step once commanded
    commands: list[tuple[float, bool]] = []  # (arrival, the safe command: motors off)
    diagnostics: dict[str, dict[str, str]] = {}

    def on_odom(message: Odometry) -> None:
        if commands:
            p = message.pose.pose.position
            poses.append((p.x, p.y, p.z))

    def on_command(message: Float32MultiArray) -> None:
        commands.append((time.monotonic(), all(v == 0.0 for v in message.data)))

    def on_diagnostics(message: DiagnosticArray) -> None:
        for status in message.status:
            diagnostics[status.name] = {kv.key: kv.value for kv in status.values} | {"message": status.message}

    probe.create_subscription(Odometry, "/cf1/odom", on_odom, qos_profile_sensor_data)
    probe.create_subscription(Float32MultiArray, "/cf1/cmd_motors", on_command, 100)
    probe.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 100)
    started = spin_until(probe, lambda: len(commands) > 0, 60.0)
    flown = spin_until(probe, lambda: len(poses) >= steps, 240.0) if started else False
    diagnostics.clear()  # the nodes' state after the flight
    spin_until(probe, lambda: "/cf1/sim_bridge" in diagnostics and "/cf1/policy_node" in diagnostics, 10.0)
    errors = [(x * x + y * y + z * z) ** 0.5 for x, y, z in poses[len(poses) // 2 :]]
    first_policy = next((i for i, (_, safe) in enumerate(commands) if not safe), len(commands))
    flight = commands[first_policy:]
    seconds = flight[-1][0] - flight[0][0] if len(flight) > 1 else 0.0
    results = {
        "started": started,
        "flown": flown,
        "odometry": len(poses),
        "commands": len(flight),
        "safe_after_first_policy": sum(safe for _, safe in flight),
        "command_rate_hz": (len(flight) - 1) / seconds if seconds > 0 else 0.0,  # measured, not asserted
        "error_max_m": max(errors) if errors else None,
        "error_mean_m": sum(errors) / len(errors) if errors else None,
        "initial_error_m": (sum(v * v for v in poses[0]) ** 0.5) if poses else None,
        "bridge": diagnostics.get("/cf1/sim_bridge"),
        "policy": diagnostics.get("/cf1/policy_node"),
    }
    probe.destroy_node()
    finish(results, processes, ["launch"])


if __name__ == "__main__":
    main()
