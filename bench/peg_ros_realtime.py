"""Peg insertion learned through ROS in real time: `robo-rl train --robot arm_peg` (preset robot_arm_peg_sac, the
learner in its own process: bench/peg_hil.py's two critics at one gradient step per robot step, or with `--ensemble`
RLPD's ten at two, the preset's own) against sim_bridge standing in for the arm at 10 Hz, with
bench/peg_hil.py's 20 demonstrations in the RLPD prior buffer, for `--minutes` of robot time (wall-clock time: the
arm's clock). The probe answers the trainer's reset prompts (sim_bridge puts the arm back); that is setup (b) on the
robot path. With `--operator` it also corrects, setup (c): the peg expert, which sees the true hole that sim_bridge
reports on /diagnostics, takes over through teleop_node's topics when it judges the policy heading wrong, within a
20 % budget (tests/real/ros/scenarios/peg_operator.py). It answers each observation in its input callback and says
`intervening` false when it lets go; `--late-operator` is the operator of the first real-time runs instead (polled
from a 50 Hz tick, its last action repeated every tick: the trainer executed its answer to the previous
observation). The checkpoint at 10, 20 and 30 robot minutes (the run's latest.pt, saved every 30 s, copied as the
metrics pass each mark) is evaluated in simulation on 32 holes (`robo-rl eval`), as bench/peg_hil.py evaluates its
runs.

Everything runs inside a loopback-only network namespace with .venv-ros's Python (the scenario
tests/real/ros/scenarios/scenario_train_arm_peg.py). Results in bench/results/peg_ros_realtime.json: `runs`, one
entry per run (setup, seed, operator): training episodes and successes per 5 robot minutes, the operator's share,
the trainer's counts and the evaluations; the first runs' entries (before the operator answered on time) are kept
under their setup names.

Usage: `python bench/peg_ros_realtime.py [--minutes 30] [--seed 0] [--operator [--late-operator]] [--ensemble]` (needs
`make ros-venv`). Real time: run seeds one after another on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from machine import machine_info
from peg_ros_gap import ENSEMBLE, TWO_CRITICS

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


MARKS = (6000, 12000)
"""Env steps (10 and 20 robot minutes) at which the run's checkpoint is kept for evaluation."""


def keep_checkpoints(runs: Path, keep: Path, done: threading.Event) -> None:
    """Copy the run's latest.pt once its metrics pass each of `MARKS` (the copy is up to one 30 s save late: its
    own step count is what the evaluation reports)."""
    marks = list(MARKS)
    while marks and not done.wait(2.0):
        metrics = list(runs.glob("robot_arm_peg_sac/*/metrics.jsonl"))
        if not metrics:
            continue
        lines = metrics[0].read_text().splitlines()
        steps = json.loads(lines[-1])["env_steps"] if lines else 0
        latest = metrics[0].parent / "checkpoints" / "latest.pt"
        if steps >= marks[0] and latest.is_file():
            time.sleep(31.0)  # the next save is past the mark
            shutil.copy(latest, keep / f"at_{marks.pop(0)}.pt")


def evaluate(run: Path, checkpoint: Path | None) -> float | None:
    """Success rate of the run's policy (`checkpoint`, else its latest) on 32 holes in simulation."""
    cmd = [ROBO_RL, "eval", str(run), "--episodes", "32", "--threads", "1"]
    if checkpoint is not None:
        cmd += ["--checkpoint", str(checkpoint)]
    out = subprocess.run(cmd, capture_output=True, text=True).stdout
    success = re.search(r"success rate ([0-9.]+)%", out)
    return None if success is None else float(success[1]) / 100


def learner_settings(config_yaml: str) -> dict[str, str]:
    """The run's resolved SAC critic count, target subset, actor's Q and gradient steps per robot step (from its
    config.yaml: the first of each key, the `sac:` section's, which comes before the other algorithms')."""
    keys = ("num_critics", "critic_subset", "actor_q", "updates_per_step")
    found = [re.match(r"\s*(\w+):\s*(\S+)", line) for line in config_yaml.splitlines()]
    settings: dict[str, str] = {}
    for m in found:
        if m and m[1] in keys:
            settings.setdefault(m[1], m[2])
    return settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=30.0, help="robot (wall-clock) minutes (default 30)")
    parser.add_argument("--seed", type=int, default=0, help="the trainer's seed (default 0)")
    parser.add_argument("--operator", action="store_true", help="the peg expert corrects through the topics")
    parser.add_argument(
        "--late-operator", action="store_true", help="with --operator: the first runs' operator, one period late"
    )
    parser.add_argument(
        "--ensemble",
        action="store_true",
        help="the learner with RLPD's 10-critic LayerNorm ensemble at 2 gradient steps per robot step "
        "(bench/peg_ros_gap.py's ENSEMBLE, robot_arm_peg_sac's own now); without it, two critics at one step "
        "(TWO_CRITICS, the first runs' learner)",
    )
    parser.add_argument("--output", type=Path, default=RESULTS, help=f"results file (default {RESULTS})")
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
        argv += [str(args.minutes * 60), f"seed={args.seed}"]
        learner = ENSEMBLE if args.ensemble else TWO_CRITICS
        argv += [override for override in learner if override != "--set"]
        env = {**os.environ, "PEG_SCENARIO_RESETS_ONLY": "1"}
        if args.operator:
            env["PEG_SCENARIO_OPERATOR"] = "peg"
            if args.late_operator:
                env["PEG_OPERATOR_REPEAT"] = "1"
        print(f"training through ROS for {args.minutes:g} robot minutes", flush=True)
        (root / "kept").mkdir()
        done_event = threading.Event()
        keeper = threading.Thread(target=keep_checkpoints, args=(root / "runs", root / "kept", done_event))
        keeper.start()
        done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=env)
        done_event.set()
        keeper.join()
        scenario = json.loads(done.stdout.strip().splitlines()[-1])
        (run,) = (root / "runs" / "robot_arm_peg_sac").iterdir()
        rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
        evaluations = {
            f"{mark // 600} min": evaluate(run, root / "kept" / f"at_{mark}.pt")
            for mark in MARKS
            if (root / "kept" / f"at_{mark}.pt").is_file()
        }
        evaluations[f"{args.minutes:g} min (end)"] = evaluate(run, None)
        resolved = (run / "config.yaml").read_text()
    last = rows[-1]
    setup = "c_rlpd_demos_operator" if args.operator else "b_rlpd_demos"  # bench/peg_hil.py's names
    out = {
        "setup": setup,
        "seed": args.seed,
        "operator": ("late" if args.late_operator else "on time") if args.operator else None,
        "learner": "ensemble_utd2" if args.ensemble else "sac",
        "learner_settings": learner_settings(resolved),
        "machine": machine_info(),
        "minutes": args.minutes,
        "train_exit": scenario["train_exit"],
        "env_steps": last["env_steps"],
        "robot_time_s": last.get("robot_time"),
        "invalid_steps": last.get("invalid_steps", 0),
        "robot_episodes": last.get("robot_episodes"),
        "policy_version": last.get("policy_version"),
        "bridge": {
            k: v
            for k, v in scenario.get("bridge", {}).items()
            if k in ("steps", "episodes", "put_backs", "late_commands")
        },
        "training_episodes_per_5_min": per_window(rows, "episodes"),
        "training_successes_per_5_min": per_window(rows, "successes"),
        "operator_share_per_5_min": per_window(rows, "share"),
        "eval_success_32_holes": evaluations,
        "dropped_by_learner": last.get("learner_dropped"),
    }
    if args.operator:
        out["operator"] = {key: scenario.get(key) for key in ("takeovers", "operator_share", "reset_presses")}
        out["interventions"] = last.get("interventions")
    kept = json.loads(args.output.read_text()) if args.output.is_file() else {}
    kept["runs"] = [
        r
        for r in kept.get("runs", [])
        if (r["setup"], r["seed"], r["operator"], r.get("learner", "sac"))
        != (setup, args.seed, out["operator"], out["learner"])
    ] + [out]
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(kept, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
