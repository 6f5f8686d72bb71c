"""Batched inverted-pendulum swing-up with the dynamics, reward and reset of Gymnasium's Pendulum-v1.

The state of each env is `[theta, theta_dot]`: angle from upright in rad (counter-clockwise positive) and
angular velocity in rad/s. All envs step together on one torch device; nothing in `step` syncs with the host.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from robo_rl.envs import INFO_SUCCESS, SpaceSpec, StepResult
from robo_rl.sim.batched_task import BatchedTask

if TYPE_CHECKING:  # matplotlib loads only when an env renders
    from robo_rl.sim.pendulum.render import PendulumRenderer


@dataclass(frozen=True)
class PendulumConfig:
    """Physical and episode parameters; the defaults are Pendulum-v1's."""

    max_speed: float = 8.0
    """Angular speed limit in rad/s; theta_dot is clipped to +-max_speed after every step."""
    max_torque: float = 2.0
    """Torque limit in N*m; actions are clipped to +-max_torque."""
    dt: float = 0.05
    """Control period in s (one explicit semi-implicit Euler step)."""
    g: float = 10.0
    """Gravitational acceleration in m/s^2."""
    m: float = 1.0
    """Mass of the rod in kg."""
    l: float = 1.0  # noqa: E741 (Gymnasium's name for the rod length)
    """Length of the rod in m."""
    max_episode_steps: int = 200
    """Steps after which an episode is truncated."""
    success_angle: float = 0.2
    """An episode succeeds when it ends within this many rad of upright..."""
    success_speed: float = 1.0
    """...turning slower than this many rad/s (reported as `info["success"]`)."""

    def __post_init__(self) -> None:
        positive = {
            "max_speed": self.max_speed,
            "max_torque": self.max_torque,
            "dt": self.dt,
            "m": self.m,
            "l": self.l,
            "max_episode_steps": self.max_episode_steps,
            "success_angle": self.success_angle,
            "success_speed": self.success_speed,
        }
        bad = [name for name, value in positive.items() if not value > 0]
        if bad:
            raise ValueError(f"PendulumConfig fields must be positive: {bad}")


def angle_normalize(theta: torch.Tensor) -> torch.Tensor:
    """Wrap angles in rad to [-pi, pi); same formula as Pendulum-v1 (torch.remainder follows numpy's %)."""
    return torch.remainder(theta + math.pi, 2 * math.pi) - math.pi


class Pendulum(BatchedTask):
    """`num_envs` pendulums implementing the `BatchedEnv` protocol.

    Observation `(num_envs, 3)`: `[cos theta, sin theta, theta_dot]`. Action `(num_envs, 1)`: torque in N*m.
    Reward `(num_envs,)`: `-(angle_normalize(theta)^2 + 0.1 theta_dot^2 + 0.001 torque^2)` of the state before
    the step. Episodes never terminate; they are truncated after `max_episode_steps` and reset inside `step`.
    `info["success"]`: the pendulum is balanced (see `PendulumConfig.success_angle`) at the end of the episode.
    """

    state_attributes = ("_state",)

    def __init__(
        self,
        num_envs: int,
        device: str | torch.device = "cpu",
        config: PendulumConfig = PendulumConfig(),
        seed: int | None = None,
    ) -> None:
        """Build the envs and reset them; `seed` is passed to `reset`, None draws a non-deterministic seed."""
        super().__init__(num_envs, device, config.dt, config.max_episode_steps, seed)
        self.config = config
        self.obs_spec = SpaceSpec(
            names=("cos_theta", "sin_theta", "theta_dot"),
            low=(-1.0, -1.0, -config.max_speed),
            high=(1.0, 1.0, config.max_speed),
            units=("1", "1", "rad/s"),
        )
        self.action_spec = SpaceSpec(
            names=("torque",), low=(-config.max_torque,), high=(config.max_torque,), units=("N*m",)
        )
        self._state = torch.zeros(num_envs, 2, dtype=self.dtype, device=self.device)
        self._last_torque = torch.zeros(num_envs, dtype=self.dtype, device=self.device)
        self._renderer: PendulumRenderer | None = None
        self.reset(seed)

    @property
    def state(self) -> torch.Tensor:
        """`(num_envs, 2)` copy of `[theta (rad), theta_dot (rad/s)]`."""
        return self._state.clone()

    def set_state(self, state: torch.Tensor) -> None:
        """Overwrite `[theta, theta_dot]` of every env, `(num_envs, 2)`; step counters are kept."""
        self._state.copy_(state.reshape(self.num_envs, 2))

    def step(self, action: torch.Tensor) -> StepResult:
        """Apply torques `(num_envs, 1)` in N*m for `dt`; auto-resets envs whose episode is over."""
        torque = action.to(device=self.device, dtype=self.dtype).reshape(self.num_envs)
        torque = torque.clamp(-self.config.max_torque, self.config.max_torque)
        reward = -self._cost(self._state, torque)
        self._state = self._integrate(self._state, torque)
        self._last_torque = torque
        return self._end_step(self._current_obs(), reward, {INFO_SUCCESS: self._balanced(self._state)})

    def render(self, index: int = 0) -> np.ndarray:
        """RGB frame `(400, 400, 3)` uint8 of env `index` now, with the torque of the last step (matplotlib)."""
        if not 0 <= index < self.num_envs:
            raise IndexError(f"render: env index {index} out of range for {self.num_envs} envs")
        if self._renderer is None:
            from robo_rl.sim.pendulum.render import PendulumRenderer

            self._renderer = PendulumRenderer(self.config.max_torque)
        theta = float(self._state[index, 0])
        time = int(self._steps[index]) * self.dt
        return self._renderer.draw(theta, float(self._last_torque[index]), time)

    def _reset_where(self, done: torch.Tensor) -> None:
        """theta ~ U(-pi, pi), theta_dot ~ U(-1, 1) where `done`."""
        unit = torch.rand(self.num_envs, 2, generator=self._generator, device=self.device, dtype=self.dtype)
        high = torch.tensor([math.pi, 1.0], device=self.device, dtype=self.dtype)
        self._renew(done, _state=(2 * unit - 1) * high)

    def _balanced(self, state: torch.Tensor) -> torch.Tensor:
        theta, theta_dot = state.unbind(-1)
        c = self.config
        return (angle_normalize(theta).abs() <= c.success_angle) & (theta_dot.abs() <= c.success_speed)

    def _cost(self, state: torch.Tensor, torque: torch.Tensor) -> torch.Tensor:
        theta, theta_dot = state.unbind(-1)
        return angle_normalize(theta) ** 2 + 0.1 * theta_dot**2 + 0.001 * torque**2

    def _integrate(self, state: torch.Tensor, torque: torch.Tensor) -> torch.Tensor:
        c = self.config
        theta, theta_dot = state.unbind(-1)
        accel = 3 * c.g / (2 * c.l) * torch.sin(theta) + 3.0 / (c.m * c.l**2) * torque
        new_theta_dot = (theta_dot + accel * c.dt).clamp(-c.max_speed, c.max_speed)
        new_theta = theta + new_theta_dot * c.dt
        return torch.stack((new_theta, new_theta_dot), dim=-1)

    def _current_obs(self) -> torch.Tensor:
        theta, theta_dot = self._state.unbind(-1)
        return torch.stack((torch.cos(theta), torch.sin(theta), theta_dot), dim=-1)
