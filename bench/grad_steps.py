"""Off-policy gradient steps per second: robo_rl SAC / TD3 against Stable-Baselines3 SAC / TD3, same networks.

Both sides train 64-64 actors and two 64-64 critics with batch 256 on the observation and action sizes of
`quadrotor/hover` (17 and 4), from a replay buffer filled with 50k random transitions, on the CPU with the same
torch thread count; a gradient step is one critic update (plus the actor and temperature updates SAC makes every
step and TD3 every second step). robo_rl: `update(sample)` as its runner calls it; SB3: `model.train(N, 256)`.

The machine floor: the matrix products of one update (forward, and backward where gradients are needed; counted
from the layer sizes) divided by the rate this machine multiplies matrices of the batch's shape in one call.
No implementation on this CPU can take more gradient steps per second than that; the JSON reports it beside
the measured rates, so a ratio to SB3 can be read against the largest ratio the machine allows.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import stable_baselines3
import torch
from machine import machine_info, warn_if_busy
from stable_baselines3 import SAC as SB3SAC
from stable_baselines3 import TD3 as SB3TD3

from robo_rl.algorithms.sac import SAC, SACConfig
from robo_rl.algorithms.td3 import TD3, TD3Config
from robo_rl.storage.replay import ReplayBuffer, Transitions

RESULTS = Path(__file__).parent / "results" / "grad_steps.json"
OBS, ACT, HIDDEN, BATCH, FILL = 17, 4, (64, 64), 256, 50_000


class _SpacesOnly(gymnasium.Env):
    """An env with hover's spaces, for SB3 to build its networks and fill its buffer."""

    observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (OBS,), np.float32)
    action_space = gymnasium.spaces.Box(-1.0, 1.0, (ACT,), np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        return self.np_random.standard_normal(OBS).astype(np.float32), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        obs = self.np_random.standard_normal(OBS).astype(np.float32)
        return obs, float(self.np_random.standard_normal()), bool(self.np_random.random() < 0.01), False, {}


def filled_buffer(seed: int) -> ReplayBuffer:
    g = torch.Generator().manual_seed(seed)
    buffer = ReplayBuffer(FILL, OBS, OBS, ACT, "cpu")
    obs, next_obs = torch.randn(FILL, OBS, generator=g), torch.randn(FILL, OBS, generator=g)
    false = torch.zeros(FILL, dtype=torch.bool)
    buffer.add(
        Transitions(
            obs=obs,
            critic_obs=obs,
            actions=torch.rand(FILL, ACT, generator=g) * 2 - 1,
            rewards=torch.randn(FILL, generator=g),
            costs=torch.zeros(FILL),
            next_obs=next_obs,
            next_critic_obs=next_obs,
            terminated=torch.rand(FILL, generator=g) < 0.01,
            truncated=false,
            intervened=false,
            is_demo=false,
        )
    )
    return buffer


def robo_rl_rate(algo: str, steps: int) -> float:
    low, high = -torch.ones(ACT), torch.ones(ACT)
    if algo == "sac":
        model: Any = SAC(OBS, OBS, low, high, SACConfig(actor_hidden=HIDDEN, critic_hidden=HIDDEN))
    else:
        model = TD3(OBS, OBS, low, high, TD3Config(actor_hidden=HIDDEN, critic_hidden=HIDDEN))
    buffer, g = filled_buffer(0), torch.Generator().manual_seed(0)
    for _ in range(100):
        model.update(buffer.sample(BATCH, g))
    start = time.perf_counter()
    for _ in range(steps):
        model.update(buffer.sample(BATCH, g))
    return steps / (time.perf_counter() - start)


def sb3_rate(algo: str, steps: int) -> float:
    cls = SB3SAC if algo == "sac" else SB3TD3
    model = cls("MlpPolicy", _SpacesOnly(), policy_kwargs={"net_arch": list(HIDDEN)}, batch_size=BATCH,
                learning_starts=FILL, buffer_size=FILL, device="cpu", seed=0, verbose=0)  # fmt: skip
    model.learn(FILL)  # fills the buffer (learning starts at FILL: no updates yet)
    model.train(gradient_steps=100, batch_size=BATCH)
    start = time.perf_counter()
    model.train(gradient_steps=steps, batch_size=BATCH)
    return steps / (time.perf_counter() - start)


def update_flops(algo: str) -> float:
    """Multiply-adds of one gradient step's matrix products, times 2 (FLOPs)."""
    critic = sum(a * b for a, b in zip((OBS + ACT, *HIDDEN), (*HIDDEN, 1), strict=True))
    out = 2 * ACT if algo == "sac" else ACT
    actor = sum(a * b for a, b in zip((OBS, *HIDDEN), (*HIDDEN, out), strict=True))
    members = 2
    # critic step: next action (actor forward), target critics (forward), critics (forward + backward = 3x);
    # actor step: actor forward + backward, critics forward + backward to the action only (2x).
    critic_step = actor + members * critic + 3 * members * critic
    actor_step = 3 * actor + 2 * members * critic
    per_sample = critic_step + (actor_step if algo == "sac" else actor_step / 2)
    return 2.0 * BATCH * per_sample


def matmul_flops_per_s(seconds: float = 1.0) -> float:
    """This machine's rate for a (256 x 64) @ (64 x 64) product, the shape of most of an update's work."""
    a, b = torch.randn(BATCH, HIDDEN[0]), torch.randn(HIDDEN[0], HIDDEN[1])
    for _ in range(200):
        a @ b
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(100):
            a @ b
        count += 100
    return count * 2 * BATCH * HIDDEN[0] * HIDDEN[1] / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=2000, help="measured gradient steps per row")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="torch thread counts")
    parser.add_argument("--output", type=Path, default=RESULTS, help="JSON results path")
    args = parser.parse_args()
    load = warn_if_busy()
    rows = []
    for threads in args.threads:
        torch.set_num_threads(threads)
        flops = matmul_flops_per_s()
        for algo in ("sac", "td3"):
            ours, theirs = robo_rl_rate(algo, args.steps), sb3_rate(algo, args.steps)
            floor = flops / update_flops(algo)
            row = {"algo": algo, "threads": threads, "robo_rl_steps_per_s": round(ours),
                   "sb3_steps_per_s": round(theirs), "ratio": round(ours / theirs, 2),
                   "machine_floor_steps_per_s": round(floor), "max_ratio_this_machine": round(floor / theirs, 2),
                   "matmul_gflops": round(flops / 1e9, 1)}  # fmt: skip
            print(json.dumps(row), flush=True)
            rows.append(row)
    result = {"machine": machine_info(), "load_at_start": load, "sb3": stable_baselines3.__version__,
              "torch": torch.__version__, "batch": BATCH, "hidden": HIDDEN, "rows": rows}  # fmt: skip
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
