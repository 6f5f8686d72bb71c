"""The `double_integrator` task: a cart on a frictionless rail, pushed by a bounded force, to rest at the origin.

The smallest task with dynamics: Newton's second law in one dimension, `x'' = F / m`. Integrated exactly for a
force held over each control period (zero-order hold): `x += v dt + F / m dt^2 / 2`, `v += F / m dt`. The
observation is `[x (m), v (m/s)]`, the action the force in N, the reward `-(x^2 + 0.1 v^2 + 0.01 (F / F_max)^2)`
per step (of the state before the step); episodes are truncated after `episode_length` s and succeed when the cart
ends within `success_position` of the origin and slower than `success_speed`.

The task, its config and its preset in one module: written as the example of a new task on `BatchedTask` (see
docs/ARCHITECTURE.md, "Adding a task"). Registered in `robo_rl/sim/__init__.py`, tested in
tests/sim/test_double_integrator.py.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import torch

from robo_rl.algorithms.encoder_config import EncoderConfig
from robo_rl.algorithms.ppo import PPOConfig
from robo_rl.algorithms.sac import SACConfig
from robo_rl.envs import INFO_FINAL_OBS, INFO_SUCCESS, SpaceSpec, StepResult
from robo_rl.experiment import ExperimentConfig, TaskConfig
from robo_rl.runners.loop_config import LoopConfig
from robo_rl.runners.off_policy import OFF_POLICY_LOOP, OffPolicyRunnerConfig
from robo_rl.runners.on_policy import RunnerConfig
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
        final_obs = self._state.clone()
        success = (self._state[:, 0].abs() <= c.success_position) & (self._state[:, 1].abs() <= c.success_speed)
        self._tick()
        terminated = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
        truncated = self._truncated(terminated)
        obs = self._auto_reset(truncated, final_obs)
        return obs, reward, terminated, truncated, {INFO_FINAL_OBS: final_obs, INFO_SUCCESS: success}

    def _draw(self) -> torch.Tensor:
        unit = torch.rand(self.num_envs, 2, generator=self._generator, device=self.device, dtype=self.dtype)
        high = torch.tensor([self.config.init_position_range, self.config.init_velocity_range], device=self.device)
        return (2 * unit - 1) * high

    def _reset_all(self) -> torch.Tensor:
        self._state = self._draw()
        return self._state.clone()

    def _reset_where(self, done: torch.Tensor) -> None:
        self._state = torch.where(done.unsqueeze(-1), self._draw(), self._state)

    def _first_obs(self, done: torch.Tensor) -> torch.Tensor:
        return self._state.clone()

    def _physics_state(self) -> dict[str, Any]:
        return {"state": self._state.clone()}

    def _load_physics_state(self, state_dict: dict[str, Any]) -> None:
        self._state = state_dict["state"].to(device=self.device, dtype=self.dtype).clone()


def double_integrator_ppo() -> ExperimentConfig:
    """PPO bringing the cart to rest: 256 carts x 16 steps per update; stops when 95 % of 200 evaluation episodes
    end within 5 cm of the origin, slower than 0.1 m/s."""
    return ExperimentConfig(
        name="double_integrator_ppo",
        task=TaskConfig(name="double_integrator", num_envs=256),
        ppo=PPOConfig(num_steps=16, gamma=0.98, lam=0.95, num_epochs=5, num_minibatches=4, value_clip=False),
        runner=RunnerConfig(
            loop=LoopConfig(max_iterations=200, target_success_rate=0.95, eval_interval=5, eval_episodes=200)
        ),
    )


def double_integrator_pixels_sac() -> ExperimentConfig:
    """Pixel SAC (DrQ) on `double_integrator/pixels`, the cart's position seen only by its 24x24 camera: 4 carts, a
    small encoder (16 filters, 16 features) and networks; in about 6,400 env steps (a few minutes of robot time, about
    20 s of CPU) the return rises from about -150 (random) past -82 (no force) to about -30."""
    return ExperimentConfig(
        name="double_integrator_pixels_sac",
        algo="sac",
        task=TaskConfig(name="double_integrator/pixels", num_envs=4),
        sac=SACConfig(
            gamma=0.98,
            actor_hidden=(64, 64),
            critic_hidden=(64, 64),
            encoder=EncoderConfig(features=16, channels=16),
        ),
        off_policy=OffPolicyRunnerConfig(
            loop=replace(OFF_POLICY_LOOP, max_iterations=2_000, eval_interval=500, eval_episodes=32),
            learning_starts=200,
            batch_size=64,
            buffer_capacity=20_000,
        ),
    )


PRESETS = {"double_integrator_ppo": double_integrator_ppo, "double_integrator_pixels_sac": double_integrator_pixels_sac}
