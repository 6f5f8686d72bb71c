"""RobotEnv's ROS link (robo_rl.robot.link.RosLink) on the peg arm's profile, in this process: during a takeover,
`answer` waits for the operator's answer to the latest observation (an `intervention` message that arrives after the
latest input message) instead of taking the one the operator sent for the observation before; it stops waiting at
its deadline; teleop_node's `intervening` false ends the takeover at once, not a staleness timeout later. And
`next_input` (RobotEnv's `trigger: input`) returns when the arm's state message arrives, or None at its deadline.

argv: LOG_DIR. Prints what `answer` returned in each case as JSON.
"""

from __future__ import annotations

import threading
import time

import rclpy
from harness import finish
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float32MultiArray

from robo_rl.real.profile import load_profile
from robo_rl.robot.link import RosLink

JOINTS = ["yaw", "shoulder", "elbow", "wrist"]
BEFORE, AFTER = [0.01, 0.0, 0.0, 0.0], [0.0, 0.02, 0.0, 0.0]
"""The operator's joint steps for the previous observation and its answer to the new one."""
ANSWER_DELAY_S = 0.05
"""How long after the new observation the operator's answer is published."""


def main() -> None:
    rclpy.init()
    link = RosLink(load_profile("arm_peg"), namespace="/arm")
    probe = rclpy.create_node("probe")
    joints = probe.create_publisher(JointState, "/arm/joint_states", qos_profile_sensor_data)
    operator = probe.create_publisher(Float32MultiArray, "/arm/intervention", 10)
    intervening = probe.create_publisher(Bool, "/arm/intervening", 10)
    deadline = time.monotonic() + 20.0
    while time.monotonic() < deadline and not (
        joints.get_subscription_count() > 0 and operator.get_subscription_count() > 0
    ):
        link.wait_until(time.monotonic() + 0.01)

    def observe() -> None:
        """A new observation reaches the link (after the operator's answer to the one before)."""
        operator.publish(Float32MultiArray(data=BEFORE))
        link.wait_until(time.monotonic() + 0.05)
        joints.publish(JointState(name=JOINTS, position=[0.0] * 4, velocity=[0.0] * 4))
        link.wait_until(time.monotonic() + 0.05)

    results = {}
    observe()
    results["latest_at_once"] = link.intervention().tolist()
    answer_later = threading.Timer(ANSWER_DELAY_S, lambda: operator.publish(Float32MultiArray(data=AFTER)))
    answer_later.start()
    results["answered"] = link.answer(time.monotonic() + 2.0).tolist()
    answer_later.join()

    observe()  # the operator does not answer this observation: the deadline ends the wait
    start = time.monotonic()
    results["unanswered"] = link.answer(start + 0.1).tolist()
    results["unanswered_wait_s"] = time.monotonic() - start

    observe()
    intervening.publish(Bool(data=False))  # the operator let go
    link.wait_until(time.monotonic() + 0.05)
    answer = link.answer(time.monotonic() + 2.0)
    results["after_letting_go"] = None if answer is None else answer.tolist()
    start = time.monotonic()
    state_later = threading.Timer(0.03, lambda: joints.publish(JointState(name=JOINTS, position=[0.0] * 4)))
    state_later.start()
    arrived = link.next_input(start, start + 1.0)
    state_later.join()
    results["state_after_s"] = None if arrived is None else arrived - start
    start = time.monotonic()
    results["no_state"] = link.next_input(start, start + 0.1)
    results["no_state_wait_s"] = time.monotonic() - start
    link.close()
    finish(results)


if __name__ == "__main__":
    main()
