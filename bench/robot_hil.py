"""Learning on the RC car, in robot time: minutes of the car's time to its first clean lap for
(a) SAC alone, (b) SAC + a demonstration lap (in the RLPD prior buffer), and
(c) (b) + a simulated operator correcting near the border.

Each runs `robo-rl train --robot rc_car --robot-link sim`: the same RobotEnv as on the car (safety filter, workspace,
recoveries, rewards) on the profile's task simulator in simulated time, the learner in the actor's process with
`off_policy.updates_per_step` gradient steps per 50 Hz step (what a learner process must sustain in real time:
100 updates/s at 2). A clean lap: one track length driven without a takeover and inside the workspace (SimLink's
judge). The demonstration: `record-demos --robot rc_car --robot-link sim --seconds 16` (one lap by the simulated
operator), in the prior buffer with `off_policy.prior_fraction=0.1`; interventions go there too. Every policy
starts untrained (random weights). In (a) and (b) the operator only answers reset prompts.

Usage: `python bench/robot_hil.py [--minutes 4] [--seeds 0 1 2]`; results in bench/results/robot_hil.json.
`python bench/robot_hil.py --ros --minutes 10`: (c) once in real time through ROS 2 (sim_bridge as the car, the
learner in its own process, the operator on teleop_node's topics; needs .venv-ros), until the first clean lap plus
2 s, or the minutes; results in bench/results/robot_hil_ros.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from machine import machine_info

RESULTS = Path(__file__).parent / "results" / "robot_hil.json"
ROBO_RL = str(Path(sys.executable).parent / "robo-rl")
DEMO_S = 16.0
"""Seconds of the operator's driving in the demonstration: about one lap of the 33.6 m kidney track."""
PRIOR_FRACTION = "off_policy.prior_fraction=0.1"
"""The prior buffer's share of each batch (demonstration and interventions). RLPD's 0.5 made every setup with a
prior buffer slower here (docs/BENCHMARKS.md); 0.1 is used for (b) and (c)."""
SETUPS = {
    "a_sac": ("resets", False),
    "b_sac_demos": ("resets", True),
    "c_sac_demos_human": ("simulated", True),
}


def run(name: str, seed: int, minutes: float, demo: Path, root: Path) -> dict[str, Any]:
    operator, with_demo = SETUPS[name]
    sets = ["off_policy.actor_learner=false", "off_policy.updates_per_step=2", "off_policy.learning_starts=500"]
    if with_demo:
        sets += [f"off_policy.prior_buffer={demo}"]
    if with_demo or operator == "simulated":
        sets += [PRIOR_FRACTION]
    cmd = [ROBO_RL, "train", "--robot", "rc_car", "--robot-link", "sim", "--operator", operator, "--seed", str(seed)]
    cmd += ["--max-iterations", str(round(minutes * 60 / 0.02)), "--runs-root", str(root / name), "--quiet"]
    for item in sets:
        cmd += ["--set", item]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    (metrics,) = (root / name).glob("*/*/metrics.jsonl")
    last = json.loads(metrics.read_text().splitlines()[-1])
    first = last.get("first_clean_lap_s")
    return {
        "setup": name,
        "seed": seed,
        "first_clean_lap_min": None if first is None or first != first else first / 60,
        "robot_min": last["robot_time"] / 60,
        "laps": last["laps"],
        "clean_laps": last["clean_laps"],
        "intervention_share": last["intervention_share"],
        "recoveries": last["recoveries"],
        "human_resets": last["human_resets"],
        "env_steps": last["env_steps"],
    }


def run_ros(minutes: float, demo: Path, root: Path) -> dict[str, Any]:
    """(c) in real time through ROS: tests/real/ros/scenarios/scenario_train_on_robot.py (sim_bridge as the car, the
    learner in its own process, the operator on teleop_node's topics), in the loopback-only network namespace."""
    from robo_rl.real.ros.netns import LOOPBACK_NETNS

    repo = Path(__file__).resolve().parents[1]
    python = repo / ".venv-ros" / "bin" / "python"
    scenario = repo / "tests" / "real" / "ros" / "scenarios" / "scenario_train_on_robot.py"
    sets = ["off_policy.updates_per_step=2", "off_policy.learning_starts=500", PRIOR_FRACTION]
    argv = [*LOOPBACK_NETNS, str(python), str(scenario), str(root), str(root / "runs"), str(demo), str(minutes * 60)]
    done = subprocess.run([*argv, *sets], capture_output=True, text=True, cwd=repo, timeout=minutes * 60 + 600)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    (metrics,) = (root / "runs").glob("*/*/metrics.jsonl")
    last = json.loads(metrics.read_text().splitlines()[-1])
    first = result["first_clean_lap_s"]
    return {
        "setup": "c_ros_real_time",
        "first_clean_lap_min": None if first is None else first / 60,
        "robot_min": result["driving_s"] / 60,
        "laps": result["operator_laps"],
        "clean_laps": result["clean_laps"],
        "intervention_share": last["intervention_share"],
        "operator_share_of_ticks": result["operator_share"],
        "env_steps": last["env_steps"],
        "missed_ticks": last["missed_ticks"],
        "invalid_steps": last.get("invalid_steps", 0),
        "learner_updates": last.get("policy_version", 0) * 10,
    }


def summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Per setup: the seeds with a clean lap, the median minutes to it (runs without one count as not reached),
    and the mean human share."""
    out = {}
    for name in SETUPS:
        rows = [r for r in results if r["setup"] == name]
        if not rows:
            continue
        times = sorted(r["first_clean_lap_min"] for r in rows if r["first_clean_lap_min"] is not None)
        out[name] = {
            "seeds": len(rows),
            "with_clean_lap": len(times),
            "median_first_clean_lap_min": times[len(rows) // 2] if len(times) > len(rows) // 2 else None,
            "mean_intervention_share": sum(r["intervention_share"] for r in rows) / len(rows),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=5.0, help="robot minutes per run (default 5)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--setups", nargs="+", default=list(SETUPS), choices=list(SETUPS))
    parser.add_argument("--parallel", type=int, default=2, help="runs at once (default 2)")
    parser.add_argument(
        "--ros", action="store_true", help="instead: (c) once in real time through ROS (.venv-ros), up to --minutes"
    )
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        demo = root / "demo.npz"
        record = [ROBO_RL, "record-demos", "rc_car/race", "--robot", "rc_car", "--robot-link", "sim"]
        subprocess.run([*record, "--seconds", str(DEMO_S), "-o", str(demo)], check=True, capture_output=True)
        if args.ros:
            results.append(run_ros(args.minutes, demo, root))
            print(json.dumps(results[-1]), flush=True)
            out = {"machine": machine_info(), "minutes": args.minutes, "demo_s": DEMO_S, "results": results}
            RESULTS.with_name("robot_hil_ros.json").write_text(json.dumps(out, indent=2) + "\n")
            return
        jobs = [(name, seed) for seed in args.seeds for name in args.setups]
        with ThreadPoolExecutor(args.parallel) as pool:  # robot time does not depend on the machine's load
            futures = [pool.submit(run, name, seed, args.minutes, demo, root / f"seed{seed}") for name, seed in jobs]
            for future in futures:
                results.append(future.result())
                print(json.dumps(results[-1]), flush=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    out = {"machine": machine_info(), "minutes": args.minutes, "demo_s": DEMO_S, "results": results}
    out["summary"] = summary(results)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
