"""What the on-policy runner needs of its algorithm (`OnPolicyUpdate`): PPO implements it, and ReinFlow trains with
PPO; the runner names no algorithm, the registry (`robo_rl.algorithms.registry`) builds it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

import torch

from robo_rl.capture import CaptureBackend
from robo_rl.distributed import Reducer
from robo_rl.storage.rollout import RolloutStorage

UpdateMetrics = Mapping[str, float | torch.Tensor]
"""An update's losses and statistics; tensors (no host sync per update) are read only when a metrics row is made."""


class OnPolicyUpdate(Protocol):
    """An on-policy algorithm as the runner drives it: it learns from a filled `RolloutStorage` of `num_steps`
    steps of every env, eagerly (`update`) or as a captured graph (`captured_update`), and saves its state."""

    reducer: Reducer
    """The processes' collectives (several processes: gradients and statistics averaged over ranks)."""

    @property
    def num_steps(self) -> int:
        """Steps of every env in the rollout one update learns from."""
        ...

    def update(self, storage: RolloutStorage) -> UpdateMetrics:
        """Learn from the rollout in `storage`; its metrics."""
        ...

    def captured_update(self, storage: RolloutStorage, backend: CaptureBackend) -> Callable[[], UpdateMetrics]:
        """`update(storage)` as a captured graph (`robo_rl.capture`), called once per rollout refilled in place;
        built after the first rollout, on one process."""
        ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...
