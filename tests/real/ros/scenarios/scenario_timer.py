"""policy_node with `trigger: timer`: a fixed-rate loop on the latest observation, whatever the input rate.

argv: LOG_DIR POLICY (a quadrotor_crazyflie policy.onnx). Odometry at 50 Hz; the profile's loop runs at 100 Hz.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import rclpy
from harness import Processes, finish, ros_args, spin_for, spin_until
from nav_msgs.msg import Odometry
from rclpy.qos import qos_profile_sensor_data
from std_msgs.msg import Float32MultiArray


def main() -> None:
    log_dir, policy = Path(sys.argv[1]), sys.argv[2]
    processes = Processes(log_dir)
    params = {"policy": policy, "profile": "quadrotor_crazyflie", "autostart": True, "trigger": "timer"}
    processes.start("policy_node", "policy_node", *ros_args("policy_node", "/cf1", **params))
    rclpy.init()
    probe = rclpy.create_node("probe")
    commands: list[tuple[float, list[float]]] = []
    probe.create_subscription(
        Float32MultiArray, "/cf1/cmd_motors", lambda m: commands.append((time.monotonic(), list(m.data))), 100
    )
    odom_pub = probe.create_publisher(Odometry, "/cf1/odom", qos_profile_sensor_data)

    def publish() -> None:
        message = Odometry()
        message.header.stamp = probe.get_clock().now().to_msg()
        message.pose.pose.orientation.w = 1.0
        odom_pub.publish(message)

    spin_until(probe, lambda: odom_pub.get_subscription_count() > 0 and len(commands) > 0, 30.0)
    mark = time.monotonic()
    spin_for(probe, 2.0, publish, 0.02)
    fed = [c for c in commands if c[0] > mark + 0.3]
    stop = time.monotonic()
    spin_for(probe, 0.5)
    stale = [c for c in commands if c[0] > stop + 0.1]
    results = {
        "fed_rate_hz": len(fed) / (fed[-1][0] - fed[0][0]) if len(fed) > 1 else 0.0,
        "fed_non_safe": sum(any(v != 0.0 for v in c[1]) for c in fed),
        "fed_count": len(fed),
        "stale_rate_hz": len(stale) / 0.4,
        "stale_all_safe": all(all(v == 0.0 for v in c[1]) for c in stale),
    }
    probe.destroy_node()
    finish(results, processes, ["policy_node"])


if __name__ == "__main__":
    main()
