"""Did a refactor change what training computes? The same presets trained on an older commit and on the working
tree, with the same seed and one thread, compared number by number.

    python bench/same_numbers.py --ref a87c1cb [--iterations 10] [--presets pendulum_ppo quadrotor_hover_ppo ...]

Each side runs `robo-rl train PRESET --seed 0 --threads 1 --max-iterations N` with evaluations off (the older
commit imported through bench/before_after.py's folder of links, as there); the metrics rows (returns, losses, KL,
learning rate, success rates: every number but times and rates per second) must be equal. Writes
bench/results/same_numbers.json.
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

from before_after import shadow_package, worktree
from machine import machine_info

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "same_numbers.json"
PRESETS = ("pendulum_ppo", "quadrotor_hover_ppo", "rc_car_race_ppo", "pendulum_sac", "quadrotor_hover_sac")
"""PPO on three tasks (the task variants of hover and the race included), SAC on two."""
NO_EVALUATION = {
    "on_policy": ["runner.loop.eval_interval=0"],
    "off_policy": ["off_policy.loop.eval_interval=0", "off_policy.learning_starts=200"],
}
"""Evaluations off (the loop settings' keys, which both sides read), by the preset's training loop; off-policy
algorithms update after 200 steps."""
NEEDS = {"point_obstacle_reinflow": ["reinflow.bc_steps=0"]}
"""Settings a preset needs to start without files of the user's (ReinFlow's demonstrations: an untrained flow)."""
TIMING = ("time", "fps", "per_s", "seconds", "wall")


def train(tree: Path, pythonpath: Path | None, preset: str, iterations: int, root: Path) -> list[dict[str, Any]]:
    """The metrics rows of one short training of `preset` on `tree`."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(pythonpath) if pythonpath is not None else str(ROOT)
    settings = NO_EVALUATION[loop_of(preset)] + NEEDS.get(preset, [])
    overrides = [arg for o in settings for arg in ("--set", o)]
    command = [sys.executable, "-m", "robo_rl.cli.main", "train", preset, "--seed", "0", "--threads", "1"]
    command += ["--max-iterations", str(iterations), "--runs-root", str(root), *overrides]
    done = subprocess.run(command, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}")
    (metrics,) = root.glob("*/*/metrics.jsonl")
    return [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]


def loop_of(preset: str) -> str:
    """The training loop (on_policy, off_policy) of `preset`'s algorithm, read from the working tree."""
    from robo_rl.algorithms.registry import algorithm
    from robo_rl.sim.presets import all_presets

    return algorithm(all_presets()[preset]().algo).loop


def numbers(row: dict[str, Any]) -> dict[str, Any]:
    """The row without wall-clock figures."""
    return {key: value for key, value in row.items() if not any(word in key for word in TIMING)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ref", required=True, help="the older commit (e.g. the one before a refactor)")
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--presets", nargs="+", default=list(PRESETS))
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    before_tree = worktree(args.ref)
    shadow = shadow_package(before_tree)
    scratch = Path(tempfile.mkdtemp(prefix="same_numbers_"))
    results = {}
    for preset in args.presets:
        off_policy = loop_of(preset) == "off_policy"
        iterations = args.iterations * (100 if off_policy else 1)  # off-policy: an iteration is one env step
        try:
            before = train(before_tree, shadow, preset, iterations, scratch / f"{preset}_before")
            after = train(ROOT, None, preset, iterations, scratch / f"{preset}_after")
        except RuntimeError as err:  # a preset that needs a user's files (demonstrations) or a missing backend
            results[preset] = {"skipped": str(err)}
            print(f"{preset}: skipped ({err})", flush=True)
            continue
        differing = [
            {"iteration": b.get("iteration"), "before": numbers(b), "after": numbers(a)}
            for b, a in zip(before, after, strict=False)
            if numbers(b) != numbers(a)
        ]
        results[preset] = {
            "rows": [len(before), len(after)],
            "identical": len(before) == len(after) and not differing,
            "first_difference": differing[0] if differing else None,
        }
        print(f"{preset}: {len(before)} / {len(after)} rows, identical={results[preset]['identical']}", flush=True)
    report = {"ref": args.ref, "iterations": args.iterations, "presets": results, "machine": machine_info()}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
