"""policy_node driving a policy imported from mjlab (`robo-rl import`) with the draft profile the import wrote: a
fake legged robot publishes its JointState (in its own, reversed, joint order), its Odometry, a velocity command
and the state estimator's projected gravity; the node must command joint targets in the profile's joint order.

argv: LOG_DIR POLICY PROFILE JOINTS (comma-separated). Prints the inputs published (constant) and every
JointTrajectory received, once it has run RUN_S and sent MIN_COMMANDS.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import rclpy
from geometry_msgs.msg import Twist
from harness import Processes, finish, ros_args, spin_publishing_until, spin_until
from nav_msgs.msg import Odometry
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import JointState
from std_msgs.msg import Float32MultiArray
from trajectory_msgs.msg import JointTrajectory

RUN_S = 3.0
MIN_COMMANDS = 60
SETTLE_S = 60.0
LIN, ANG, GRAVITY, COMMAND = [0.3, -0.1, 0.02], [0.05, -0.02, 0.4], [0.05, -0.03, -0.99], [0.5, 0.0, 0.2]


def main() -> None:
    log_dir, policy, profile = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    joints = sys.argv[4].split(",")
    positions = {name: 0.05 * (i % 3) - 0.02 * i for i, name in enumerate(joints)}
    processes = Processes(log_dir)
    params = {"policy": policy, "profile": profile, "autostart": True}
    processes.start("policy_node", "policy_node", *ros_args("policy_node", "/robot", **params))
    rclpy.init()
    probe = rclpy.create_node("legged_robot")
    commands: list[tuple[float, list[str], list[float]]] = []

    def on_command(m: JointTrajectory) -> None:
        commands.append((time.monotonic(), list(m.joint_names), list(m.points[0].positions)))

    probe.create_subscription(JointTrajectory, "/robot/joint_trajectory", on_command, 100)
    joint_pub = probe.create_publisher(JointState, "/robot/joint_states", qos_profile_sensor_data)
    odom_pub = probe.create_publisher(Odometry, "/robot/odom", qos_profile_sensor_data)
    cmd_pub = probe.create_publisher(Twist, "/robot/cmd_vel", qos_profile_sensor_data)
    state_pub = probe.create_publisher(Float32MultiArray, "/robot/state", qos_profile_sensor_data)
    order = list(reversed(joints))  # the driver's own order: read by name

    def publish() -> None:
        stamp = probe.get_clock().now().to_msg()
        odom = Odometry()
        odom.header.stamp = stamp
        t = odom.twist.twist
        t.linear.x, t.linear.y, t.linear.z = LIN
        t.angular.x, t.angular.y, t.angular.z = ANG
        command = Twist()
        command.linear.x, command.linear.y, command.angular.z = COMMAND
        state_pub.publish(Float32MultiArray(data=GRAVITY))
        cmd_pub.publish(command)
        message = JointState(name=order, position=[positions[j] for j in order], velocity=[0.1] * len(order))
        message.header.stamp = stamp
        joint_pub.publish(message)
        odom_pub.publish(odom)

    ready = spin_until(probe, lambda: joint_pub.get_subscription_count() > 0, 20.0)
    started = time.monotonic()
    # RUN_S and MIN_COMMANDS commands, however slow the machine.
    flown = lambda: len(commands) >= MIN_COMMANDS and time.monotonic() >= started + RUN_S  # noqa: E731
    spin_publishing_until(probe, flown, SETTLE_S, publish, 0.02)
    inputs = {"lin": LIN, "ang": ANG, "gravity": GRAVITY, "command": COMMAND, "positions": positions}
    finish({"ready": ready, "commands": commands, "inputs": inputs}, processes, ["policy_node"])


if __name__ == "__main__":
    main()
