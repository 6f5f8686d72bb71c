"""RobotEnv's ROS link (robo_rl.robot.link.RosLink) on the arm profile, in this process: a gripper's JointState on
the arm's joint_states is skipped (counted, keeps nothing fresh) while the arm's driver publishes alphabetically,
and the JointTrajectory keeps the time_from_start RobotEnv gives (one period when it gives none).

argv: LOG_DIR. Prints what the link read and what a probe received as JSON.
"""

from __future__ import annotations

import time

import rclpy
from harness import finish
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

from robo_rl.real.command import trajectory_timing
from robo_rl.real.profile import load_profile
from robo_rl.robot.link import RosLink

DRIVER_ORDER = ["elbow", "shoulder", "wrist", "yaw"]
DRIVER_ANGLES = [-0.8, 0.6, 0.2, 0.3]  # yaw, shoulder, elbow, wrist = 0.3, 0.6, -0.8, 0.2


def main() -> None:
    rclpy.init()
    link = RosLink(load_profile("arm"), namespace="/arm")
    probe = rclpy.create_node("probe")
    arm = probe.create_publisher(JointState, "/arm/joint_states", qos_profile_sensor_data)
    gripper = probe.create_publisher(JointState, "/arm/joint_states", qos_profile_sensor_data)
    received: list[tuple[list[float], float]] = []

    def on_command(m: JointTrajectory) -> None:
        t = m.points[0].time_from_start
        received.append((list(m.points[0].positions), t.sec + t.nanosec * 1e-9))

    probe.create_subscription(JointTrajectory, "/arm/joint_trajectory", on_command, 10)

    def period(with_arm: bool) -> None:
        gripper.publish(JointState(name=["finger_left", "finger_right"], position=[0.01, 0.01]))
        if with_arm:
            arm.publish(JointState(name=DRIVER_ORDER, position=DRIVER_ANGLES, velocity=[0.0] * 4))
        link.wait_until(time.monotonic() + 0.02)
        rclpy.spin_once(probe, timeout_sec=0.0)

    deadline = time.monotonic() + 20.0
    while time.monotonic() < deadline and not (
        arm.get_subscription_count() > 0 and probe.count_publishers("/arm/joint_trajectory") > 0
    ):
        link.wait_until(time.monotonic() + 0.01)
        rclpy.spin_once(probe, timeout_sec=0.0)
    for _ in range(50):
        period(with_arm=True)
    fields = link.fields()
    fresh = "joint_states" not in link.stale_inputs()
    skipped_both = link.skipped_messages
    for _ in range(15):  # 0.3 s of the gripper alone
        period(with_arm=False)
    stale = "joint_states" in link.stale_inputs()
    positions = {f"points[0].positions[{i}]": angle for i, angle in enumerate((0.3, 0.6, -0.8, 0.2))}
    link.send(positions | trajectory_timing(0.5))
    link.send(positions)
    deadline = time.monotonic() + 10.0
    while len(received) < 2 and time.monotonic() < deadline:
        rclpy.spin_once(probe, timeout_sec=0.01)
    results = {
        "positions": [fields.get(f"joint_states.position[{i}]") for i in range(4)],
        "fresh_with_arm": fresh,
        "skipped_with_arm": skipped_both,
        "stale_with_gripper_only": stale,
        "skipped": link.stats()["skipped_messages"],
        "received": received,
    }
    link.close()
    finish(results)


if __name__ == "__main__":
    main()
