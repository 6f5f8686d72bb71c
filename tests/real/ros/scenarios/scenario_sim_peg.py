"""policy_node driving the simulated peg arm: the trained peg policy with the arm_peg profile against sim_bridge
(mujoco/peg_insert, lockstep) standing in for the arm's driver.

The probe sits between the two as the arm's driver link: sim_bridge publishes its JointStates on `sim_joint_states`
(remapped) and the probe relays them to `joint_states`, where policy_node reads them, so the scenario knows each
measured pose policy_node got and can cut the arm's JointStates off (its other input, `state`, keeps flowing from
sim_bridge directly). Phases, each lasting until its effect shows (up to SETTLE_S, however slow the machine):
  waiting     nothing relayed: policy_node is active but has no measured pose;
  incomplete  JointStates without the wrist relayed: still no measured pose (skipped, counted);
  moving      the full JointStates relayed: the policy steps the arm (sim_bridge's `steps` grow);
  stale       nothing relayed: policy_node holds the last relayed pose (hold_measured);
  resumed     relayed again: the commands step from the new measured pose.

argv: LOG_DIR POLICY. Prints the relayed JointStates, the commands (each with the number of JointStates relayed
before it arrived), the statuses, sim_bridge's diagnostics and the phase marks as JSON.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from harness import Processes, finish, ros_args, spin_publishing_until, spin_until
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

NS = "/arm"
MIN_S = {"incomplete": 1.0, "moving": 2.0, "stale": 1.0, "resumed": 0.5}
"""Each phase's minimum duration; it lasts until its effect shows too (`effects`, up to SETTLE_S)."""
SETTLE_S = 90.0


def main() -> None:
    log_dir, policy = Path(sys.argv[1]), sys.argv[2]
    processes = Processes(log_dir)
    bridge = {"profile": "arm_peg", "task": "mujoco/peg_insert", "lockstep": True, "seed": 0}
    remap = ["-r", "joint_states:=sim_joint_states"]
    processes.start("sim_bridge", "sim_bridge", *ros_args("sim_bridge", NS, **bridge), *remap)
    # max_missed_deadlines 0: a stalled machine must not latch the e-stop (the latch is tested on stepped time in
    # tests/real/test_node_core.py); the profile's own staleness timeout (0.3 s) is what the stale phase tests.
    node = {"policy": policy, "profile": "arm_peg", "autostart": True, "diagnostics_period": 0.1}
    node["max_missed_deadlines"] = 0
    processes.start("policy_node", "policy_node", *ros_args("policy_node", NS, **node))
    rclpy.init()
    probe = rclpy.create_node("arm_link")
    relayed: list[tuple[float, list[str], list[float]]] = []  # (time, names, positions) as relayed
    commands: list[tuple[float, int, list[str], list[float], float]] = []  # (time, relayed so far, names, ...)
    statuses: list[tuple[float, int, str, dict[str, str]]] = []
    bridge_status: list[dict[str, str]] = []
    link = {"mode": "off", "bridge_names": []}  # off, incomplete, full

    relay = probe.create_publisher(JointState, f"{NS}/joint_states", qos_profile_sensor_data)

    def on_sim_joints(m: JointState) -> None:
        link["bridge_names"] = list(m.name)
        if link["mode"] == "off":
            return
        if link["mode"] == "incomplete":  # the wrist's entry left out: not a complete measured pose
            keep = [i for i, name in enumerate(m.name) if name != "wrist"]
            m.name = [m.name[i] for i in keep]
            m.position = [m.position[i] for i in keep]
            m.velocity = [m.velocity[i] for i in keep]
        else:
            relayed.append((time.monotonic(), list(m.name), list(m.position)))
        relay.publish(m)

    def on_command(m: JointTrajectory) -> None:
        point = m.points[0]
        duration = point.time_from_start.sec + point.time_from_start.nanosec * 1e-9
        commands.append((time.monotonic(), len(relayed), list(m.joint_names), list(point.positions), duration))

    def on_diagnostics(m: DiagnosticArray) -> None:
        for s in m.status:
            values = {item.key: item.value for item in s.values}
            if "policy_node" in s.name:
                statuses.append((time.monotonic(), s.level[0], s.message, values))
            elif "sim_bridge" in s.name:
                bridge_status.append(values)

    probe.create_subscription(JointState, f"{NS}/sim_joint_states", on_sim_joints, qos_profile_sensor_data)
    probe.create_subscription(JointTrajectory, f"{NS}/joint_trajectory", on_command, 100)
    probe.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 100)

    def waiting() -> bool:  # both nodes run, policy_node active without a measured pose, every channel matched
        withheld = any("nothing sent" in s[2] for s in statuses)
        matched = probe.count_publishers(f"{NS}/joint_trajectory") > 0 and relay.get_subscription_count() > 0
        return withheld and matched and bool(bridge_status) and bool(link["bridge_names"])

    ready = spin_until(probe, waiting, 120.0)
    marks: dict[str, float | int | bool] = {"waiting": time.monotonic()}

    def since(phase: str) -> list[tuple[float, int, list[str], list[float], float]]:
        return [c for c in commands if c[0] >= marks[phase]]

    def said(phase: str, text: str) -> bool:
        return any(t >= marks[phase] and text in m for t, _, m, _ in statuses)

    def skipped() -> int:
        return int(statuses[-1][3].get("skipped_messages", 0)) if statuses else 0

    def steps() -> int:
        return int(bridge_status[-1].get("steps", 0)) if bridge_status else 0

    held = {"skipped": 0}
    effects = {  # what each phase waits for, on top of its minimum duration (MIN_S)
        "incomplete": lambda: skipped() >= held["skipped"] + 5 and said("incomplete", "nothing sent"),
        "moving": lambda: len(since("moving")) >= 40 and steps() >= 30,
        "stale": lambda: said("stale", "stale observation: no joint_states") and len(since("stale")) >= 10,
        "resumed": lambda: sum(c[1] > marks["relayed_before_resume"] for c in since("resumed")) >= 10,
    }
    for phase, seconds in MIN_S.items():
        marks[phase] = time.monotonic()
        if phase == "incomplete":
            held["skipped"] = skipped()
            link["mode"] = "incomplete"
        elif phase == "moving":
            marks["before_complete"] = len(commands)
            link["mode"] = "full"
        elif phase == "stale":
            link["mode"] = "off"
            marks["relayed_before_stale"] = len(relayed)
        elif phase == "resumed":
            marks["relayed_before_resume"] = len(relayed)
            link["mode"] = "full"
        end = marks[phase] + seconds
        done = effects[phase]
        marks[f"{phase}_seen"] = spin_publishing_until(
            probe, lambda done=done, end=end: time.monotonic() >= end and done(), SETTLE_S, lambda: None, 0.05
        )
    results = {
        "ready": ready,
        "marks": marks,
        "relayed": relayed,
        "commands": commands,
        "statuses": statuses,
        "bridge": bridge_status[-1] if bridge_status else {},
        "bridge_joint_names": link["bridge_names"],
    }
    finish(results, processes, ["policy_node", "sim_bridge"])


if __name__ == "__main__":
    main()
