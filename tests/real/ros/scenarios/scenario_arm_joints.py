"""policy_node with the arm profile against a driver that publishes /joint_states in its own (alphabetical) order,
as ros2_control's joint_state_broadcaster may, and a second publisher (a gripper's) on the same topic with other
joints. The node must read each joint by name, command in the profile's joint order, send nothing before the arm's
first JointState, start its rate limits from the measured pose, skip the gripper's messages, hold the measured
pose while the arm's messages stop, move home only when `go_home` asks (time_from_start from the distance and the
2 rad/s rate limit) and hold the measured pose on deactivation.

argv: LOG_DIR POLICY (the linear probe of test_arm_joints.py: each joint's target = its angle, the yaw's + 0.5 rad).
Prints the commands, /diagnostics statuses, phase marks and the message definitions' field types as JSON.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import rclpy
from builtin_interfaces.msg import Duration
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import Point, PointStamped
from harness import Processes, change_state, finish, ros_args, spin_for, spin_publishing_until, spin_until
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float32MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

JOINTS = ("yaw", "shoulder", "elbow", "wrist")
DRIVER_ORDER = ("elbow", "shoulder", "wrist", "yaw")  # alphabetical, as the driver publishes them
POSE = (0.3, 0.6, -0.8, 0.2)  # profile order
MOVED = (1.0, 0.2, -0.5, 0.0)  # where the arm is after the driver's silence (moved by hand)
GRIPPER = ("finger_left", "finger_right")
PERIOD = 0.02
PHASES = {"good": 1.5, "silent": 0.6, "resumed": 0.6, "home": 0.8, "deactivated": 0.5}
"""Each phase's minimum duration; it lasts until its effect shows too (`effects`, up to SETTLE_S)."""
SETTLE_S = 60.0


def main() -> None:
    log_dir, policy = Path(sys.argv[1]), sys.argv[2]
    processes = Processes(log_dir)
    params = {"policy": policy, "profile": "arm", "autostart": True, "diagnostics_period": 0.1}
    processes.start("policy_node", "policy_node", *ros_args("policy_node", "/arm", **params))
    rclpy.init()
    probe = rclpy.create_node("driver")
    commands: list[tuple[float, list[str], list[float], float, tuple[int, int]]] = []
    statuses: list[tuple[float, int, str, dict[str, str]]] = []

    def on_command(m: JointTrajectory) -> None:
        point = m.points[0]
        duration = point.time_from_start.sec + point.time_from_start.nanosec * 1e-9
        stamp = (m.header.stamp.sec, m.header.stamp.nanosec)
        commands.append((time.monotonic(), list(m.joint_names), list(point.positions), duration, stamp))

    def on_diagnostics(m: DiagnosticArray) -> None:
        for s in m.status:
            if "policy_node" in s.name:
                values = {item.key: item.value for item in s.values}
                statuses.append((time.monotonic(), s.level[0], s.message, values))

    probe.create_subscription(JointTrajectory, "/arm/joint_trajectory", on_command, 100)
    probe.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 100)
    joints = probe.create_publisher(JointState, "/arm/joint_states", qos_profile_sensor_data)
    gripper_node = rclpy.create_node("gripper_driver")  # a second publisher on the topic, its own joints only
    gripper = gripper_node.create_publisher(JointState, "/arm/joint_states", qos_profile_sensor_data)
    target = probe.create_publisher(PointStamped, "/arm/target", qos_profile_sensor_data)
    state = probe.create_publisher(Float32MultiArray, "/arm/state", qos_profile_sensor_data)
    go_home = probe.create_publisher(Bool, "/arm/go_home", 10)
    arm = {"pose": POSE, "publishing": True}

    def publish() -> None:
        stamp = probe.get_clock().now().to_msg()
        target.publish(PointStamped(point=Point(x=0.3, y=0.0, z=0.4)))
        state.publish(Float32MultiArray(data=[0.1, 0.0, -0.1]))
        fingers = JointState(name=list(GRIPPER), position=[0.01, 0.01], velocity=[0.0, 0.0])
        fingers.header.stamp = stamp
        gripper.publish(fingers)
        if arm["publishing"]:
            by_name = dict(zip(JOINTS, arm["pose"], strict=True))
            message = JointState(name=list(DRIVER_ORDER), position=[by_name[n] for n in DRIVER_ORDER])
            message.velocity = [0.0] * len(DRIVER_ORDER)
            message.header.stamp = stamp
            joints.publish(message)

    def waiting() -> bool:  # the node runs (active, nothing measured yet) and every channel is matched
        withheld = any("nothing sent" in s[2] for s in statuses)
        matched = probe.count_publishers("/arm/joint_trajectory") > 0 and go_home.get_subscription_count() > 0
        return withheld and matched and joints.get_subscription_count() > 0

    ready = spin_until(probe, waiting, 30.0)
    spin_for(probe, 0.3)
    marks = {"before_inputs": len(commands)}

    def since(phase: str) -> list[tuple[float, list[str], list[float], float]]:
        return [c for c in commands if c[0] >= marks[phase]]

    def said(phase: str, text: str, level: int | None = None) -> bool:
        return any(t >= marks[phase] and text in m and level in (None, lv) for t, lv, m, _ in statuses)

    def at(command: tuple, pose: tuple[float, ...]) -> bool:
        return all(abs(a - b) < 1e-5 for a, b in zip(command[2], pose, strict=True))

    home_pose = (0.0, 0.5, -1.0, 0.5)
    effects = {  # what each phase waits for, on top of its minimum duration (PHASES)
        "good": lambda: (
            len(since("good")) >= 40
            and any(c[2][0] >= POSE[0] + 0.5 - 1e-5 for c in since("good"))
            and any(
                t >= marks["good"] and lv == 0 and int(v.get("skipped_messages", 0)) > 0 for t, lv, _, v in statuses
            )
        ),
        "silent": lambda: (
            said("silent", "stale observation: no joint_states", 1) and sum(at(c, POSE) for c in since("silent")) >= 5
        ),
        "resumed": lambda: sum(not at(c, POSE) for c in since("resumed")) >= 5,
        "home": lambda: said("home", "going home", 1) and sum(at(c, home_pose) for c in since("home")) >= 15,
        "deactivated": lambda: any(at(c, MOVED) for c in since("deactivated")),  # the one hold it sends
    }
    for phase, seconds in PHASES.items():
        marks[phase] = time.monotonic()
        if phase == "silent":
            arm["publishing"] = False
        elif phase == "resumed":
            arm["publishing"], arm["pose"] = True, MOVED
        elif phase == "home":
            go_home.publish(Bool(data=True))
        elif phase == "deactivated":
            marks["deactivate_ok"] = bool(change_state(probe, "/arm/policy_node", "deactivate"))
        end = marks[phase] + seconds
        done = effects[phase]
        marks[f"{phase}_seen"] = spin_publishing_until(
            probe, lambda done=done, end=end: time.monotonic() >= end and done(), SETTLE_S, publish, PERIOD
        )
    types = {
        "time_from_start": JointTrajectoryPoint.get_fields_and_field_types()["time_from_start"],
        "duration": Duration.get_fields_and_field_types(),
        "joint_state": JointState.get_fields_and_field_types(),
    }
    results = {"ready": ready, "marks": marks, "commands": commands, "statuses": statuses, "types": types}
    finish(results, processes, ["policy_node"])


if __name__ == "__main__":
    main()
