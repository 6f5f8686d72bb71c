"""Issue 54's benchmark: constrained runs against the unconstrained run of the same task, seed by seed.

For each seed, `robo-rl train` of the unconstrained preset (its task given the same constraint, so its episodes are
costed; the cost does not change its reward) and of the constrained preset; then each run's best policy
(checkpoints/best.pt: the constrained run's best within its cost gate) evaluated on the same `--episodes` episodes
(seed 2024, the run's evaluation task): mean return, mean cost per episode, success. Reported per seed: the
constrained return as a share of the unconstrained one, and the constrained cost as a share of the budget (the goal:
cost at most the budget + 10 %, return at least 90 %).

Pairs: `car` (rc_car_race_ppo / rc_car_race_ppo_lag, 3 m/s within 0.55 m of the edge, budget 40 per 30 s episode);
`car_sac` (SAC / SAC-Lagrangian on the same task and budget: 32 cars, 2 updates per step, 6,000 iterations each,
best.pt the best evaluation, within the budget + 10 % for SAC-Lagrangian).
Timings are wall-clock (the runner's own), with the 1-minute load average before each run in the result; one torch
thread per run. Usage: `python bench/safe_rl.py [--pairs car] [--seeds 0 1 2] [--out bench/results/safe_rl.json]`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch
from machine import machine_info, warn_if_busy

from robo_rl.api.evaluation import evaluate_run
from robo_rl.sim.rc_car.presets import EDGE_DISTANCE, EDGE_SPEED_BUDGET, EDGE_SPEED_LIMIT

ROOT = Path(__file__).resolve().parents[1]
EVAL_SEED = 2024


def _task_flags(settings: dict[str, float]) -> list[str]:
    flags = []
    for key, value in settings.items():
        flags += ["--set", f"task.config.{key}={value}", "--set", f"task.eval_config.{key}={value}"]
    return flags


CAR_CONSTRAINT = _task_flags({"cost_speed_limit": EDGE_SPEED_LIMIT, "cost_edge_distance": EDGE_DISTANCE})


def _settings(**values: object) -> list[str]:
    return [flag for key, value in values.items() for flag in ("--set", f"{key.replace('__', '.')}={value}")]


CAR_SAC = _settings(task__num_envs=32, off_policy__updates_per_step=2, off_policy__learning_starts=2000)
CAR_SAC += _settings(off_policy__loop__eval_interval=500, off_policy__loop__eval_episodes=50)
CAR_SAC += [*_settings(off_policy__loop__target_success_rate="null"), "--max-iterations", "6000"]
SAC_LAG_GATE = _settings(
    sac_lag__lagrange__cost_budget=EDGE_SPEED_BUDGET, off_policy__loop__max_eval_cost=1.1 * EDGE_SPEED_BUDGET
)

PAIRS: dict[str, dict[str, Any]] = {
    "car": {
        "unconstrained": ("rc_car_race_ppo", CAR_CONSTRAINT),
        "constrained": ("rc_car_race_ppo_lag", []),
        "budget": EDGE_SPEED_BUDGET,
    },
    "car_sac": {
        "unconstrained": ("rc_car_race_ppo", ["--algo", "sac", *CAR_CONSTRAINT, *CAR_SAC]),
        "constrained": ("rc_car_race_ppo", ["--algo", "sac_lag", *CAR_CONSTRAINT, *CAR_SAC, *SAC_LAG_GATE]),
        "budget": EDGE_SPEED_BUDGET,
    },
}
"""Per pair: (preset, flags) of the unconstrained and the constrained run, and the budget per episode."""


def train(preset: str, seed: int, root: Path, *extra: str) -> dict[str, Any]:
    """One `robo-rl train` run in a process of its own (one torch thread); its run directory, seconds, iterations."""
    load = os.getloadavg()[0]
    command = [sys.executable, "-m", "robo_rl.cli.main", "train", preset, "--seed", str(seed), "--quiet"]
    environment = os.environ | {"OMP_NUM_THREADS": "1"}
    subprocess.run([*command, "--runs-root", str(root), *extra], check=True, cwd=ROOT, env=environment)
    run = sorted((root / preset).iterdir())[-1]
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    return {
        "preset": preset,
        "seed": seed,
        "flags": list(extra),
        "training_s": rows[-1]["wall_time"],
        "iterations": rows[-1]["iteration"],
        "load_before": load,
        "run": run,
    }


def judge(run: Path, episodes: int) -> dict[str, Any]:
    """The run's best policy (best.pt; where no evaluation met a constrained run's cost gate there is none, and its
    last checkpoint stands in, flagged) on the judge's episodes."""
    best = run / "checkpoints" / "best.pt"
    checkpoint = best if best.is_file() else None
    result = evaluate_run(run, episodes, EVAL_SEED, checkpoint=checkpoint)
    return {
        "return": result.mean_return,
        "cost": result.mean_cost,
        "success_rate": result.success_rate,
        "policy": "best.pt" if checkpoint else "last checkpoint (no evaluation within the cost gate)",
    }


def pair(name: str, seed: int, root: Path, episodes: int) -> dict[str, Any]:
    spec = PAIRS[name]
    runs = {side: train(spec[side][0], seed, root / side, *spec[side][1]) for side in ("unconstrained", "constrained")}
    for run in runs.values():
        run.update(judge(run.pop("run"), episodes))
    free, kept = runs["unconstrained"], runs["constrained"]
    return {
        "pair": name,
        "seed": seed,
        "budget": spec["budget"],
        **runs,
        "return_share": kept["return"] / free["return"],
        "cost_share_of_budget": kept["cost"] / spec["budget"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", nargs="+", default=list(PAIRS), choices=list(PAIRS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "safe_rl.json")
    args = parser.parse_args()
    warn_if_busy()
    torch.set_num_threads(1)
    results = []
    with tempfile.TemporaryDirectory() as folder:
        for name in args.pairs:
            for seed in args.seeds:
                results.append(pair(name, seed, Path(folder), args.episodes))
                row = results[-1]
                print(
                    f"{name} seed {seed}: return {row['return_share']:.1%} of the unconstrained, "
                    f"cost {row['constrained']['cost']:.1f} of {row['budget']:g} "
                    f"(unconstrained {row['unconstrained']['cost']:.1f})",
                    flush=True,
                )
    args.out.write_text(json.dumps({"machine": machine_info(), "runs": results}, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
