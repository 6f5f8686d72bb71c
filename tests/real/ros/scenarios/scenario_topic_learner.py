"""The learner as its own program on the ROS graph (robo_rl.robot.topic_learner): sim_bridge stands in for the car
in /car1, `robo-rl learn --robot rc_car` learns from the trainer's `transitions` topic and publishes weights on
`policy_weights`, and `robo-rl train --robot rc_car --set off_policy.learner_transport=ros` drives ITERATIONS steps
with them; the probe operator answers the reset prompts. The learner is stopped with SIGINT afterwards, once its
weights stopped coming for QUIET_S (it has worked through the transitions it received, however busy the machine).

argv: LOG_DIR RUNS_ROOT ITERATIONS. Reports both exit codes and the learner's last lines.
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

import rclpy
from car_operator import CarOperator
from harness import Processes, finish, ros_args, spin_until
from std_msgs.msg import Float32MultiArray

from robo_rl.robot.topic_learner import WEIGHTS_TOPIC

REPO = Path(__file__).resolve().parents[4]
PARAMS = str(REPO / "launch" / "params" / "rc_car.yaml")
DRAIN_S = 180.0
QUIET_S = 10.0
SETS = ["off_policy.learning_starts=200", "off_policy.updates_per_step=1", "off_policy.batch_size=64"]


def main() -> None:
    log_dir, runs, iterations = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    processes = Processes(log_dir)
    processes.start("sim_bridge", "sim_bridge", *ros_args("sim_bridge", "/car1"), "--params-file", PARAMS)
    sets = [item for s in SETS for item in ("--set", s)]
    learner = processes.start("learner", "robo-rl", "learn", "--robot", "rc_car", "--robot-namespace", "/car1", *sets)
    rclpy.init()
    probe = rclpy.create_node("operator")
    operator = CarOperator(probe, "/car1")
    weights = {"last": time.monotonic()}
    probe.create_subscription(
        Float32MultiArray, f"/car1/{WEIGHTS_TOPIC}", lambda _: weights.update(last=time.monotonic()), 10
    )
    spin_until(probe, lambda: bool(operator.bridge) and "waiting for transitions" in processes.log("learner"), 60.0)
    train = ["train", "--robot", "rc_car", "--robot-namespace", "/car1", "--max-iterations", iterations, "--quiet"]
    train += ["--runs-root", runs, "--set", "off_policy.learner_transport=ros", *sets]
    trainer = processes.start("train", "robo-rl", *train)
    deadline = time.monotonic() + 300.0
    while trainer.poll() is None and time.monotonic() < deadline:
        operator.tick(log_dir / "train.log")
        rclpy.spin_once(probe, timeout_sec=0.0)
        time.sleep(0.02)
    results = {"train_exit": trainer.wait(60)}
    # The learner may still work through its backlog (a busy machine): stop it once its weights stopped coming, i.e.
    # it has made the gradient steps its transitions allow (it publishes every PUBLISH_EVERY of them).
    drained = time.monotonic() + DRAIN_S
    while time.monotonic() < drained and time.monotonic() - weights["last"] < QUIET_S:
        rclpy.spin_once(probe, timeout_sec=0.05)
    learner.send_signal(signal.SIGINT)
    results["learner_exit"] = learner.wait(60)
    results["learner_log"] = processes.log("learner")[-2000:]
    finish(results, processes, ["train", "sim_bridge"])


if __name__ == "__main__":
    main()
