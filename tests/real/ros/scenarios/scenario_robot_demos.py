"""Demonstrations on the robot, and back from its recording: sim_bridge stands in for the car in /car1, the
recorder node records its topics to MCAP, and `robo-rl record-demos --robot rc_car` stores what the operator drives
(the probe, driving all the time through /car1/intervention) for SECONDS. Then `robo-rl demos-from-bag` turns the
bag into a second demo file (from the trainer's transitions topic) and a third (`--rebuild`, from the car's
topics); the test compares them.

argv: LOG_DIR SECONDS. Reports the exit codes and the two files' paths.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import rclpy
from car_operator import CarOperator
from harness import BIN, Processes, finish, ros_args, spin_until

from robo_rl.robot.operator import OperatorConfig

REPO = Path(__file__).resolve().parents[4]
PARAMS = str(REPO / "launch" / "params" / "rc_car.yaml")
TOPICS = ["odom", "track", "drive_state", "drive", "cmd_vel", "intervention", "estop", "episode_event", "transitions"]


def main() -> None:
    log_dir, seconds = Path(sys.argv[1]), sys.argv[2]
    processes = Processes(log_dir)
    processes.start("sim_bridge", "sim_bridge", *ros_args("sim_bridge", "/car1"), "--params-file", PARAMS)
    bags = log_dir / "bags"
    recorder = processes.start(
        "recorder", "recorder", *ros_args("recorder", "/car1", topics=TOPICS, output_dir=str(bags))
    )
    rclpy.init()
    probe = rclpy.create_node("operator")
    operator = CarOperator(probe, "/car1", OperatorConfig(always=True))
    spin_until(probe, lambda: bool(operator.bridge) and bool(operator.fields), 30.0)
    direct, from_bag = log_dir / "direct.npz", log_dir / "from_bag.npz"
    record = ["record-demos", "rc_car/race", "--robot", "rc_car", "--robot-namespace", "/car1", "--seconds", seconds]
    recording = processes.start("record", "robo-rl", *record, "-o", str(direct))
    deadline = time.monotonic() + 120.0
    while recording.poll() is None and time.monotonic() < deadline:
        operator.tick(log_dir / "record.log")
        rclpy.spin_once(probe, timeout_sec=0.0)
        time.sleep(0.02)
    results = {"record_exit": recording.wait(30)}
    time.sleep(1.0)  # the recorder receives the last messages
    recorder.send_signal(2)
    results["recorder_exit"] = recorder.wait(30)
    found = [p for p in bags.iterdir() if p.is_dir()] if bags.is_dir() else []
    results["bags"] = [p.name for p in found]
    if len(found) == 1:
        convert = [str(BIN / "robo-rl"), "demos-from-bag", str(found[0]), "--profile", "rc_car", "--namespace", "/car1"]
        done = subprocess.run([*convert, "-o", str(from_bag)], capture_output=True, text=True, timeout=120)
        results |= {"convert_exit": done.returncode, "convert_output": (done.stdout + done.stderr)[-2000:]}
        rebuild = [*convert, "--rebuild", "-o", str(log_dir / "rebuilt.npz")]
        done = subprocess.run(rebuild, capture_output=True, text=True, timeout=120)
        results |= {"rebuild_exit": done.returncode, "rebuild_output": (done.stdout + done.stderr)[-2000:]}
    results |= {"direct": str(direct), "from_bag": str(from_bag), "rebuilt": str(log_dir / "rebuilt.npz")}
    results |= operator.results()
    finish(results, processes, ["record", "recorder", "sim_bridge"])


if __name__ == "__main__":
    main()
