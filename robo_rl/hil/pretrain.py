"""Behaviour cloning of an off-policy actor on demonstrations, before (or instead of) reinforcement learning."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from robo_rl.image_spec import STATE_KEY
from robo_rl.storage.replay import Transitions


def behaviour_clone(
    actor: nn.Module,
    demos: Transitions,
    steps: int,
    batch_size: int = 256,
    learning_rate: float = 1e-3,
    seed: int = 0,
) -> list[float]:
    """`steps` Adam steps on minibatches of `demos` (normalized actions in [-1, 1]); returns the losses.

    A stochastic actor (one with `log_prob`, SAC's) maximizes the likelihood of the demonstrated actions, so its
    spread shrinks to the demonstrator's as well: the stochastic policy SAC then collects data with is as good
    as the deterministic one, instead of the untrained spread of a mean-only fit. A deterministic actor (TD3's)
    minimizes the squared error of its action. An actor with a `bc_loss(obs, action)` method (a flow policy)
    uses that, after `fit_action_standardization(demos.actions)` when it has one.

    Demonstrations with camera frames (`demos.images`) are cloned by an actor that reads them (one with
    `image_specs`, `PixelSAC.bc_actor()`): it gets each minibatch as a camera observation dict, the state and every
    camera's frames at the same indices. Only parameters that require gradients move (a frozen camera encoder
    stays as it is).
    """
    if steps < 0 or batch_size < 1:
        raise ValueError(f"behaviour_clone: steps must be >= 0 and batch_size >= 1, got {steps}, {batch_size}")
    if len(demos) == 0:
        raise ValueError("behaviour_clone: no demonstrations")
    fit = getattr(actor, "fit_action_standardization", None)
    if fit is not None:  # a flow policy learns in units of the demonstrations' spread
        fit(demos.actions)
    if demos.images is not None and not getattr(actor, "image_specs", ()):
        raise ValueError(
            f"behaviour_clone: the demonstrations carry camera frames and {type(actor).__name__} reads none; "
            "clone the algorithm's bc_actor() (or drop the frames from the demonstrations)"
        )
    trainable = [parameter for parameter in actor.parameters() if parameter.requires_grad]
    optimizer = torch.optim.Adam(trainable, lr=learning_rate)
    generator = torch.Generator(device=demos.obs.device).manual_seed(seed)
    losses = []
    for _ in range(steps):
        index = torch.randint(len(demos), (min(batch_size, len(demos)),), generator=generator, device=demos.obs.device)
        loss = _loss(actor, _observations(demos, index), demos.actions[index])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def clone_loss(actor: nn.Module, batch: Transitions) -> torch.Tensor:
    """The cloning loss of `actor` on a whole `batch` (its actions the targets), as `behaviour_clone` takes it."""
    every = torch.arange(len(batch.obs), device=batch.obs.device)
    return _loss(actor, _observations(batch, every), batch.actions)


def _observations(demos: Transitions, index: torch.Tensor) -> torch.Tensor | dict[str, torch.Tensor]:
    """The observations at `index`: the state vectors, or with frames the camera observation dict (state and each
    camera's frames at the same indices, the form a camera env returns)."""
    if demos.images is None:
        return demos.obs[index]
    return {STATE_KEY: demos.obs[index], **{name: frames[index] for name, frames in demos.images.items()}}


def _loss(actor: nn.Module, obs: Any, action: torch.Tensor) -> torch.Tensor:
    bc_loss = getattr(actor, "bc_loss", None)  # an actor with its own cloning objective, e.g. flow matching
    if bc_loss is not None:
        return bc_loss(obs, action)
    log_prob = getattr(actor, "log_prob", None)
    if log_prob is not None:
        return -log_prob(obs, action).mean()
    return (actor(obs) - action).square().mean()
