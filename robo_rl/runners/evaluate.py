"""Deterministic evaluation of an actor on a batched env: one episode per env."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from robo_rl.envs import BatchedEnv

EVAL_SEED_OFFSET = 1_000_003
"""Evaluation envs are reset with `seed + EVAL_SEED_OFFSET`: fixed held-out initial states per training seed."""


def evaluation_due(iteration: int, max_iterations: int, interval: int) -> bool:
    """Evaluate every `interval` iterations (0: never periodically) and always after the last one."""
    return iteration >= max_iterations or (interval > 0 and iteration % interval == 0)


@dataclass(frozen=True)
class EvalResult:
    returns: tuple[float, ...]
    """Undiscounted return of each evaluated episode."""
    lengths: tuple[int, ...]
    """Length of each episode in control steps."""

    @property
    def mean_return(self) -> float:
        return sum(self.returns) / len(self.returns)

    @property
    def std_return(self) -> float:
        mean = self.mean_return
        return math.sqrt(sum((r - mean) ** 2 for r in self.returns) / len(self.returns))


@torch.no_grad()
def evaluate(env: BatchedEnv, actor: Callable[[torch.Tensor], torch.Tensor], seed: int) -> EvalResult:
    """Run each of the env's `num_envs` copies for exactly one episode with `actor` `(N, obs) → (N, act)`.

    The env is reset with `seed`, so the same seed evaluates the same initial states.
    """
    obs = env.reset(seed=seed)
    returns = torch.zeros(env.num_envs, device=env.device)
    lengths = torch.zeros(env.num_envs, dtype=torch.long, device=env.device)
    running = torch.ones(env.num_envs, dtype=torch.bool, device=env.device)
    for _ in range(env.max_episode_steps):
        obs, reward, terminated, truncated, _ = env.step(actor(obs))
        returns += reward * running
        lengths += running.long()
        running &= ~(terminated | truncated)
        if not bool(running.any()):
            break
    return EvalResult(tuple(returns.tolist()), tuple(lengths.tolist()))
