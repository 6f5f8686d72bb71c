"""What SAC and TD3 share to run their updates in a captured graph (`robo_rl.runners.captured_updates`).

A captured update may not draw random numbers, read a Python counter that changes, or rebind optimizer state:
its noise is drawn before into tensors (`UpdateNoise`), which updates step the actor is decided outside
(`actor_plan`, one graph per plan), and the optimizers are Adam with `capturable=True` and a tensor step size, so
their state lives on the device and is updated in place.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import nn

UpdateNoise = dict[str, torch.Tensor]
"""The random draws of `count` gradient steps, by name, each with a leading dimension `count`; update `i` reads
row `i` of each (`noise_row`)."""


def adam(params: Iterable[nn.Parameter | torch.Tensor], lr: float, capturable: bool = False) -> torch.optim.Adam:
    """Fused Adam; with `capturable`, its step counts on the parameters' device and a tensor step size, so a CUDA
    graph can replay its steps (the classic optimizer keeps its step count on the host)."""
    params = list(params)
    if not capturable:
        return torch.optim.Adam(params, lr=lr, fused=True)
    step_size = torch.tensor(lr, device=params[0].device)
    return torch.optim.Adam(params, lr=step_size, fused=True, capturable=True)


def noise_row(noise: UpdateNoise | None, i: int) -> UpdateNoise | None:
    """Update `i`'s draws (views), or None (the update draws its own)."""
    return None if noise is None else {name: draws[i] for name, draws in noise.items()}
