"""The expected episode cost J_c that a Lagrange multiplier steps on (`robo_rl.algorithms.lagrange`), estimated from
the steps a constrained algorithm collects: PPO-Lagrangian's rollouts, SAC-Lagrangian's env steps.

Two estimates of the same quantity:
- ended episodes (OmniSafe's): the mean cost of the episodes that ended since the last estimate. It has nothing to
  say until an episode ends, which for a good policy on a task with long episodes is the time limit: with 32-step
  rollouts and 1500-step car episodes the price stayed 0 while the evaluation's cost went 16 -> 94 -> 435.
- rate (the default of both algorithms): the cost per step of the steps collected since the last estimate, times the
  mean episode length. By the renewal-reward theorem the long-run cost per step of envs running episode after
  episode is E[episode cost] / E[episode length], so the product estimates E[episode cost] from every step, and
  reacts from the first. The mean length starts at the task's time limit and pools the lengths of the episodes
  that end with the estimate so far, which counts as `num_envs` episodes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from robo_rl.distributed import LOCAL, Reducer


@dataclass(frozen=True)
class CostSums:
    """Steps' costs as the estimates read them (sums over envs, 0-d tensors)."""

    ended_cost: torch.Tensor
    """The summed costs of the episodes that ended in these steps (their earlier steps included)."""
    ended_count: torch.Tensor
    """How many episodes ended in them."""
    ended_steps: torch.Tensor
    """Their summed lengths in steps."""
    step_cost: torch.Tensor
    """The sum of every step's cost."""
    steps: torch.Tensor
    """The number of env steps (T x N)."""


class EpisodeCosts:
    """Each env's cost and length so far in its episode, carried from call to call."""

    def __init__(self, num_envs: int, device: torch.device | str) -> None:
        self.running = torch.zeros(num_envs, device=device)
        self.lengths = torch.zeros(num_envs, device=device)

    def ended(self, costs: torch.Tensor, dones: torch.Tensor) -> CostSums:
        """The sums of `(T, N)` costs and episode ends, T steps of the N envs in order."""
        total = torch.zeros((), device=costs.device)
        count = torch.zeros((), device=costs.device)
        steps = torch.zeros((), device=costs.device)
        for t in range(costs.shape[0]):
            self.running += costs[t]
            self.lengths += 1.0
            done = dones[t].to(costs.dtype)
            total += (self.running * done).sum()
            count += done.sum()
            steps += (self.lengths * done).sum()
            self.running *= 1.0 - done
            self.lengths *= 1.0 - done
        size = torch.tensor(float(costs.numel()), device=costs.device)
        return CostSums(total, count, steps, costs.sum(), size)


class EpisodeLength:
    """The mean episode length the rate estimate multiplies by: it starts at the task's time limit, and each update
    pools the lengths of the episodes that ended with the estimate so far, weighted as `weight` episodes."""

    def __init__(self, time_limit: int, weight: float) -> None:
        if time_limit < 1 or not weight > 0:
            raise ValueError("EpisodeLength: a time limit of at least 1 step and a positive weight")
        self.value = float(time_limit)
        self.weight = weight

    def update(self, ended_steps: float, ended_count: float) -> float:
        self.value = (ended_steps + self.weight * self.value) / (ended_count + self.weight)
        return self.value


@dataclass(frozen=True)
class CostEstimate:
    """What one `EpisodeCostEstimator.take` read from the steps since the one before."""

    ended_mean: float
    """The mean cost of the episodes that ended (NaN where none did)."""
    rate_estimate: float | None
    """Cost per step times the mean episode length (None where no step was added)."""
    mean_length: float
    """The mean episode length it multiplied by."""


class EpisodeCostEstimator:
    """Steps go in (`add`, any number of calls); `take` returns both estimates from them and starts afresh. Envs
    are tracked across calls (an episode's cost counts whole when it ends)."""

    def __init__(self, time_limit: int, reducer: Reducer = LOCAL) -> None:
        if time_limit < 1:
            raise ValueError(f"the task's time limit must be at least 1 step, got {time_limit}")
        self.time_limit = time_limit
        self.reducer = reducer
        self.episodes: EpisodeCosts | None = None
        self.length: EpisodeLength | None = None
        self._sums: list[torch.Tensor] = []

    def add(self, costs: torch.Tensor, dones: torch.Tensor) -> None:
        """`(T, N)` costs and episode ends (terminated or truncated) of T steps of the N envs."""
        if self.episodes is None:
            self.episodes = EpisodeCosts(costs.shape[1], costs.device)
            self.length = EpisodeLength(self.time_limit, float(costs.shape[1]))
        sums = self.episodes.ended(costs, dones)
        values = torch.stack([sums.ended_cost, sums.ended_count, sums.ended_steps, sums.step_cost, sums.steps])
        self._sums.append(values)

    def take(self) -> CostEstimate:
        """Both estimates from the steps added since the last `take` (averaged over every rank's)."""
        if self.length is None or not self._sums:
            length = float(self.time_limit) if self.length is None else self.length.value
            return CostEstimate(math.nan, None, length)
        values = torch.stack(self._sums).sum(dim=0)
        self._sums.clear()
        if self.reducer.world.size > 1:
            values = self.reducer.mean(values)
        ended_cost, ended_count, ended_steps, step_cost, steps = (float(value) for value in values)
        ended_mean = ended_cost / ended_count if ended_count > 0 else math.nan
        length = self.length.update(ended_steps, ended_count)
        rate = step_cost / steps * length if steps > 0 else None
        return CostEstimate(ended_mean, rate, length)

    def state_dict(self) -> dict[str, Any]:
        tracked = self.episodes
        return {
            "running": None if tracked is None else tracked.running.clone(),
            "lengths": None if tracked is None else tracked.lengths.clone(),
            "mean_length": None if self.length is None else self.length.value,
            "pending": [values.clone() for values in self._sums],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        running = state["running"]
        if running is not None:
            self.episodes = EpisodeCosts(len(running), running.device)
            self.episodes.running.copy_(running)
            self.episodes.lengths.copy_(state["lengths"])
            self.length = EpisodeLength(self.time_limit, float(len(running)))
            self.length.value = float(state["mean_length"])
        self._sums = [values.clone() for values in state.get("pending", [])]
