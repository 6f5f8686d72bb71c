"""teleop_node with `device: spacenav`: spacenav's Joy and the arm's joint_states in, the operator's joint steps out.

argv: LOG_DIR Q0 Q1 Q2 Q3 (the measured joint angles, rad, for yaw, shoulder, elbow, wrist). teleop_node runs profile
arm_peg in /arm1; a probe publishes `/arm1/joint_states` (the joints in another order than the profile's, as a
driver may) and `/arm1/spacenav/joy` shaped as ROS 2's spacenav driver publishes it (six normalised axes, two
buttons, repeated; tests/real/test_spacemouse.py names the source). Phases, each until its effect shows:
released (a push without the dead-man: nothing may come), held (the left button and a push: joint steps),
rest (held, the puck let go: zero steps), let_go (released: `intervening` false once, then nothing), success
(the right button: one `success` on episode_event), silent (held, then the driver stops: `intervening` false).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import rclpy
from harness import Processes, finish, ros_args, spin_for, spin_publishing_until, spin_until
from sensor_msgs.msg import JointState, Joy
from std_msgs.msg import Bool, Float32MultiArray, String

PUSH = [350.0 / 512.0, 0.0, 0.0, 0.0, 0.0, 0.0]
"""libspnav's motion.z = 350 of full_scale 512: the driver's +x (forward)."""
SETTLE_S = 30.0
QUIET_S = 1.0
"""How long 'nothing comes' is watched (ten control periods of arm_peg)."""


def main() -> None:
    log_dir, q = Path(sys.argv[1]), [float(v) for v in sys.argv[2:6]]
    processes = Processes(log_dir)
    params = {"profile": "arm_peg", "device": "spacenav"}
    processes.start("teleop_node", "teleop_node", *ros_args("teleop_node", "/arm1", **params))
    rclpy.init()
    probe = rclpy.create_node("probe")
    interventions: list[list[float]] = []
    intervening: list[bool] = []
    events: list[str] = []
    probe.create_subscription(
        Float32MultiArray, "/arm1/intervention", lambda m: interventions.append(list(m.data)), 100
    )
    probe.create_subscription(Bool, "/arm1/intervening", lambda m: intervening.append(bool(m.data)), 100)
    probe.create_subscription(String, "/arm1/episode_event", lambda m: events.append(str(m.data)), 100)
    joints_pub = probe.create_publisher(JointState, "/arm1/joint_states", 10)
    joy_pub = probe.create_publisher(Joy, "/arm1/spacenav/joy", 10)
    state = {"axes": list(PUSH), "buttons": [0, 0], "joy": True}

    def publish() -> None:
        names = ["wrist", "yaw", "elbow", "shoulder"]
        order = {"yaw": 0, "shoulder": 1, "elbow": 2, "wrist": 3}
        joints_pub.publish(JointState(name=names, position=[q[order[n]] for n in names], velocity=[0.0] * 4))
        if state["joy"]:
            joy_pub.publish(Joy(axes=state["axes"], buttons=list(state["buttons"])))

    ready = spin_until(probe, lambda: joy_pub.get_subscription_count() > 0, SETTLE_S)
    ready = ready and spin_until(probe, lambda: joints_pub.get_subscription_count() > 0, SETTLE_S)
    results: dict[str, object] = {"ready": ready}
    spin_for(probe, QUIET_S, publish, 0.005)
    results["released"] = {"interventions": len(interventions), "intervening": list(intervening)}

    state["buttons"] = [1, 0]
    mark = len(interventions)
    reached = spin_publishing_until(probe, lambda: len(interventions) >= mark + 5, SETTLE_S, publish, 0.005)
    results["held"] = {"reached": reached, "actions": interventions[mark:]}

    state["axes"] = [0.0] * 6  # the driver's zeros for a puck at rest
    mark = len(interventions)
    zeros = lambda: len(interventions) >= mark + 3 and not any(map(any, interventions[-3:]))  # noqa: E731
    reached = spin_publishing_until(probe, zeros, SETTLE_S, publish, 0.005)
    results["rest"] = {"reached": reached, "last": interventions[-3:]}

    state["buttons"] = [0, 0]
    state["axes"] = list(PUSH)
    mark_falses = intervening.count(False)
    reached = spin_publishing_until(probe, lambda: intervening.count(False) > mark_falses, SETTLE_S, publish, 0.005)
    mark = len(interventions)
    spin_for(probe, QUIET_S, publish, 0.005)
    results["let_go"] = {
        "reached": reached,
        "falses": intervening.count(False) - mark_falses,
        "later_interventions": len(interventions) - mark,
        "last": intervening[-1] if intervening else None,
    }

    state["buttons"] = [0, 1]
    reached = spin_publishing_until(probe, lambda: "success" in events, SETTLE_S, publish, 0.005)
    spin_for(probe, 0.3, publish, 0.005)
    state["buttons"] = [0, 0]
    spin_for(probe, 0.3, publish, 0.005)
    results["success"] = {"reached": reached, "events": list(events)}

    state["buttons"] = [1, 0]
    mark = len(interventions)
    reached = spin_publishing_until(probe, lambda: len(interventions) >= mark + 3, SETTLE_S, publish, 0.005)
    state["joy"] = False  # the driver stops while the button is held
    stopped = time.monotonic()
    mark_falses = intervening.count(False)
    let_go = spin_publishing_until(probe, lambda: intervening.count(False) > mark_falses, SETTLE_S, publish, 0.005)
    results["silent"] = {"reached": reached and let_go, "after_s": time.monotonic() - stopped}
    probe.destroy_node()
    finish(results, processes, ["teleop_node"])


if __name__ == "__main__":
    main()
