"""The simulated graph with the PX4 profile: `robo-rl launch launch/sim_quadrotor.launch.yaml profile:=quadrotor_px4`.

argv: LOG_DIR POLICY STEPS. sim_bridge stands in for PX4 SITL (VehicleOdometry on fmu/out, the rates setpoint on
fmu/in, task made with the profile's action_mode=ctbr, lockstep) and policy_node flies a ctbr policy through the
profile once asked (the profile's vehicle holds until a "policy" request on vehicle_request; the policy's command
then ramps in over 1 s). The probe asks, every 0.2 s until the first setpoint, once policy_node reports PX4 in
offboard (sim_bridge's VehicleStatus): the take-over then begins at once from the simulator's initial state, with no
hold stream before it, whose length in simulated steps would depend on the machine's speed. It records the odometry,
the rates setpoints and the offboard heartbeats from the policy's first setpoint on, until STEPS odometry messages
(simulated steps of 0.01 s: in lockstep sim_bridge publishes one per step once commanded) have arrived, then SIGINT
stops the launch. Results are indexed by step, not by wall-clock time.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from harness import Processes, finish, generous_profile, launch_copy, spin_until
from px4_msgs.msg import OffboardControlMode, VehicleOdometry, VehicleRatesSetpoint
from rclpy.qos import qos_profile_sensor_data
from std_msgs.msg import String

from robo_rl.real.px4 import NAVIGATION_STATE_OFFBOARD


def main() -> None:
    log_dir, policy, steps = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    processes = Processes(log_dir)
    # The bundled profile with a generous staleness timeout (harness.generous_profile): in lockstep a stall longer
    # than the profile's 50 ms on a busy machine (load 6) gave the fault hold, after which policy_node sends PX4
    # nothing and the lockstep bridge waits for ever. The timeout's logic runs on stepped time in test_node_core.py.
    profile = generous_profile(log_dir, "quadrotor_px4")
    launch = launch_copy(log_dir, profile, {})
    arguments = (str(launch), f"policy:={policy}", f"profile:={profile}", "teleop:=false")
    processes.start("launch", "robo-rl", "launch", *arguments)
    rclpy.init()
    probe = rclpy.create_node("probe")
    positions: list[tuple[float, float, float]] = []  # NED, m, one per simulated step once commanded
    q_norms: list[float] = []
    frames: set[tuple[int, int]] = set()
    stamp_lags_us: list[int] = []  # the probe's clock minus the message's timestamp
    samples_are_stamps: list[bool] = []
    setpoints: list[tuple[float, float, float, float]] = []
    flying: list[bool] = []
    """Set at the policy's first setpoint."""
    held_setpoints: list[bool] = []  # hold setpoints (zero rates) before the policy's first: none when PX4 is offboard
    heartbeats: list[bool] = []
    diagnostics: dict[str, dict[str, str]] = {}

    def on_odometry(m: VehicleOdometry) -> None:
        if not flying:
            return
        positions.append((float(m.position[0]), float(m.position[1]), float(m.position[2])))
        q_norms.append(math.sqrt(sum(float(v) ** 2 for v in m.q)))
        frames.add((int(m.pose_frame), int(m.velocity_frame)))
        stamp_lags_us.append(probe.get_clock().now().nanoseconds // 1000 - int(m.timestamp))
        samples_are_stamps.append(int(m.timestamp_sample) == int(m.timestamp))

    def on_setpoint(m: VehicleRatesSetpoint) -> None:
        setpoint = (float(m.roll), float(m.pitch), float(m.yaw), float(m.thrust_body[2]))
        if flying or setpoint[:3] != (0.0, 0.0, 0.0):  # the policy's: the take-over's hold stream has zero rates
            setpoints.append(setpoint)
            flying.append(True)
        else:
            held_setpoints.append(True)

    def on_diagnostics(message: DiagnosticArray) -> None:
        for status in message.status:
            diagnostics[status.name] = {kv.key: kv.value for kv in status.values} | {"message": status.message}

    probe.create_subscription(VehicleOdometry, "/cf1/fmu/out/vehicle_odometry", on_odometry, qos_profile_sensor_data)
    probe.create_subscription(VehicleRatesSetpoint, "/cf1/fmu/in/vehicle_rates_setpoint", on_setpoint, 100)
    offboard = "/cf1/fmu/in/offboard_control_mode"
    probe.create_subscription(OffboardControlMode, offboard, lambda m: heartbeats.append(bool(m.body_rate)), 100)
    probe.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 100)
    request = probe.create_publisher(String, "/cf1/vehicle_request", 10)

    def offboard() -> bool:
        return diagnostics.get("/cf1/policy_node", {}).get("px4_nav_state") == str(NAVIGATION_STATE_OFFBOARD)

    in_offboard = spin_until(probe, offboard, 60.0)
    asking = probe.create_timer(0.2, lambda: None if setpoints else request.publish(String(data="policy")))
    started = in_offboard and spin_until(probe, lambda: len(setpoints) > 0, 60.0)
    probe.destroy_timer(asking)
    flown = spin_until(probe, lambda: len(positions) >= steps, 120.0) if started else False
    spin_until(probe, lambda: "/cf1/sim_bridge" in diagnostics and "/cf1/policy_node" in diagnostics, 5.0)
    errors = [math.sqrt(x * x + y * y + z * z) for x, y, z in positions[len(positions) // 2 :]]
    thrusts = sorted(s[3] for s in setpoints[len(setpoints) // 2 :])
    results = {
        "started": started,
        "in_offboard": in_offboard,
        "held_setpoints": len(held_setpoints),
        "flown": flown,
        "odometry": len(positions),
        "setpoints": len(setpoints),
        "heartbeats": len(heartbeats),
        "heartbeat_body_rate": sorted(set(heartbeats)),
        "error_mean_m": sum(errors) / len(errors) if errors else None,
        "error_max_m": max(errors) if errors else None,
        "thrust_median": thrusts[len(thrusts) // 2] if thrusts else None,
        "frames": sorted(frames),
        "q_norm_range": [min(q_norms), max(q_norms)] if q_norms else None,
        "stamp_lag_us_range": [min(stamp_lags_us), max(stamp_lags_us)] if stamp_lags_us else None,
        "samples_are_stamps": all(samples_are_stamps),
        "bridge": diagnostics.get("/cf1/sim_bridge"),
        "policy": diagnostics.get("/cf1/policy_node"),
    }
    probe.destroy_node()
    finish(results, processes, ["launch"])


if __name__ == "__main__":
    main()
