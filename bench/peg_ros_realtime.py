"""Peg insertion learned through ROS in real time (issue 36's one real-time run): `robo-rl train --robot arm_peg`
(preset robot_arm_peg_sac: the learner of bench/peg_hil.py, in its own process) against sim_bridge standing in for
the arm at 10 Hz, with bench/peg_hil.py's 20 demonstrations in the RLPD prior buffer, for `--minutes` of robot time
(wall-clock time: the arm's clock). The probe answers the trainer's reset prompts (sim_bridge puts the arm back) and
takes no corrections: the corrections of bench/peg_hil.py's setup (c) come from an operator who sees the true hole,
which only the in-process simulation has; this run is setup (b) on the robot path. The learned checkpoint is then
evaluated in simulation on 32 holes (`robo-rl eval`), as bench/peg_hil.py evaluates its runs.

Everything runs inside a loopback-only network namespace with .venv-ros's Python (tests/real/ros's scenario
scenario_train_arm_peg.py with PEG_SCENARIO_RESETS_ONLY=1). Results in bench/results/peg_ros_realtime.json.

With `--operator` the operator corrects as in setup (c), through teleop_node's topics: the peg expert sees the true
hole that sim_bridge reports on /diagnostics and takes over when it judges the policy heading wrong, within a 20 %
budget (the scenario with PEG_SCENARIO_OPERATOR=peg: tests/real/ros/scenarios/peg_operator.py); the output then
records the operator's takeovers and share and the interventions the trainer stored.

Usage: `python bench/peg_ros_realtime.py [--minutes 20] [--operator]` (needs `make ros-venv`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from machine import machine_info

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results" / "peg_ros_realtime.json"
ROBO_RL = str(Path(sys.executable).parent / "robo-rl")
ROS_PYTHON = Path(os.environ.get("ROBO_RL_ROS_PYTHON", ROOT / ".venv-ros" / "bin" / "python"))
SCENARIO = ROOT / "tests" / "real" / "ros" / "scenarios" / "scenario_train_arm_peg.py"


def demonstrations(path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from peg_hil import DEMO_EPISODES, task_params

    cmd = [ROBO_RL, "record-demos", "mujoco/peg_insert", "--episodes", str(DEMO_EPISODES), "--seed", "7"]
    cmd += [arg for item in task_params() for arg in ("--param", item)]
    subprocess.run([*cmd, "-o", str(path)], check=True, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=20.0, help="robot (wall-clock) minutes (default 20)")
    parser.add_argument("--operator", action="store_true", help="the peg expert corrects through the topics")
    args = parser.parse_args()
    from robo_rl.real.ros.netns import LOOPBACK_NETNS

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        demos = root / "demos.npz"
        demonstrations(demos)
        (root / "logs").mkdir()
        argv = [*LOOPBACK_NETNS, str(ROS_PYTHON), str(SCENARIO), str(root / "logs"), str(root / "runs"), str(demos)]
        argv.append(str(args.minutes * 60))
        env = {**os.environ, "PEG_SCENARIO_RESETS_ONLY": "1"}
        if args.operator:
            env["PEG_SCENARIO_OPERATOR"] = "peg"
        print(f"training through ROS for {args.minutes:g} robot minutes", flush=True)
        done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=env)
        scenario = json.loads(done.stdout.strip().splitlines()[-1])
        (run,) = (root / "runs" / "robot_arm_peg_sac").iterdir()
        rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
        evaluated = subprocess.run(
            [ROBO_RL, "eval", str(run), "--episodes", "32", "--threads", "1"], capture_output=True, text=True
        )
    last = rows[-1]
    success = re.search(r"success rate ([0-9.]+)%", evaluated.stdout)
    out = {
        "machine": machine_info(),
        "minutes": args.minutes,
        "train_exit": scenario["train_exit"],
        "env_steps": last["env_steps"],
        "robot_time_s": last.get("robot_time"),
        "invalid_steps": last.get("invalid_steps", 0),
        "robot_episodes": last.get("robot_episodes"),
        "policy_version": last.get("policy_version"),
        "bridge": {k: v for k, v in scenario.get("bridge", {}).items() if k in ("steps", "episodes", "put_backs")},
        "eval_success_32_holes": None if success is None else float(success[1]) / 100,
        "eval_output": evaluated.stdout.strip().splitlines()[-3:],
    }
    if args.operator:
        out["operator"] = {key: scenario.get(key) for key in ("takeovers", "operator_share", "reset_presses")}
        out["interventions"] = last.get("interventions")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
