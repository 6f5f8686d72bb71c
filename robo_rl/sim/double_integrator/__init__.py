"""The `double_integrator` task: a cart on a frictionless rail, pushed by a bounded force, to rest at the origin.

The smallest task with dynamics: Newton's second law in one dimension, `x'' = F / m`. Integrated exactly for a
force held over each control period (zero-order hold): `x += v dt + F / m dt^2 / 2`, `v += F / m dt`. The
observation is `[x (m), v (m/s)]`, the action the force in N, the reward `-(x^2 + 0.1 v^2 + 0.01 (F / F_max)^2)`
per step (of the state before the step); episodes are truncated after `episode_length` s and succeed when the cart
ends within `success_position` of the origin and slower than `success_speed`.

The example of a new task on `BatchedTask` (docs/ARCHITECTURE.md, "Guide: add a task"): its config and its task
here, its presets in `presets.py`, registered in `robo_rl/sim/__init__.py`, tested in
tests/sim/test_double_integrator.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from robo_rl.envs import INFO_SUCCESS, SpaceSpec, StepResult
from robo_rl.sim.batched_task import BatchedTask


@dataclass(frozen=True)
class DoubleIntegratorConfig:
    mass: float = 1.0
    """Cart mass in kg."""
    max_force: float = 2.0
    """Force limit in N; actions are clipped to +-max_force."""
    dt: float = 0.05
    """Control period in s."""
    episode_length: float = 5.0
    """Episode length in s (truncation)."""
    init_position_range: float = 1.0
    """Initial position drawn from +-this, m."""
    init_velocity_range: float = 0.5
    """Initial velocity drawn from +-this, m/s."""
    success_position: float = 0.05
    """Success: |x| at the end of the episode at most this, m."""
    success_speed: float = 0.1
    """Success: |v| at the end of the episode at most this, m/s."""

    def __post_init__(self) -> None:
        for name in ("mass", "max_force", "dt", "episode_length"):
            if not getattr(self, name) > 0:
                raise ValueError(f"DoubleIntegratorConfig.{name} must be positive, got {getattr(self, name)}")
        if round(self.episode_length / self.dt) < 1:
            raise ValueError("DoubleIntegratorConfig.episode_length must last at least one control period")


class DoubleIntegrator(BatchedTask):
    """`num_envs` carts on rails (`BatchedEnv`): obs `[x, v]`, action `[force]` in N, never terminated."""

    state_attributes = ("_state",)

    def __init__(
        self,
        num_envs: int,
        device: str | torch.device = "cpu",
        config: DoubleIntegratorConfig = DoubleIntegratorConfig(),
        seed: int | None = None,
    ) -> None:
        super().__init__(num_envs, device, config.dt, round(config.episode_length / config.dt), seed)
        self.config = config
        limit = 2 * config.init_position_range + 10.0
        self.obs_spec = SpaceSpec(names=("x", "v"), low=(-limit, -limit), high=(limit, limit), units=("m", "m/s"))
        self.action_spec = SpaceSpec(names=("force",), low=(-config.max_force,), high=(config.max_force,), units=("N",))
        self._state = torch.zeros(num_envs, 2, dtype=self.dtype, device=self.device)
        self.reset(seed)

    def step(self, action: torch.Tensor) -> StepResult:
        c = self.config
        force = action.to(device=self.device, dtype=self.dtype).reshape(self.num_envs).clamp(-c.max_force, c.max_force)
        x, v = self._state.unbind(-1)
        reward = -(x**2 + 0.1 * v**2 + 0.01 * (force / c.max_force) ** 2)
        accel = force / c.mass
        self._state = torch.stack((x + v * c.dt + 0.5 * accel * c.dt**2, v + accel * c.dt), dim=-1)
        success = (self._state[:, 0].abs() <= c.success_position) & (self._state[:, 1].abs() <= c.success_speed)
        return self._end_step(self._current_obs(), reward, {INFO_SUCCESS: success})

    def _reset_where(self, done: torch.Tensor) -> None:
        unit = torch.rand(self.num_envs, 2, generator=self._generator, device=self.device, dtype=self.dtype)
        high = torch.tensor([self.config.init_position_range, self.config.init_velocity_range], device=self.device)
        self._renew(done, _state=(2 * unit - 1) * high)

    def _current_obs(self) -> torch.Tensor:
        return self._state.clone()
