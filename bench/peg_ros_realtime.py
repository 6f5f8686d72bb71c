"""Peg insertion learned through ROS in real time (issue 36's real-time runs): `robo-rl train --robot arm_peg`
(preset robot_arm_peg_sac: the learner of bench/peg_hil.py, in its own process) against sim_bridge standing in for
the arm at 10 Hz, with bench/peg_hil.py's 20 demonstrations in the RLPD prior buffer, for `--minutes` of robot time
(wall-clock time: the arm's clock). The probe answers the trainer's reset prompts (sim_bridge puts the arm back);
that is setup (b) on the robot path. With `--operator` it also corrects, setup (c): the peg expert, which sees the
true hole that sim_bridge reports on /diagnostics, takes over through teleop_node's topics when it judges the
policy heading wrong, within a 20 % budget (tests/real/ros/scenarios/peg_operator.py). The learned checkpoint is
then evaluated in simulation on 32 holes (`robo-rl eval`), as bench/peg_hil.py evaluates its runs.

Everything runs inside a loopback-only network namespace with .venv-ros's Python (the scenario
tests/real/ros/scenarios/scenario_train_arm_peg.py). Results in bench/results/peg_ros_realtime.json, one entry per
setup (b_rlpd_demos, c_rlpd_demos_operator): training episodes and successes per 5 robot minutes, the operator's
share, the trainer's counts and the evaluation.

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


def per_window(rows: list[dict], what: str, steps: int = 3000) -> list[float]:
    """Per 5 robot minutes (3,000 steps at 10 Hz) of the metrics rows: finished episodes, successful ones, or the
    operator's share of the steps."""
    out: list[float] = []
    before = 0.0  # interventions (a running count) before the window
    for start in range(0, rows[-1]["env_steps"], steps):
        window = [r for r in rows if start < r["env_steps"] <= start + steps]
        if not window:
            continue
        episodes = sum(r.get("episodes") or 0 for r in window)
        if what == "episodes":
            out.append(episodes)
        elif what == "successes":
            out.append(round(sum((r.get("train_success_rate") or 0.0) * (r.get("episodes") or 0) for r in window)))
        else:
            driven = (window[-1].get("interventions") or 0.0) - before
            out.append(round(driven / (window[-1]["env_steps"] - start), 4))
            before = window[-1].get("interventions") or 0.0
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=20.0, help="robot (wall-clock) minutes (default 20)")
    parser.add_argument("--operator", action="store_true", help="the peg expert corrects through the topics")
    args = parser.parse_args()
    from robo_rl.real.ros.netns import LOOPBACK_NETNS

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        demos = root / "demos.npz"
        sys.path.insert(0, str(Path(__file__).parent))
        from peg_hil import record_demonstrations

        record_demonstrations(demos)
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
        "training_episodes_per_5_min": per_window(rows, "episodes"),
        "training_successes_per_5_min": per_window(rows, "successes"),
        "operator_share_per_5_min": per_window(rows, "share"),
        "eval_success_32_holes": None if success is None else float(success[1]) / 100,
        "eval_output": evaluated.stdout.strip().splitlines()[-3:],
    }
    if args.operator:
        out["operator"] = {key: scenario.get(key) for key in ("takeovers", "operator_share", "reset_presses")}
        out["interventions"] = last.get("interventions")
    setup = "c_rlpd_demos_operator" if args.operator else "b_rlpd_demos"  # bench/peg_hil.py's names
    kept = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({**kept, setup: out}, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
