"""Env-steps per second: batched torch Pendulum vs Gymnasium's SyncVectorEnv of Pendulum-v1.

Each contender runs random actions for a warm-up, then for `--seconds` of wall time; the table and
`bench/results/pendulum_steps.json` report env-steps/s (one env advanced one control period = one env-step).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path

import gymnasium
import numpy as np
import torch
from machine import machine_info

from robo_rl.sim.pendulum import Pendulum

RESULTS = Path(__file__).parent / "results" / "pendulum_steps.json"
GYM_ENVS = 64
WARMUP_STEPS = 50


def time_steps(step: Callable[[], None], seconds: float, num_envs: int, sync: Callable[[], None]) -> dict:
    """Call `step` for `seconds` after a warm-up; returns steps, elapsed s and env-steps/s."""
    for _ in range(WARMUP_STEPS):
        step()
    sync()
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        step()
        calls += 1
    sync()
    elapsed = time.perf_counter() - start
    return {
        "num_envs": num_envs,
        "steps": calls,
        "seconds": elapsed,
        "env_steps_per_s": calls * num_envs / elapsed,
    }


def bench_torch(num_envs: int, device: str, seconds: float) -> dict:
    env = Pendulum(num_envs, device=device, seed=0)
    generator = torch.Generator(device=device).manual_seed(1)
    high = env.action_spec.high_tensor(device)

    def step() -> None:
        action = (torch.rand(num_envs, 1, generator=generator, device=device) * 2 - 1) * high
        env.step(action)

    sync = torch.cuda.synchronize if device == "cuda" else lambda: None
    return time_steps(step, seconds, num_envs, sync)


def bench_gymnasium(num_envs: int, seconds: float) -> dict:
    envs = gymnasium.vector.SyncVectorEnv([lambda: gymnasium.make("Pendulum-v1")] * num_envs)
    envs.reset(seed=0)
    rng = np.random.default_rng(1)

    def step() -> None:
        envs.step(rng.uniform(-2.0, 2.0, size=(num_envs, 1)).astype(np.float32))

    result = time_steps(step, seconds, num_envs, lambda: None)
    envs.close()
    return result


def print_table(results: dict[str, dict], baseline: str) -> None:
    print(f"{'contender':<28}{'envs':>8}{'env-steps/s':>16}{'x baseline':>12}")
    for name, r in results.items():
        ratio = r["env_steps_per_s"] / results[baseline]["env_steps_per_s"]
        print(f"{name:<28}{r['num_envs']:>8}{r['env_steps_per_s']:>16,.0f}{ratio:>12.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="measured wall time per contender (s)")
    parser.add_argument("--num-envs", type=int, default=4096, help="envs in the batched torch Pendulum")
    parser.add_argument("--output", type=Path, default=RESULTS, help="where to write the JSON results")
    args = parser.parse_args()

    baseline = "gymnasium SyncVectorEnv"
    results = {baseline: bench_gymnasium(GYM_ENVS, args.seconds)}
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    for device in devices:
        results[f"robo_rl Pendulum ({device})"] = bench_torch(args.num_envs, device, args.seconds)
    print_table(results, baseline)

    ratios = {
        name: r["env_steps_per_s"] / results[baseline]["env_steps_per_s"]
        for name, r in results.items()
        if name != baseline
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "machine": machine_info(),
        "baseline": baseline,
        "results": results,
        "ratio_vs_baseline": ratios,
    }
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
