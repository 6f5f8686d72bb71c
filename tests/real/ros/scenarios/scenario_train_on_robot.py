"""`robo-rl train --robot rc_car` end to end, with sim_bridge standing in for the car: SAC learns through the car's
ROS topics in real time (50 Hz), its learner in another process; a probe plays the operator through teleop_node's
topics: it presses reset when the trainer prompts for it (the first episode, and after the e-stop), takes over for a
while (intervention) and presses the e-stop once, then releases it.

argv: LOG_DIR RUNS_ROOT ITERATIONS. Reports the trainer's exit code and sim_bridge's last diagnostics.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from harness import Processes, finish, ros_args, spin_until
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Bool, Float32MultiArray, String

REPO = Path(__file__).resolve().parents[4]
PARAMS = str(REPO / "launch" / "params" / "rc_car.yaml")


def main() -> None:
    log_dir, runs, iterations = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    processes = Processes(log_dir)
    processes.start("sim_bridge", "sim_bridge", *ros_args("sim_bridge", "/car1"), "--params-file", PARAMS)
    rclpy.init()
    probe = rclpy.create_node("operator")
    bridge: dict[str, str] = {}

    def on_diagnostics(message: DiagnosticArray) -> None:
        for status in message.status:
            if "sim_bridge" in status.name:
                bridge.update({kv.key: kv.value for kv in status.values})

    probe.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 10)
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    estop = probe.create_publisher(Bool, "/car1/estop", latched)
    takeover = probe.create_publisher(Float32MultiArray, "/car1/intervention", 10)
    episode = probe.create_publisher(String, "/car1/episode_event", 10)
    presses = 0
    estop.publish(Bool(data=False))
    spin_until(probe, lambda: bool(bridge), 30.0)
    train = ["train", "--robot", "rc_car", "--robot-namespace", "/car1", "--max-iterations", iterations]
    train += ["--set", "off_policy.learning_starts=200", "--runs-root", runs, "--quiet"]
    trainer = processes.start("train", "robo-rl", *train)
    started = time.monotonic()
    deadline = started + 300.0
    driving = None  # when the operator started the first episode
    pressed_at = 0.0
    while trainer.poll() is None and time.monotonic() < deadline:
        since = time.monotonic() - driving if driving is not None else -1.0
        if 4.0 < since < 6.0:  # the operator drives: slowly ahead, straight
            takeover.publish(Float32MultiArray(data=[0.0, 0.2]))
        in_estop = 7.0 < since < 8.0
        estop.publish(Bool(data=in_estop))
        log = (log_dir / "train.log").read_text()
        waiting = log.count("then press reset") > log.count("the next episode starts")
        if waiting and not in_estop and time.monotonic() > pressed_at + 0.3:  # the operator answers the prompt
            episode.publish(String(data="reset"))  # again until it is seen (a new subscription may miss one)
            presses, pressed_at = presses + 1, time.monotonic()
        if driving is None and "the next episode starts" in log:
            driving = time.monotonic()
        rclpy.spin_once(probe, timeout_sec=0.0)
        time.sleep(0.02)
    spin_until(probe, lambda: False, 1.5)
    results = {"train_exit": trainer.wait(30), "bridge": bridge, "reset_presses": presses}
    finish(results, processes, ["train", "sim_bridge"])


if __name__ == "__main__":
    main()
