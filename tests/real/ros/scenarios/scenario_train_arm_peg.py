"""`robo-rl train --robot arm_peg` through ROS with sim_bridge standing in for the peg arm (mujoco/peg_insert, 10 Hz):
SAC (RLPD with demonstrations in the prior buffer), its learner in another process, joint-angle steps sent as absolute
JointTrajectory angles. The probe plays the operator through teleop_node's topics (arm_operator.py): it presses
reset when the trainer prompts for it (sim_bridge puts the arm back at the press), takes over during `TAKEOVERS`,
holds the e-stop during `ESTOP_AT`, and stops the trainer with SIGINT (Ctrl-C) `MAX_SECONDS` after the first
episode began. The loop's mechanics, not insertion.

argv: LOG_DIR RUNS_ROOT DEMOS MAX_SECONDS [SET ...]: the trainer's --set overrides follow. With the environment's
PEG_SCENARIO_RESETS_ONLY=1 the operator only answers reset prompts (no takeovers, no e-stop: bench/peg_ros_realtime.py).
With PEG_SCENARIO_OPERATOR=peg the operator is peg_operator.py's instead: the peg expert corrects through the topics
when it judges the policy heading wrong, within a 20 % budget (no e-stop, no fixed windows; bench/peg_ros_realtime.py
--operator).
Reports the trainer's exit code, the operator's takeovers, share and reset presses, and sim_bridge's last
diagnostics.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import rclpy
from arm_operator import ArmOperator
from harness import Processes, finish, ros_args, spin_until
from peg_operator import PegOperator

REPO = Path(__file__).resolve().parents[4]
PARAMS = str(REPO / "launch" / "params" / "arm_peg.yaml")
ESTOP_AT = (20.0, 21.0)
"""s after the first episode starts: the operator holds the e-stop."""
TAKEOVERS = ((4.0, 7.0), (30.0, 33.0))
"""s after the first episode starts: the operator drives."""


def main() -> None:
    log_dir, runs, demos, max_seconds = Path(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])
    resets_only = os.environ.get("PEG_SCENARIO_RESETS_ONLY") == "1"
    takeovers, estop_at = ((), (-1.0, -1.0)) if resets_only else (TAKEOVERS, ESTOP_AT)
    processes = Processes(log_dir)
    # the hole estimate's error of robot_arm_peg_sac's task (PEG_BENCHMARK_TASK): the arm's camera
    bridge = ros_args("sim_bridge", "/arm1", task_params=["num_threads=1", "hole_estimate_noise=0.0005"])
    processes.start("sim_bridge", "sim_bridge", *bridge, "--params-file", PARAMS)
    rclpy.init()
    probe = rclpy.create_node("operator")
    peg = os.environ.get("PEG_SCENARIO_OPERATOR") == "peg"
    if peg:
        takeovers, estop_at = (), (-1.0, -1.0)
    operator = PegOperator(probe, "/arm1") if peg else ArmOperator(probe, "/arm1")
    spin_until(probe, lambda: bool(operator.bridge), 60.0)
    train = ["train", "--robot", "arm_peg", "--robot-namespace", "/arm1", "--max-iterations", "1000000"]
    train += ["--set", f"off_policy.prior_buffer={demos}", "--runs-root", runs, "--quiet"]
    for override in sys.argv[5:]:
        train += ["--set", override]
    trainer = processes.start("train", "robo-rl", *train)
    log = log_dir / "train.log"
    driving = None  # when the first episode started
    stopped = False
    while trainer.poll() is None:
        since = time.monotonic() - driving if driving is not None else -1.0
        drive = any(start < since < end for start, end in takeovers)
        operator.tick(log, estop=estop_at[0] < since < estop_at[1], drive=drive)
        if driving is None and "the next episode starts" in log.read_text():
            driving = time.monotonic()
        if not stopped and driving is not None and since > max_seconds:
            trainer.send_signal(signal.SIGINT)
            stopped = True
        until = time.monotonic() + 0.02  # messages handled as they come (the peg operator answers in them)
        while (left := until - time.monotonic()) > 0:
            rclpy.spin_once(probe, timeout_sec=left)
    results = {"train_exit": trainer.wait(60)} | operator.results()
    results["driving_s"] = None if driving is None else time.monotonic() - driving
    finish(results, processes, ["train", "sim_bridge"])


if __name__ == "__main__":
    main()
