"""What a human (or a scripted stand-in) hands the training loop: a takeover flag and an action per env."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import torch


@dataclass(frozen=True)
class TeleopCommand:
    """One poll of a teleoperation device for a batch of envs."""

    action: torch.Tensor
    """`(N, action_dim)` the operator's action in the env's action units (used only where `active`)."""
    active: torch.Tensor
    """`(N,)` bool: the operator controls this env now (dead-man button held, or the safe set left)."""
    buttons: dict[str, bool] = field(default_factory=dict)
    """Named buttons pressed at this poll (e.g. `estop`, `success`, `reset`)."""


@runtime_checkable
class TeleopDevice(Protocol):
    """Polled once per env step, before the step, with the observation the policy acted on."""

    def poll(self, obs: torch.Tensor) -> TeleopCommand:
        """The operator's command for this step; `obs` `(N, obs_dim)`."""
        ...

    def episode_reset(self, done: torch.Tensor) -> None:
        """Envs whose episode just ended (`done` `(N,)` bool) start fresh (e.g. the takeover state)."""
        ...
