"""policy_node against a stand-in PX4: a probe node built on px4_msgs (the definitions in ros_msgs/) that publishes
VehicleOdometry as PX4 does (NED position, FRD→NED attitude, NED velocity, FRD body rates, microsecond stamps) and
records what a PX4 would receive on fmu/in: the rates setpoints, the OffboardControlMode heartbeat and any
VehicleCommand. After 3 s the odometry stops, as when PX4's estimator or the link fails.

argv: LOG_DIR POLICY REQUESTS ("none", or "offboard+arm": set policy_node's px4_offboard and px4_arm). POLICY is the
linear probe policy of test_px4.py.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import rclpy
from harness import Processes, finish, ros_args, spin_for, spin_until
from px4_msgs.msg import OffboardControlMode, VehicleCommand, VehicleOdometry, VehicleRatesSetpoint
from rclpy.qos import qos_profile_sensor_data

FLIGHT_S = 3.0
SILENT_S = 1.5
FLAGS = ("position", "velocity", "acceleration", "attitude", "body_rate", "thrust_and_torque", "direct_actuator")


def main() -> None:
    log_dir, policy, requests = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    processes = Processes(log_dir)
    params = {"policy": policy, "profile": "quadrotor_px4", "autostart": True, "target": [0.0, 0.0, 1.0]}
    if requests == "offboard+arm":
        params |= {"px4_offboard": True, "px4_arm": True}
    processes.start("policy_node", "policy_node", *ros_args("policy_node", "/", **params))
    rclpy.init()
    probe = rclpy.create_node("px4_stand_in")
    now_us = lambda: probe.get_clock().now().nanoseconds // 1000  # noqa: E731
    setpoints: list[tuple[float, int, int, float, float, float, float]] = []
    beats: list[tuple[float, int, int, tuple[bool, ...]]] = []
    commands: list[tuple[float, int, float, float, int, int, bool]] = []

    def on_setpoint(m: VehicleRatesSetpoint) -> None:
        setpoints.append((time.monotonic(), m.timestamp, now_us(), m.roll, m.pitch, m.yaw, float(m.thrust_body[2])))

    def on_mode(m: OffboardControlMode) -> None:
        beats.append((time.monotonic(), m.timestamp, now_us(), tuple(bool(getattr(m, f)) for f in FLAGS)))

    def on_command(m: VehicleCommand) -> None:
        commands.append(
            (time.monotonic(), m.command, m.param1, m.param2, m.target_system, m.target_component, m.from_external)
        )

    probe.create_subscription(VehicleRatesSetpoint, "/fmu/in/vehicle_rates_setpoint", on_setpoint, 100)
    probe.create_subscription(OffboardControlMode, "/fmu/in/offboard_control_mode", on_mode, 100)
    probe.create_subscription(VehicleCommand, "/fmu/in/vehicle_command", on_command, 100)
    odometry = probe.create_publisher(VehicleOdometry, "/fmu/out/vehicle_odometry", qos_profile_sensor_data)

    def publish_odometry() -> None:
        m = VehicleOdometry()
        m.timestamp = m.timestamp_sample = now_us()
        m.pose_frame = VehicleOdometry.POSE_FRAME_NED
        m.position = [0.0, 0.0, -0.8]  # 0.8 m up, 0.2 m below the target (ENU z 1.0)
        m.q = [1.0, 0.0, 0.0, 0.0]  # level, nose north
        m.velocity_frame = VehicleOdometry.VELOCITY_FRAME_NED
        m.velocity = [0.0, 0.0, 0.0]
        m.angular_velocity = [0.3, 0.5, 0.2]  # FRD: rolling right, pitching nose up, yawing right (clockwise)
        odometry.publish(m)

    ready = spin_until(probe, lambda: odometry.get_subscription_count() > 0, 20.0)
    spin_for(probe, FLIGHT_S, publish_odometry, 0.01)
    stopped = time.monotonic()
    spin_for(probe, SILENT_S)
    results = {
        "ready": ready,
        "stopped": stopped,
        "setpoints": setpoints,
        "heartbeats": beats,
        "commands": commands,
    }
    finish(results, processes, ["policy_node"])


if __name__ == "__main__":
    main()
