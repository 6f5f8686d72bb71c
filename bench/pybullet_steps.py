"""PyBullet backend throughput: env-steps/s of `pybullet/racecar_goal`, batched vs Gymnasium's SyncVectorEnv.

For each number of envs (1, 4, 16, 64 by default) two contenders step the same task with uniform random actions
(so goals are missed, cars get lost and episodes auto-reset as in early training), after a warm-up, for
`--seconds` of wall time:

- batched: one `RacecarGoal` holding N PyBullet clients, observations/rewards vectorized with numpy;
- SyncVectorEnv: `gymnasium.vector.SyncVectorEnv` of N one-env `GymnasiumEnv` copies of the same task (one
  client each, one Python env step and numpy/torch conversion per copy).

Both simulate the same physics (PyBullet steps dominate), so the ratio measures what batching saves in per-env
Python work. The time to build the N clients is reported, not counted. JSON goes to
`bench/results/pybullet_steps.json`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import gymnasium
import numpy as np
import torch
from machine import machine_info, warn_if_busy
from pendulum_steps import time_steps

from robo_rl.sim import make
from robo_rl.sim.gymnasium_adapter import GymnasiumEnv

TASK = "pybullet/racecar_goal"
RESULTS = Path(__file__).parent / "results" / "pybullet_steps.json"
BATCHES = (1, 4, 16, 64)
ACTION_BATCHES = 16
"""Pre-drawn random action batches cycled through (drawing is not what is measured)."""


def _random_actions(num_envs: int, low: np.ndarray, high: np.ndarray, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(low, high, size=(num_envs, low.size)).astype(np.float32) for _ in range(ACTION_BATCHES)]


def bench_batched(num_envs: int, seconds: float, params: tuple[str, ...]) -> dict:
    start = time.perf_counter()
    env = make(TASK, num_envs, seed=0, params=params)
    build_s = time.perf_counter() - start
    low, high = np.asarray(env.action_spec.low), np.asarray(env.action_spec.high)
    actions = [torch.from_numpy(a) for a in _random_actions(num_envs, low, high, seed=1)]
    count = 0

    def step() -> None:
        nonlocal count
        env.step(actions[count % ACTION_BATCHES])
        count += 1

    row = time_steps(step, seconds, num_envs, lambda: None)
    env.close()
    return row | {"build_s": build_s}


def bench_sync_vector(num_envs: int, seconds: float, params: tuple[str, ...]) -> dict:
    start = time.perf_counter()
    envs = gymnasium.vector.SyncVectorEnv(
        [lambda: GymnasiumEnv(make(TASK, 1, seed=0, params=params)) for _ in range(num_envs)]
    )
    envs.reset(seed=0)
    build_s = time.perf_counter() - start
    space = envs.single_action_space
    actions = _random_actions(num_envs, space.low.astype(np.float64), space.high.astype(np.float64), seed=1)
    count = 0

    def step() -> None:
        nonlocal count
        envs.step(actions[count % ACTION_BATCHES])
        count += 1

    row = time_steps(step, seconds, num_envs, lambda: None)
    envs.close()
    for env in envs.envs:
        env.unwrapped.env.close()  # release the PyBullet clients now, not at garbage collection
    return row | {"build_s": build_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=3.0, help="measured wall time per point (s)")
    parser.add_argument("--batches", type=int, nargs="+", default=BATCHES, help="numbers of envs")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--param", action="append", default=[], help="task setting KEY=VALUE (repeatable)")
    parser.add_argument("--output", type=Path, default=RESULTS, help="JSON results path")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    load = warn_if_busy()
    params = tuple(args.param)
    rows = []
    print(f"{'envs':>6}{'batched env-steps/s':>22}{'SyncVectorEnv env-steps/s':>28}{'ratio':>8}")
    for num_envs in args.batches:
        batched = bench_batched(num_envs, args.seconds, params)
        sync = bench_sync_vector(num_envs, args.seconds, params)
        ratio = batched["env_steps_per_s"] / sync["env_steps_per_s"]
        rows.append({"num_envs": num_envs, "batched": batched, "sync_vector_env": sync, "ratio": ratio})
        line = f"{num_envs:>6}{batched['env_steps_per_s']:>22,.0f}{sync['env_steps_per_s']:>28,.0f}{ratio:>8.2f}"
        print(line, flush=True)
    report = {
        "command": " ".join([sys.executable, *sys.argv]),
        "task": TASK,
        "task_params": list(params),
        "load_average_at_start": load,
        "machine": machine_info(),
        "rows": rows,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
