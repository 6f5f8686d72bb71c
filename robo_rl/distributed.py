"""Data-parallel training across processes (torchrun): who this process is, and the collective operations.

Every process (rank) steps its own batched envs with its own seed and computes gradients on its own data; the
`Reducer` averages what must agree before parameters move: gradients (before clipping and the optimizer step),
statistics that drive the update (PPO's KL for the adaptive learning rate, advantage moments), observation
normalizer moments, and decisions (stop at a target reached on rank 0's evaluation). With equal batches per rank
that is the same update as one process with the combined batch. `LOCAL` is the single-process reducer: every
operation is the identity, so algorithms and runners call it unconditionally.

Works with any torch.distributed backend: gloo on CPUs, NCCL on GPUs. `robo_rl.cli` initializes the process
group from torchrun's environment; the library never reads environment variables.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch import nn

RANK_SEED_OFFSET = 1_000_003
"""Rank r's envs and sampling use seed + r × this, so no two ranks see the same stream."""


@dataclass(frozen=True)
class World:
    """This process's place in the job."""

    rank: int = 0
    size: int = 1
    local_rank: int = 0
    """Index on this machine: the GPU it uses (cuda:local_rank)."""

    def __post_init__(self) -> None:
        if self.size < 1 or not 0 <= self.rank < self.size:
            raise ValueError(f"World: need 0 <= rank < size, got rank {self.rank} of {self.size}")

    @property
    def is_main(self) -> bool:
        """Rank 0 logs, evaluates, checkpoints and exports."""
        return self.rank == 0

    def seed(self, seed: int) -> int:
        """This rank's env and sampling seed."""
        return seed + self.rank * RANK_SEED_OFFSET


class Reducer(Protocol):
    world: World

    def gradients(self, parameters: Iterable[torch.Tensor]) -> None:
        """Replace every parameter's gradient by its mean over ranks."""
        ...

    def mean(self, value: torch.Tensor) -> torch.Tensor:
        """The mean of `value` over ranks (same shape)."""
        ...

    def broadcast(self, value: Any) -> Any:
        """Rank 0's `value` (any picklable object) on every rank."""
        ...


class LocalReducer:
    """One process: nothing to reduce."""

    world = World()

    def gradients(self, parameters: Iterable[torch.Tensor]) -> None:
        pass

    def mean(self, value: torch.Tensor) -> torch.Tensor:
        return value

    def broadcast(self, value: Any) -> Any:
        return value


LOCAL = LocalReducer()


class ProcessGroupReducer:
    """Collectives over the default torch.distributed process group (initialized by the caller)."""

    def __init__(self, world: World) -> None:
        self.world = world

    def gradients(self, parameters: Iterable[torch.Tensor]) -> None:
        grads = [p.grad for p in parameters if p.grad is not None]
        if not grads:
            return
        flat = torch.cat([g.reshape(-1) for g in grads])
        torch.distributed.all_reduce(flat)
        flat /= self.world.size
        offset = 0
        for grad in grads:
            grad.copy_(flat[offset : offset + grad.numel()].view_as(grad))
            offset += grad.numel()

    def mean(self, value: torch.Tensor) -> torch.Tensor:
        reduced = value.detach().clone()
        torch.distributed.all_reduce(reduced)
        return reduced / self.world.size

    def broadcast(self, value: Any) -> Any:
        box = [value]
        torch.distributed.broadcast_object_list(box, src=0)
        return box[0]


def optimizer_parameters(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
    """Every parameter `optimizer` moves, over all its param groups: what `Reducer.gradients` must average before
    its step. A module's `parameters()` can miss some (DrQ's camera encoder is an extra group of the critic
    optimizer), and a rank whose copy of those is not averaged drifts apart from the others silently."""
    return [parameter for group in optimizer.param_groups for parameter in group["params"]]


def broadcast_module(module: nn.Module, reducer: Reducer) -> None:
    """Copy rank 0's parameters and buffers into `module` on every rank (start from identical weights)."""
    if reducer.world.size == 1:
        return
    for tensor in [*module.parameters(), *module.buffers()]:
        torch.distributed.broadcast(tensor.data, src=0)


@torch.no_grad()
def update_normalizer(normalizer: nn.Module, x: torch.Tensor, reducer: Reducer) -> None:
    """Merge the batch `x` `(batch, dim)` of every rank into `normalizer` (an EmpiricalNormalizer; anything
    without `merge` and `update` is left alone). Ranks hold equal batches, so the combined moments are means over
    ranks."""
    merge, update = getattr(normalizer, "merge", None), getattr(normalizer, "update", None)
    if merge is None or update is None or x.shape[0] == 0:
        return
    if reducer.world.size == 1:
        update(x)
        return
    mean = reducer.mean(x.mean(dim=0))
    second = reducer.mean(x.square().mean(dim=0))
    var = (second - mean.square()).clamp(min=0.0)
    merge(mean, var, float(x.shape[0] * reducer.world.size))


def rank0_decides(value: bool, reducer: Reducer, collective: bool) -> bool:
    """Rank 0's `value` on every rank when `collective` (an iteration on which every rank calls this: rank 0
    alone evaluates, and every rank stops with it); otherwise this rank's own `value`."""
    if reducer.world.size == 1 or not collective:
        return value
    return bool(reducer.broadcast(value))
