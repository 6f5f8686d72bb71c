"""Pure functions shared by the off-policy algorithms (SAC, TD3): bootstrapped targets and target networks.

Time-outs versus terminations: a transition whose episode was *truncated* still bootstraps from the value of
its next observation (the env's `final_obs`), because the state itself was not terminal; only `terminated`
zeroes the bootstrap. Callers therefore pass `terminated`, never `terminated | truncated`.
"""

from __future__ import annotations

import torch
from torch import nn


def bootstrapped_target(
    rewards: torch.Tensor, next_value: torch.Tensor, terminated: torch.Tensor, gamma: float
) -> torch.Tensor:
    """`r + gamma * (1 - terminated) * next_value`, all `(B,)`."""
    return rewards + gamma * (~terminated).to(rewards.dtype) * next_value


def reduce_ensemble(q: torch.Tensor, how: str) -> torch.Tensor:
    """`(E, B)` ensemble values → `(B,)` by `"min"` or `"mean"` over members."""
    return q.min(dim=0).values if how == "min" else q.mean(dim=0)


def subset_min(
    q: torch.Tensor, subset_size: int, generator: torch.Generator | None = None, keys: torch.Tensor | None = None
) -> torch.Tensor:
    """Min over a random subset of `subset_size` ensemble members: `(E, B) → (B,)`.

    With `subset_size == E` this is the clipped double-Q minimum; RLPD/REDQ use E = 10 with a subset of 2 to
    curb overestimation while keeping the ensemble's variance reduction. `keys`: `(E,)` uniform draws made
    before (a captured update has no random call); the members with the smallest keys form the subset, a uniform
    random one as `randperm`'s first members are. None draws a permutation here.
    """
    members = q.shape[0]
    if not 1 <= subset_size <= members:
        raise ValueError(f"subset_size must be in [1, {members}], got {subset_size}")
    if subset_size == members:
        return q.min(dim=0).values
    if keys is not None:
        return q[keys.argsort()[:subset_size]].min(dim=0).values
    idx = torch.randperm(members, generator=generator, device=generator.device if generator else q.device)
    return q[idx[:subset_size].to(q.device)].min(dim=0).values


def ensemble_mse(q: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Critic loss: mean squared TD error of every member `(E, B)` against one target `(B,)`, summed over E."""
    return (q - target.unsqueeze(0)).square().mean(dim=1).sum()


@torch.no_grad()
def polyak_update(target: nn.Module, source: nn.Module, tau: float) -> None:
    """`target ← (1 - tau) target + tau source` for every parameter in one multi-tensor call (buffers are
    copied)."""
    targets: list[torch.Tensor] = list(target.parameters())
    sources: list[torch.Tensor] = list(source.parameters())
    if len(targets) != len(sources):
        raise ValueError(f"polyak_update: {len(targets)} target parameters, {len(sources)} source parameters")
    # Detached sources: the same numbers; make_fx (robo_rl.capture's "fx") otherwise leaves the targets non-leaf.
    torch._foreach_lerp_(targets, [s.detach() for s in sources], tau)
    for t, s in zip(target.buffers(), source.buffers(), strict=True):
        t.copy_(s)
