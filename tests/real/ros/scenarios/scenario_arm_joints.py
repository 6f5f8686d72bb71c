"""policy_node with the arm profile against a driver that publishes /joint_states in its own (alphabetical) order,
as ros2_control's joint_state_broadcaster may: the node must read each joint by name and command the trajectory
in the profile's joint order; a JointState that lacks one of the profile's joints must stop it (safe command).

argv: LOG_DIR POLICY (the linear probe policy of test_arm_joints.py: each joint target = that joint's angle).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import Point, PointStamped
from harness import Processes, finish, ros_args, spin_for, spin_until
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import JointState
from std_msgs.msg import Float32MultiArray
from trajectory_msgs.msg import JointTrajectory

# The driver's order: alphabetical. In the profile's order (yaw, shoulder, elbow, wrist) the angles are
# (0.3, 0.6, -0.8, 0.2).
DRIVER_ORDER = ["elbow", "shoulder", "wrist", "yaw"]
DRIVER_ANGLES = [-0.8, 0.6, 0.2, 0.3]
GOOD_S = 2.0
BROKEN_S = 1.0


def main() -> None:
    log_dir, policy = Path(sys.argv[1]), sys.argv[2]
    processes = Processes(log_dir)
    params = {"policy": policy, "profile": "arm", "autostart": True, "diagnostics_period": 0.2}
    processes.start("policy_node", "policy_node", *ros_args("policy_node", "/arm", **params))
    rclpy.init()
    probe = rclpy.create_node("driver")
    commands: list[tuple[float, list[str], list[float], float]] = []
    statuses: list[tuple[float, int, str]] = []

    def on_command(m: JointTrajectory) -> None:
        point = m.points[0]
        duration = point.time_from_start.sec + point.time_from_start.nanosec * 1e-9
        commands.append((time.monotonic(), list(m.joint_names), list(point.positions), duration))

    def on_diagnostics(m: DiagnosticArray) -> None:
        statuses.extend((time.monotonic(), s.level[0], s.message) for s in m.status if "policy_node" in s.name)

    probe.create_subscription(JointTrajectory, "/arm/joint_trajectory", on_command, 100)
    probe.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 100)
    joints = probe.create_publisher(JointState, "/arm/joint_states", qos_profile_sensor_data)
    target = probe.create_publisher(PointStamped, "/arm/target", qos_profile_sensor_data)
    state = probe.create_publisher(Float32MultiArray, "/arm/state", qos_profile_sensor_data)
    names = {"list": DRIVER_ORDER, "angles": DRIVER_ANGLES}

    def publish() -> None:
        stamp = probe.get_clock().now().to_msg()
        target.publish(PointStamped(point=Point(x=0.3, y=0.0, z=0.4)))
        state.publish(Float32MultiArray(data=[0.1, 0.0, -0.1]))
        message = JointState(name=names["list"], position=names["angles"], velocity=[0.0] * len(names["list"]))
        message.header.stamp = stamp
        joints.publish(message)

    ready = spin_until(probe, lambda: joints.get_subscription_count() > 0, 20.0)
    spin_for(probe, GOOD_S, publish, 0.02)
    broken = time.monotonic()
    names["list"], names["angles"] = ["elbow", "shoulder", "yaw"], [-0.8, 0.6, 0.3]  # the wrist is gone
    spin_for(probe, BROKEN_S, publish, 0.02)
    results = {"ready": ready, "broken": broken, "commands": commands, "statuses": statuses}
    finish(results, processes, ["policy_node"])


if __name__ == "__main__":
    main()
