"""policy_node in a Crazyflie's namespace (/cf1) against a stand-in crazyswarm2 server: a probe node that publishes
/cf1/odom as crazyswarm2's C++ server does (pose in the world, world-frame velocity in twist.linear, no angular
twist) and the gyro log block on /cf1/gyro (deg/s, body FLU), and records the geometry_msgs/Twist that arrives on
/cf1/cmd_vel_legacy. After FLIGHT_S and MIN_FLYING policy commands (however slow the machine) the odometry and the
gyro stop, as when the radio link fails; the recording runs until SAFE_COMMANDS zero-thrust commands came, plus
SILENT_S.

argv: LOG_DIR POLICY PROFILE. PROFILE is quadrotor_crazyswarm2 with the gyro input as std_msgs/Float32MultiArray
(labels values[0..2]), since .venv-ros has no crazyflie_interfaces; everything the policy commands is the bundled
profile's.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import rclpy
from geometry_msgs.msg import Twist
from harness import Processes, finish, ros_args, spin_for, spin_publishing_until, spin_until
from nav_msgs.msg import Odometry
from std_msgs.msg import Float32MultiArray

FLIGHT_S = 3.0
SILENT_S = 1.0
MIN_FLYING = 100
SAFE_COMMANDS = 5
SETTLE_S = 60.0
GYRO_DEG_S = [30.0, -20.0, 10.0]  # FLU: rolling left side up, pitching nose up, yawing counter-clockwise


def main() -> None:
    log_dir, policy, profile = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    processes = Processes(log_dir)
    params = {"policy": policy, "profile": profile, "autostart": True, "target": [0.0, 0.0, 1.0]}
    processes.start("policy_node", "policy_node", *ros_args("policy_node", "/cf1", **params))
    rclpy.init()
    probe = rclpy.create_node("crazyswarm2_stand_in")
    twists: list[tuple[float, float, float, float, float, float, float]] = []

    def on_twist(m: Twist) -> None:
        twists.append((time.monotonic(), m.linear.x, m.linear.y, m.linear.z, m.angular.x, m.angular.y, m.angular.z))

    probe.create_subscription(Twist, "/cf1/cmd_vel_legacy", on_twist, 100)
    odometry = probe.create_publisher(Odometry, "/cf1/odom", 10)
    gyro = probe.create_publisher(Float32MultiArray, "/cf1/gyro", 10)

    def publish_state() -> None:
        m = Odometry()
        m.header.stamp = probe.get_clock().now().to_msg()
        m.header.frame_id = "cf1"  # as crazyflie_server.cpp's on_logging_odom
        m.pose.pose.position.z = 0.8  # 0.2 m below the target
        m.pose.pose.orientation.w = 1.0
        m.twist.twist.linear.x = 0.5  # world frame
        odometry.publish(m)
        gyro.publish(Float32MultiArray(data=GYRO_DEG_S))

    def zeros_since(mark: float) -> int:
        return sum(t[0] > mark and t[3] == 0.0 for t in twists)

    ready = spin_until(probe, lambda: odometry.get_subscription_count() > 0 and gyro.get_subscription_count() > 0, 20.0)
    # The node, active and without inputs, sends its safe command: wait for a few, however slow the machine.
    spin_until(probe, lambda: zeros_since(0.0) >= SAFE_COMMANDS, SETTLE_S)
    started = time.monotonic()

    def flown() -> bool:
        flying = sum(t[0] > started and t[3] != 0.0 for t in twists)
        return flying >= MIN_FLYING and time.monotonic() >= started + FLIGHT_S

    spin_publishing_until(probe, flown, SETTLE_S, publish_state, 0.01)
    stopped = time.monotonic()
    # The inputs go stale: wait for the zero-thrust commands that follow, then record SILENT_S more.
    spin_until(probe, lambda: zeros_since(stopped) >= SAFE_COMMANDS, SETTLE_S)
    spin_for(probe, SILENT_S)
    results = {"ready": ready, "started": started, "stopped": stopped, "twists": twists}
    finish(results, processes, ["policy_node"])


if __name__ == "__main__":
    main()
