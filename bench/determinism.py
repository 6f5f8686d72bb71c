"""What is bit-reproducible: the same preset and seed trained twice with the same torch thread count, and once
with another thread count, each in its own process; the metrics rows are compared exactly.

    python bench/determinism.py                      # quadrotor_hover_ppo, 30 iterations, threads 1 1 2
    python bench/determinism.py --preset pendulum_ppo --iterations 20 --threads 1 1 2

Each run is `robo-rl train PRESET --seed S --max-iterations N --threads T` with evaluations off (so the rows
are the training statistics and losses of every iteration, not a gate that ends runs early). Two runs match
when every row's training columns (returns, lengths, successes, losses, learning rate) are equal to the bit;
wall-clock columns are left out. The report gives, for each pair of runs, whether they match and the first
iteration where they differ.

Writes bench/results/determinism.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from machine import machine_info

RESULTS = Path(__file__).parent / "results" / "determinism.json"
TIMING = {"wall_time", "steps_per_s"}


def train(preset: str, seed: int, iterations: int, threads: int, root: Path) -> list[dict[str, Any]]:
    """The metrics rows of one `robo-rl train` run in its own process."""
    robo_rl = str(Path(sys.executable).parent / "robo-rl")
    command = [robo_rl, "train", preset, "--seed", str(seed), "--max-iterations", str(iterations), "--quiet"]
    command += ["--threads", str(threads), "--runs-root", str(root), "--set", "runner.loop.eval_interval=0"]
    command += ["--set", "runner.loop.target_success_rate=null", "--set", "runner.loop.target_return=null"]
    subprocess.run(command, check=True, capture_output=True)
    (run,) = (root / preset).iterdir()
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in row.items() if k not in TIMING and not k.startswith("eval_")} for row in rows]


def first_difference(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> int | None:
    """Iteration of the first row that differs (None: identical, same length)."""
    for left, right in zip(a, b, strict=False):
        if left != right:
            return int(left["iteration"])
    return None if len(a) == len(b) else min(len(a), len(b)) + 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="quadrotor_hover_ppo")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 1, 2], help="one run per entry, in order")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    runs = []
    with tempfile.TemporaryDirectory(prefix="determinism-") as tmp:
        for index, threads in enumerate(args.threads):
            started = time.time()
            rows = train(args.preset, args.seed, args.iterations, threads, Path(tmp) / str(index))
            runs.append({"threads": threads, "rows": rows, "seconds": time.time() - started})
            print(f"run {index}: {threads} thread(s), {len(rows)} iterations, {runs[-1]['seconds']:.1f} s", flush=True)
    pairs = []
    for i in range(len(runs)):
        for j in range(i + 1, len(runs)):
            differs_at = first_difference(runs[i]["rows"], runs[j]["rows"])
            pairs.append(
                {
                    "runs": [i, j],
                    "threads": [runs[i]["threads"], runs[j]["threads"]],
                    "identical": differs_at is None,
                    "first_different_iteration": differs_at,
                }
            )
            verdict = "bit-identical" if differs_at is None else f"differ from iteration {differs_at}"
            print(f"run {i} ({runs[i]['threads']} thr) vs run {j} ({runs[j]['threads']} thr): {verdict}")
    report = {
        "machine": machine_info(),
        "preset": args.preset,
        "seed": args.seed,
        "iterations": args.iterations,
        "pairs": pairs,
        "final_rows": [{"threads": r["threads"], "row": r["rows"][-1]} for r in runs],
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
