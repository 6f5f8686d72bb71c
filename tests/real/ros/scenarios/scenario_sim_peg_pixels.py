"""policy_node driving the simulated peg arm from its cameras: an exported pixel-SAC policy with the arm_peg_pixels
profile against sim_bridge running mujoco/peg_insert_pixels (lockstep), which publishes the arm's JointStates, the
hole estimate and both cameras' frames (`{camera}/image_raw`). Nothing stands between them: policy_node decodes
sim_bridge's frames, assembles them with the state at each JointState and commands; sim_bridge steps on each
command. The probe only listens (frames, commands, diagnostics) until both have done MIN_STEPS steps.

argv: LOG_DIR POLICY. Prints the frames' formats, the commands, policy_node's statuses, sim_bridge's diagnostics and
whether the run got there as JSON.
"""

from __future__ import annotations

import sys
from pathlib import Path

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from harness import Processes, finish, ros_args, spin_until
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import Image
from trajectory_msgs.msg import JointTrajectory

NS = "/arm"
CAMERAS = ("wrist", "side")
MIN_STEPS = 30
SETTLE_S = 240.0


def main() -> None:
    log_dir, policy = Path(sys.argv[1]), sys.argv[2]
    processes = Processes(log_dir)
    bridge = {"profile": "arm_peg_pixels", "task": "mujoco/peg_insert_pixels", "lockstep": True, "seed": 0}
    processes.start("sim_bridge", "sim_bridge", *ros_args("sim_bridge", NS, **bridge))
    node = {"policy": policy, "profile": "arm_peg_pixels", "autostart": True, "diagnostics_period": 0.1}
    node["max_missed_deadlines"] = 0  # a stalled machine must not latch the e-stop (tested on stepped time)
    processes.start("policy_node", "policy_node", *ros_args("policy_node", NS, **node))
    rclpy.init()
    probe = rclpy.create_node("camera_probe")
    frames: dict[str, list[tuple[int, int, str, int]]] = {camera: [] for camera in CAMERAS}
    commands: list[list[float]] = []
    statuses: list[tuple[int, str, dict[str, str]]] = []
    bridge_status: list[dict[str, str]] = []

    def on_frame(camera: str, m: Image) -> None:
        frames[camera].append((m.height, m.width, m.encoding, len(m.data)))

    def on_diagnostics(m: DiagnosticArray) -> None:
        for s in m.status:
            values = {item.key: item.value for item in s.values}
            if "policy_node" in s.name:
                statuses.append((s.level[0], s.message, values))
            elif "sim_bridge" in s.name:
                bridge_status.append(values)

    for camera in CAMERAS:
        topic = f"{NS}/{camera}/image_raw"
        probe.create_subscription(Image, topic, lambda m, c=camera: on_frame(c, m), qos_profile_sensor_data)
    probe.create_subscription(
        JointTrajectory, f"{NS}/joint_trajectory", lambda m: commands.append(list(m.points[0].positions)), 100
    )
    probe.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 100)

    def steps() -> int:
        return int(bridge_status[-1].get("steps", 0)) if bridge_status else 0

    def driven() -> bool:
        return len(commands) >= MIN_STEPS and steps() >= MIN_STEPS and all(len(f) >= MIN_STEPS for f in frames.values())

    reached = spin_until(probe, driven, SETTLE_S)
    results = {
        "reached": reached,
        "frames": {camera: seen[:3] + seen[-3:] for camera, seen in frames.items()},
        "frame_counts": {camera: len(seen) for camera, seen in frames.items()},
        "commands": commands,
        "statuses": statuses[-20:],
        "status_count": len(statuses),
        "bridge": bridge_status[-1] if bridge_status else {},
    }
    finish(results, processes, ["policy_node", "sim_bridge"])


if __name__ == "__main__":
    main()
