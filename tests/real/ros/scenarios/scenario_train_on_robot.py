"""`robo-rl train --robot rc_car` end to end until the car laps cleanly, with sim_bridge standing in for the car:
SAC (RLPD with a demonstration in the prior buffer) learns through the car's ROS topics in real time (50 Hz), its
learner in another process. The probe plays the operator through teleop_node's
topics (car_operator.py): it presses reset when the trainer prompts for it, takes over near the border, presses the
e-stop once for a second, and judges laps. Once a lap is clean (no takeover, inside the workspace) it lets the
policy drive `EXTRA_S` more seconds and stops the trainer with SIGINT (Ctrl-C), as a person would.

argv: LOG_DIR RUNS_ROOT DEMOS MAX_SECONDS [SET ...]: the trainer's --set overrides follow.
Reports the trainer's exit code, the seconds from the first episode to the first clean lap, laps, clean laps, the
operator's share of the driving, and sim_bridge's last diagnostics.
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

import rclpy
from car_operator import CarOperator
from harness import Processes, finish, ros_args, spin_until

REPO = Path(__file__).resolve().parents[4]
PARAMS = str(REPO / "launch" / "params" / "rc_car.yaml")
ESTOP_AT = (12.0, 13.0)
"""s after the first episode starts: the operator holds the e-stop."""
EXTRA_S = 2.0


def main() -> None:
    log_dir, runs, demos, max_seconds = Path(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])
    processes = Processes(log_dir)
    processes.start("sim_bridge", "sim_bridge", *ros_args("sim_bridge", "/car1"), "--params-file", PARAMS)
    rclpy.init()
    probe = rclpy.create_node("operator")
    operator = CarOperator(probe, "/car1")
    spin_until(probe, lambda: bool(operator.bridge), 30.0)
    train = ["train", "--robot", "rc_car", "--robot-namespace", "/car1", "--max-iterations", "1000000"]
    train += ["--set", f"off_policy.prior_buffer={demos}", "--runs-root", runs, "--quiet"]
    for override in sys.argv[5:]:
        train += ["--set", override]
    trainer = processes.start("train", "robo-rl", *train)
    log = log_dir / "train.log"
    driving = None  # when the first episode started
    stop_at = None
    while trainer.poll() is None:
        now = time.monotonic()
        since = now - driving if driving is not None else -1.0
        operator.tick(log, estop=ESTOP_AT[0] < since < ESTOP_AT[1])
        if driving is None and "the next episode starts" in log.read_text():
            driving = time.monotonic()
        if stop_at is None and (operator.first_clean_lap_at is not None or (driving and since > max_seconds)):
            stop_at = now + EXTRA_S
        if stop_at is not None and now > stop_at:
            trainer.send_signal(signal.SIGINT)
            stop_at = float("inf")
        rclpy.spin_once(probe, timeout_sec=0.0)
        time.sleep(0.02)
    results = {"train_exit": trainer.wait(60)} | operator.results()
    first = operator.first_clean_lap_at
    results["first_clean_lap_s"] = None if first is None or driving is None else first - driving
    results["driving_s"] = None if driving is None else time.monotonic() - driving
    finish(results, processes, ["train", "sim_bridge"])


if __name__ == "__main__":
    main()
