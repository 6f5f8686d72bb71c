"""Conditional flow matching as pure functions (Lipman et al. 2023; the straight "rectified" path of Liu et al.).

A velocity field v(x, t | obs) is trained to carry noise x0 ~ N(0, I) at t = 0 to data x1 at t = 1 along the
straight line x_t = (1 - t) x0 + t x1, whose velocity is x1 - x0. Sampling integrates dx/dt = v with Euler steps.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

Velocity = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
"""(x `(B, D)`, t `(B, 1)`) → velocity `(B, D)`; the observation is bound in already."""


def flow_matching_loss(velocity: Velocity, x1: torch.Tensor, x0: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """Mean squared error between `velocity(x_t, t)` and the straight path's velocity `x1 - x0`; `x1`, `x0`
    `(B, D)`, `t` `(B, 1)` in [0, 1]."""
    x_t = (1.0 - t) * x0 + t * x1
    return (velocity(x_t, t) - (x1 - x0)).square().sum(-1).mean()


def euler_sample(velocity: Velocity, x0: torch.Tensor, steps: int) -> torch.Tensor:
    """`x0` `(B, D)` carried from t = 0 to t = 1 in `steps` equal Euler steps of dx/dt = velocity(x, t)."""
    if steps < 1:
        raise ValueError(f"euler_sample: steps must be >= 1, got {steps}")
    x, dt = x0, 1.0 / steps
    for k in range(steps):
        t = torch.full((x.shape[0], 1), k * dt, dtype=x.dtype, device=x.device)
        x = x + dt * velocity(x, t)
    return x
