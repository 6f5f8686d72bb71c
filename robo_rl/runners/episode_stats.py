"""Episode return/length bookkeeping for batched envs without a host sync per step."""

from __future__ import annotations

import torch


class EpisodeTracker:
    """Accumulates per-env returns and, for episodes that finish, their sums since the last `flush()`."""

    def __init__(self, num_envs: int, device: torch.device | str) -> None:
        self.returns = torch.zeros(num_envs, device=device)
        self.lengths = torch.zeros(num_envs, device=device)
        self._done_return = torch.zeros((), device=device)
        self._done_length = torch.zeros((), device=device)
        self._done_count = torch.zeros((), device=device)

    def record(self, rewards: torch.Tensor, dones: torch.Tensor) -> None:
        """Add one step's `(N,)` rewards; `dones` `(N,)` bool marks episodes that ended with this step."""
        self.returns += rewards
        self.lengths += 1
        done = dones.to(self.returns.dtype)
        self._done_return += (self.returns * done).sum()
        self._done_length += (self.lengths * done).sum()
        self._done_count += done.sum()
        self.returns *= 1.0 - done
        self.lengths *= 1.0 - done

    def flush(self) -> tuple[float | None, float | None, int]:
        """Mean return and length of episodes finished since the last flush (None if none), and their count."""
        count = int(self._done_count.item())
        if count == 0:
            return None, None, 0
        mean_return = self._done_return.item() / count
        mean_length = self._done_length.item() / count
        for total in (self._done_return, self._done_length, self._done_count):
            total.zero_()
        return mean_return, mean_length, count

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {"returns": self.returns.clone(), "lengths": self.lengths.clone()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self.returns.copy_(state["returns"])
        self.lengths.copy_(state["lengths"])
