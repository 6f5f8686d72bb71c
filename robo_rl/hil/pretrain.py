"""Behaviour cloning of an off-policy actor on demonstrations, before (or instead of) reinforcement learning."""

from __future__ import annotations

import torch
from torch import nn

from robo_rl.storage.replay import Transitions


def behaviour_clone(
    actor: nn.Module,
    demos: Transitions,
    steps: int,
    batch_size: int = 256,
    learning_rate: float = 1e-3,
    seed: int = 0,
) -> list[float]:
    """`steps` Adam steps of mean-squared error between the actor's deterministic action (`actor.deterministic`,
    normalized) and the demonstrated action (normalized, [-1, 1]) on minibatches of `demos`; returns the losses."""
    if steps < 0 or batch_size < 1:
        raise ValueError(f"behaviour_clone: steps must be >= 0 and batch_size >= 1, got {steps}, {batch_size}")
    if len(demos) == 0:
        raise ValueError("behaviour_clone: no demonstrations")
    optimizer = torch.optim.Adam(actor.parameters(), lr=learning_rate)
    generator = torch.Generator(device=demos.obs.device).manual_seed(seed)
    losses = []
    for _ in range(steps):
        index = torch.randint(len(demos), (min(batch_size, len(demos)),), generator=generator, device=demos.obs.device)
        loss = (actor.deterministic(demos.obs[index]) - demos.actions[index]).square().mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses
