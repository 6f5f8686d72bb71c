"""Scaling with processes (issue 10): env-steps/s and time to the preset's target, 1 vs N processes.

Each configuration trains `robo-rl train PRESET --nproc N` (torchrun; gloo on CPU, NCCL with `--device cuda`) as a
subprocess, with `torch` threads split evenly between the processes (`--threads` in all; by default robo-rl's
choice: the usable CPUs less one, split), and reads rank 0's metrics.jsonl: the median env-steps/s over iterations
(every rank's steps), the training wall-clock and env steps at the first evaluation that reached the preset's
target, and the command's whole wall-clock (start-up included).
Each process runs the preset's own `task.num_envs`, so N processes step N times the envs of one.

Usage: `python bench/distributed.py [--presets pendulum_ppo pendulum_sac] [--nprocs 1 2] [--threads N]
[--device cpu]`; results go to bench/results/distributed.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from machine import machine_info, warn_if_busy

from robo_rl.api.configs import resolve_config
from robo_rl.api.threads import choose_threads, usable_cpus

RESULTS = Path(__file__).parent / "results" / "distributed.json"


def train(preset: str, nproc: int, threads: int | None, device: str, root: Path) -> dict[str, Any]:
    per_process = choose_threads(None, usable_cpus(), nproc) if threads is None else max(1, threads // nproc)
    env = {**os.environ, "OMP_NUM_THREADS": str(per_process), "GLOO_SOCKET_IFNAME": "lo"}
    command = [sys.executable, "-m", "robo_rl.cli.main", "train", preset, "--quiet", "--runs-root", str(root)]
    command += ["--nproc", str(nproc), "--device", device]
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    (run,) = (root / preset).iterdir()
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    reached = rows[-1] if _stopped_early(rows[-1], preset) else None
    return {
        "preset": preset,
        "nproc": nproc,
        "threads_per_process": per_process,
        "device": device,
        "median_env_steps_per_s": statistics.median(r["steps_per_s"] for r in rows),
        "iterations": rows[-1]["iteration"],
        "env_steps": rows[-1]["env_steps"],
        "train_seconds": rows[-1]["wall_time"],
        "reached": reached is not None,
        "seconds_to_target": None if reached is None else reached["wall_time"],
        "env_steps_to_target": None if reached is None else reached["env_steps"],
        "command_seconds": seconds,
    }


def _stopped_early(last: dict[str, Any], preset: str) -> bool:
    """The run reached its preset's target: it stopped at an evaluation before its last iteration."""
    cfg = resolve_config(preset, [])
    return last.get("eval_return") is not None and last["iteration"] < cfg.loop.max_iterations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--presets", nargs="+", default=["pendulum_ppo", "pendulum_sac", "quadrotor_hover_ppo"])
    parser.add_argument("--nprocs", type=int, nargs="+", default=[1, 2])
    parser.add_argument(
        "--threads", type=int, help="torch threads in all, split between processes (default: what robo-rl chooses)"
    )
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--output", help="JSON file (default: bench/results/distributed.json)")
    args = parser.parse_args()
    warn_if_busy()
    rows = []
    for preset in args.presets:
        for nproc in args.nprocs:
            with tempfile.TemporaryDirectory() as tmp:
                row = train(preset, nproc, args.threads, args.device, Path(tmp))
            rows.append(row)
            print(
                f"{preset} nproc {nproc}: {row['median_env_steps_per_s']:,.0f} env-steps/s, target "
                f"{'reached' if row['reached'] else 'not reached'} at {row['seconds_to_target']} s "
                f"({row['env_steps_to_target']} steps), command {row['command_seconds']:.1f} s",
                flush=True,
            )
    output = RESULTS if args.output is None else Path(args.output)
    output.write_text(json.dumps({"machine": machine_info(), "command": " ".join(sys.argv), "rows": rows}, indent=1))
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
