"""Quadrotor figure-eight tracking as a `BatchedEnv`: `QuadrotorTrack`.

The task is the hover task with a moving reference: `QuadrotorTrack` holds a `QuadrotorHover` built with a
`FigureEight` reference and forwards the `BatchedEnv` interface to it, so dynamics, actions, randomization,
reward, termination and resets are the hover task's own code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from robo_rl.envs import StepResult
from robo_rl.sim.quadrotor.hover import QuadrotorHover
from robo_rl.sim.quadrotor.hover_config import HoverConfig
from robo_rl.sim.quadrotor.reference import FigureEight


# A subclass of HoverConfig only to keep every field flat, so that `make("quadrotor/track", action_mode="ctbr")`
# overrides the same fields as for hover; the tracking task adds the trajectory fields below.
@dataclass(frozen=True)
class TrackConfig(HoverConfig):
    """`HoverConfig` (position errors now to the moving reference) plus the figure-eight trajectory."""

    amplitude: float = 1.0
    """Half-width of the figure eight along x in m (its half-height along y is amplitude / 2)."""
    period: float = 5.0
    """Time for one full figure eight in s (peak speed about 2 pi amplitude / period along each axis)."""
    height: float = 0.0
    """World z of the figure eight in m."""
    random_phase: bool = True
    """Start each env at a U(0, 2 pi) phase of the figure; False starts all at the centre heading +x."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not (self.amplitude >= 0 and self.period > 0):
            raise ValueError(f"TrackConfig: need amplitude >= 0 and period > 0, got {self.amplitude}, {self.period}")


DEFAULT_CONFIG = TrackConfig()


class QuadrotorTrack:
    """`num_envs` quadrotors following a figure eight, implementing the `BatchedEnv` protocol.

    Observation `(num_envs, 21 + 4 * action_history)`: position error to the moving reference (3, m), rotation
    matrix (9), velocity error (3, m/s), body rates (3, rad/s), reference velocity (3, m/s), previous actions.
    Reward, termination, success and privileged observation as in `QuadrotorHover`, with errors measured to the
    moving reference. `info["tracking_error"]` `(num_envs,)`: distance to the reference in m after each step.
    `task` is the `QuadrotorHover` engine flying to the moving reference.
    """

    def __init__(
        self,
        num_envs: int,
        device: str | torch.device = "cpu",
        config: TrackConfig = DEFAULT_CONFIG,
        seed: int | None = None,
    ) -> None:
        """Build the envs and reset them; `seed` is passed to `reset`, None draws a non-deterministic seed."""
        dtype, where = QuadrotorHover.dtype, torch.device(device)
        trajectory = FigureEight(config.amplitude, config.period, config.height, config.random_phase, where, dtype)
        self.task = QuadrotorHover(num_envs, device, config, seed, reference=trajectory)
        self.config = config
        self.num_envs = num_envs
        self.device = self.task.device
        self.dt = self.task.dt
        self.max_episode_steps = self.task.max_episode_steps
        self.obs_spec = self.task.obs_spec
        self.action_spec = self.task.action_spec
        self.privileged_obs_spec = self.task.privileged_obs_spec
        self.hover_action = self.task.hover_action
        self.nominal_action = self.task.nominal_action
        self.params = self.task.params
        self.task.render_box = ((0.0, 0.0, config.height), config.amplitude + 0.5)

    @property
    def privileged_obs(self) -> torch.Tensor:
        """`(num_envs, privileged_dim)` critic-only observation matching the last returned obs."""
        return self.task.privileged_obs

    @property
    def state(self) -> torch.Tensor:
        """`(num_envs, 17)` copy of the physical state."""
        return self.task.state

    def reference(self, time: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Reference (position m, velocity m/s) `(num_envs, 3)` of each env at episode time `time` `(num_envs,)` s."""
        return self.task.reference_at(time)

    def tracking_error(self) -> torch.Tensor:
        """`(num_envs,)` distance in m between each quadrotor and its reference at the current episode time."""
        return self.task.tracking_error()

    def set_state(self, state: torch.Tensor) -> None:
        """Overwrite the physical state `(num_envs, 17)`; episode data are kept."""
        self.task.set_state(state)

    def reset(self, seed: int | None = None) -> torch.Tensor:
        """Reset every env; returns obs `(num_envs, obs_dim)`."""
        return self.task.reset(seed)

    def step(self, action: torch.Tensor) -> StepResult:
        """Apply actions `(num_envs, 4)` in [-1, 1] for `dt`; auto-resets envs whose episode is over."""
        return self.task.step(action)

    def render(self, index: int = 0) -> np.ndarray:
        """RGB frame `(480, 480, 3)` uint8 of env `index` (see `QuadrotorHover.render`)."""
        return self.task.render(index)

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue the exact same stream."""
        return self.task.state_dict()

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what `state_dict` saved."""
        self.task.load_state_dict(state_dict)
