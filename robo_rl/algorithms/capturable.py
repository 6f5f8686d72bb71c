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


def load_optimizer_state(optimizer: torch.optim.Optimizer, state: dict) -> None:
    """`optimizer.load_state_dict(state)` that keeps a capturable optimizer capturable.

    A loaded state brings its groups' own settings: a checkpoint of a classic optimizer says `capturable=False`
    (CUDA graph capture of the step then refuses) and a float step size. Each group that was capturable stays so,
    and keeps its step-size tensor (the one a graph reads), with the loaded value written into it."""
    kept = [(bool(group.get("capturable", False)), group["lr"]) for group in optimizer.param_groups]
    optimizer.load_state_dict(state)
    for group, (capturable, lr) in zip(optimizer.param_groups, kept, strict=True):
        if not capturable:
            continue
        group["capturable"] = True
        if isinstance(lr, torch.Tensor):
            loaded = group["lr"]
            with torch.no_grad():
                lr.copy_(loaded if isinstance(loaded, torch.Tensor) else torch.tensor(float(loaded)))
            group["lr"] = lr


def noise_row(noise: UpdateNoise | None, i: int) -> UpdateNoise | None:
    """Update `i`'s draws (views), or None (the update draws its own)."""
    return None if noise is None else {name: draws[i] for name, draws in noise.items()}
