"""policy_node with a policy that has memory (h_in -> h_out): its commands for a recorded sequence of odometry over
two activations, for the test to replay without ROS and offline.

argv: LOG_DIR POLICY (a quadrotor_crazyflie policy.onnx with memory) MESSAGES (per activation). The node runs the
bundled profile with a staleness timeout of `STALENESS_S` and no deadline latch, so that a loaded machine never puts
a safe command between two of the policy's. Odometry goes out one message at a time, the next once the command for
the last has arrived, so each command belongs to one known message (a message dropped on the way ends the phase
early: the test then says how many were answered). Before the first activation one message is observed while the
node is inactive (no command), so that the inputs are fresh when control starts and no watchdog command comes
first; the odometry stays fresh across deactivate -> activate for the same reason.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import rclpy
from harness import Processes, change_state, finish, generous_profile, ros_args, spin_for, spin_until
from nav_msgs.msg import Odometry
from rclpy.qos import qos_profile_sensor_data
from std_msgs.msg import Float32MultiArray

STALENESS_S = 60.0
SETTLE_S = 30.0
NODE = "/cf1/policy_node"


def odometry(index: int) -> dict[str, list[float]]:
    """The odometry of message `index`: near the hover point, a different pose and twist each time (deterministic)."""
    wave = [((index * 7 + k * 3) % 11 - 5) / 50.0 for k in range(9)]
    return {"position": [wave[0], wave[1], 1.0 + wave[2]], "linear": wave[3:6], "angular": wave[6:9]}


def main() -> None:
    log_dir, policy, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    processes = Processes(log_dir)
    profile = generous_profile(log_dir, "quadrotor_crazyflie", STALENESS_S)
    params = {"policy": policy, "profile": profile, "max_missed_deadlines": 0}
    processes.start("policy_node", "policy_node", *ros_args("policy_node", "/cf1", **params))
    rclpy.init()
    probe = rclpy.create_node("probe")
    commands: list[list[float]] = []
    probe.create_subscription(Float32MultiArray, "/cf1/cmd_motors", lambda m: commands.append(list(m.data)), 100)
    odom_pub = probe.create_publisher(Odometry, "/cf1/odom", qos_profile_sensor_data)

    def publish(index: int) -> None:
        values = odometry(index)
        message = Odometry()  # header stamp zero: no deadline accounting
        message.pose.pose.position.x, message.pose.pose.position.y, message.pose.pose.position.z = values["position"]
        message.pose.pose.orientation.w = 1.0
        message.twist.twist.linear.x, message.twist.twist.linear.y, message.twist.twist.linear.z = values["linear"]
        message.twist.twist.angular.x, message.twist.twist.angular.y, message.twist.twist.angular.z = values["angular"]
        odom_pub.publish(message)

    def answered(index: int) -> bool:
        """Publish message `index` and wait for its command (not sent again: a second copy could be answered too)."""
        expected = len(commands) + 1
        publish(index)
        return spin_until(probe, lambda: len(commands) >= expected, SETTLE_S) and len(commands) == expected

    def deactivate() -> bool | None:
        """Deactivate, then wait for the one safe command it sends."""
        answers = len(commands)
        done = change_state(probe, NODE, "deactivate")
        spin_until(probe, lambda: len(commands) > answers, SETTLE_S)
        return done

    results: dict[str, Any] = {"configure": change_state(probe, NODE, "configure")}
    spin_until(probe, lambda: odom_pub.get_subscription_count() > 0, 10.0)
    spin_for(probe, 0.3, lambda: publish(0), 0.01)  # observed while inactive: fresh inputs at activation
    results["commands_while_inactive"] = len(commands)
    phases = []
    for phase in range(2):
        results[f"activate_{phase}"] = change_state(probe, NODE, "activate")
        sent, start = [], len(commands)
        for index in range(1 + phase * count, 1 + (phase + 1) * count):
            if not answered(index):
                break
            sent.append(index)
        phases.append({"messages": [odometry(i) for i in sent], "commands": commands[start : start + len(sent)]})
        results[f"deactivate_{phase}"] = deactivate()
    results["phases"] = phases
    results["first"] = odometry(0)
    probe.destroy_node()
    finish(results, processes, ["policy_node"])


if __name__ == "__main__":
    main()
