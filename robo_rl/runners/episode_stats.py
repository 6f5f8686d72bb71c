"""Episode return/length/success bookkeeping for batched envs without a host sync per step."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class EpisodeStats:
    """Summary of the episodes that finished since the last `EpisodeTracker.flush()`."""

    mean_return: float | None
    """Mean undiscounted return; None when no episode finished."""
    mean_length: float | None
    """Mean length in env steps; None when no episode finished."""
    episodes: int
    """Number of finished episodes."""
    success_rate: float | None
    """Fraction of them that succeeded (`info["success"]`); None without episodes or when the task does not
    report success."""
    reward_per_step: float | None
    """Mean reward over every recorded step of every env, finished episode or not; None when nothing was
    recorded. Unlike `mean_return` it does not depend on which episodes happened to end (early in training,
    mostly the crashes)."""
    mean_cost: float | None = None
    """Mean cost per finished episode (the sum of `info["cost"]` over it); None without episodes or when the task
    reports no cost."""


class EpisodeTracker:
    """Accumulates per-env returns and, for episodes that finish, their sums since the last `flush()`."""

    def __init__(self, num_envs: int, device: torch.device | str) -> None:
        self.returns = torch.zeros(num_envs, device=device)
        self.lengths = torch.zeros(num_envs, device=device)
        self._done_return = torch.zeros((), device=device)
        self._done_length = torch.zeros((), device=device)
        self._done_count = torch.zeros((), device=device)
        self._done_success = torch.zeros((), device=device)
        self._reward_sum = torch.zeros((), device=device)
        self._reward_steps = torch.zeros((), dtype=torch.long, device=device)
        """Steps recorded since the last flush (a tensor: a captured rollout counts without Python)."""
        self._reports_success = False
        self.costs = torch.zeros(num_envs, device=device)
        self._done_cost = torch.zeros((), device=device)
        self._reports_cost = False

    def record(
        self,
        rewards: torch.Tensor,
        dones: torch.Tensor,
        success: torch.Tensor | None = None,
        cost: torch.Tensor | None = None,
    ) -> None:
        """Add one step's `(N,)` rewards; `dones` `(N,)` bool marks episodes that ended with this step, `success`
        `(N,)` bool (where the task reports it) which of those succeeded, and `cost` `(N,)` (where the task reports
        it) the step's cost."""
        self.returns += rewards
        self.lengths += 1
        self._reward_sum += rewards.sum()
        self._reward_steps += rewards.numel()  # in place: a captured graph replays it
        done = dones.to(self.returns.dtype)
        self._done_return += (self.returns * done).sum()
        self._done_length += (self.lengths * done).sum()
        self._done_count += done.sum()
        if success is not None:
            self._reports_success = True
            self._done_success += (success & dones).sum()
        if cost is not None:
            self._reports_cost = True
            self.costs += cost
            self._done_cost += (self.costs * done).sum()
            self.costs *= 1.0 - done
        self.returns *= 1.0 - done
        self.lengths *= 1.0 - done

    def flush(self) -> EpisodeStats:
        """Statistics of the steps and episodes recorded since the last flush; starts a new count."""
        stats = self._summary()
        totals = (self._done_return, self._done_length, self._done_count, self._done_success, self._reward_sum)
        for total in (*totals, self._done_cost):
            total.zero_()
        self._reward_steps.zero_()
        return stats

    def _summary(self) -> EpisodeStats:
        steps = int(self._reward_steps.item())
        reward_per_step = self._reward_sum.item() / steps if steps else None
        count = int(self._done_count.item())
        if count == 0:
            return EpisodeStats(None, None, 0, None, reward_per_step)
        success_rate = self._done_success.item() / count if self._reports_success else None
        mean_return, mean_length = self._done_return.item() / count, self._done_length.item() / count
        mean_cost = self._done_cost.item() / count if self._reports_cost else None
        return EpisodeStats(mean_return, mean_length, count, success_rate, reward_per_step, mean_cost)

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {"returns": self.returns.clone(), "lengths": self.lengths.clone(), "costs": self.costs.clone()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self.returns.copy_(state["returns"])
        self.lengths.copy_(state["lengths"])
        if "costs" in state:  # a checkpoint written before costs were tracked has none
            self.costs.copy_(state["costs"])
