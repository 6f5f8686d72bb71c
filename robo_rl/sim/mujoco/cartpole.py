"""Cart-pole swing-up on MuJoCo: start hanging down, swing the pole up and balance it with the cart centred.

Model: `assets/cartpole.xml` (1 kg cart on a ±1.8 m rail, 0.1 kg 1 m pole, motor force up to 10 N, 5 ms physics
step). The pole angle is 0 upright and pi hanging down; a positive angle tilts the pole towards +x.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from robo_rl.envs import SpaceSpec, StepResult
from robo_rl.sim.mujoco.engine import BACKENDS, Backend, make_engine, snapshot
from robo_rl.sim.mujoco.episodes import controls
from robo_rl.sim.mujoco.model import load_model
from robo_rl.sim.mujoco.task import MujocoTask, check_int_fields


@dataclass(frozen=True)
class CartpoleSwingupConfig:
    """Simulation, initial state, reward and success of the swing-up task."""

    frame_skip: int = 2
    """Physics steps (5 ms each) per control step: the control period dt is 10 ms by default."""
    episode_length: float = 10.0
    """Episode duration in s before truncation (max_episode_steps = episode_length / dt, rounded)."""
    init_position_range: float = 0.1
    """Initial cart position: U(-r, r) m."""
    init_angle_range: float = 0.1
    """Initial pole angle: pi + U(-r, r) rad (hanging down)."""
    init_velocity_range: float = 0.05
    """Initial cart velocity (m/s) and pole angular velocity (rad/s): U(-r, r) each."""
    position_scale: float = 1.0
    """Reward: the centred factor is (1 + exp(-(x / position_scale)^2)) / 2, x the cart position in m."""
    angular_velocity_scale: float = 5.0
    """Reward: the slow factor is (1 + exp(-(w / angular_velocity_scale)^2)) / 2, w the pole rate in rad/s."""
    control_weight: float = 0.2
    """Reward: the small-control factor is 1 - control_weight (F / F_max)^2; must be in [0, 1]."""
    success_angle: float = math.radians(12.0)
    """An episode succeeds when over its final `success_window` the pole stayed within this many rad of upright..."""
    success_position: float = 0.25
    """...and the cart within this many m of the rail centre (reported as `info["success"]`)."""
    success_window: float = 1.0
    """Length in s of that final window."""
    backend: Backend = "rollout"
    """Physics backend: "rollout" (MuJoCo on CPU threads) or "mjx" (needs jax and mujoco-mjx installed)."""
    num_threads: int = 2
    """CPU threads of the "rollout" backend (batches under 128 envs per thread step on the calling thread)."""

    def __post_init__(self) -> None:
        positive: tuple[str, ...] = ("episode_length", "position_scale", "angular_velocity_scale", "success_angle")
        positive += ("success_position", "success_window")
        bad = [name for name in positive if not getattr(self, name) > 0]
        non_negative = ("init_position_range", "init_angle_range", "init_velocity_range")
        bad += [name for name in non_negative if not getattr(self, name) >= 0]
        if not 0 <= self.control_weight <= 1:
            bad.append("control_weight")
        if bad:
            raise ValueError(
                f"CartpoleSwingupConfig fields out of range (must be positive, >= 0 for init ranges, in [0, 1] "
                f"for control_weight): {bad}"
            )
        check_int_fields(self, {"frame_skip": 1, "num_threads": 0})
        if self.backend not in BACKENDS:
            raise ValueError(f"CartpoleSwingupConfig.backend must be one of {BACKENDS}, got {self.backend!r}")


class CartpoleSwingup(MujocoTask):
    """`num_envs` MuJoCo cart-poles swinging up, implementing the `BatchedEnv` and `RenderableEnv` protocols.

    Observation `(num_envs, 5)`: cart position (m), cos and sin of the pole angle, cart velocity (m/s), pole
    angular velocity (rad/s). Action `(num_envs, 1)`: force on the cart in N, clipped to ±10 N.

    Reward `(num_envs,)` in [0, 1], of the state after the step (like dm_control's cartpole): `upright * centred *
    small_control * slow` with upright = (1 + cos angle) / 2 and the other factors in `CartpoleSwingupConfig`;
    it is 1 only upright, centred, at rest and without force. Episodes never terminate (the rail has end stops);
    they are truncated after `max_episode_steps` and reset inside `step`. `info["success"]`: balanced upright
    near the centre over the final second (see the config).

    Beyond the protocols: `model` (the compiled `MjModel`), `engine` (the batched physics,
    `robo_rl.sim.mujoco.engine.PhysicsEngine`), `state` / `set_state` and `set_joint_state` (cart position and pole
    angle, their rates).
    """

    def __init__(
        self,
        num_envs: int,
        device: str | torch.device = "cpu",
        config: CartpoleSwingupConfig = CartpoleSwingupConfig(),
        seed: int | None = None,
    ) -> None:
        """Build the envs and reset them; `seed` None draws a non-deterministic seed."""
        self.config = config
        engine = make_engine(load_model("cartpole"), num_envs, config.frame_skip, config.backend, config.num_threads)
        super().__init__(num_envs, device, engine, config.episode_length, seed)
        self._success_steps = max(1, min(self.max_episode_steps, round(config.success_window / self.dt)))
        self._force_low, self._force_high = self.model.actuator_ctrlrange[0].copy()
        self.obs_spec = SpaceSpec(
            names=("cart_position", "cos_pole_angle", "sin_pole_angle", "cart_velocity", "pole_angular_velocity"),
            low=(-math.inf, -1.0, -1.0, -math.inf, -math.inf),
            high=(math.inf, 1.0, 1.0, math.inf, math.inf),
            units=("m", "1", "1", "m/s", "rad/s"),
        )
        self.action_spec = SpaceSpec(("force",), (float(self._force_low),), (float(self._force_high),), ("N",))
        c = config
        speed = c.init_velocity_range
        # Initial [cart position, pole angle, cart velocity, pole rate] ~ U(low, high).
        self._init_low = np.array([-c.init_position_range, math.pi - c.init_angle_range, -speed, -speed])
        self._init_high = np.array([c.init_position_range, math.pi + c.init_angle_range, speed, speed])
        self._cos_success_angle = math.cos(c.success_angle)
        self._balanced_steps = np.zeros(num_envs, dtype=np.int64)
        self.reset(seed)

    # ----------------------------------------------------------------------------------------------- public API

    @property
    def state(self) -> torch.Tensor:
        """`(num_envs, 4)` float64 CPU copy of [cart position m, pole angle rad, cart velocity m/s, pole rate rad/s]."""
        return torch.from_numpy(np.concatenate((self.engine.qpos, self.engine.qvel), axis=1))

    def set_state(self, state: torch.Tensor) -> None:
        """Overwrite [cart position, pole angle, cart velocity, pole rate] `(num_envs, 4)`; step counters are kept."""
        state = state.reshape(self.num_envs, 4)
        self.set_joint_state(state[:, :2], state[:, 2:])

    def step(self, action: torch.Tensor) -> StepResult:
        """Apply forces `(num_envs, 1)` in N for `dt`; auto-resets envs whose episode is over."""
        force = controls(action, self._force_low.reshape(1), self._force_high.reshape(1))
        self.engine.step(force)
        final_obs = self._current_obs()
        reward = self._reward(force[:, 0])
        self._balanced_steps = np.where(self._balanced(), self._balanced_steps + 1, 0)
        truncated = self._episodes.tick()
        success = truncated & (self._balanced_steps >= self._success_steps)
        return self._end_step(final_obs, reward, truncated, success)

    def render(self, index: int = 0) -> np.ndarray:
        """RGB frame `(480, 640, 3)` uint8 of env `index` from the MJCF's fixed camera (GL made on first call)."""
        snapshot(self.engine, index, self._renderer.data)
        return self._renderer.render()

    # ------------------------------------------------------------------------------------------------ internals

    def _task_state(self) -> dict[str, Any]:
        return {"balanced_steps": torch.from_numpy(self._balanced_steps.copy())}

    def _load_task_state(self, state_dict: dict[str, Any]) -> None:
        self._balanced_steps = state_dict["balanced_steps"].cpu().numpy().astype(np.int64)

    def _restart(self, index: np.ndarray) -> None:
        draws = self._episodes.uniform(index.size, self._init_low, self._init_high)
        self._episodes.restart(index, draws[:, :2], draws[:, 2:])
        self._balanced_steps[index] = 0

    def _current_obs(self) -> np.ndarray:
        (position, angle), (velocity, rate) = self.engine.qpos.T, self.engine.qvel.T
        return np.stack((position, np.cos(angle), np.sin(angle), velocity, rate), axis=-1)

    def _reward(self, force: np.ndarray) -> np.ndarray:
        c = self.config
        (position, angle), rate = self.engine.qpos.T, self.engine.qvel[:, 1]
        upright = (1 + np.cos(angle)) / 2
        centred = (1 + np.exp(-((position / c.position_scale) ** 2))) / 2
        small_control = 1 - c.control_weight * (force / self._force_high) ** 2
        slow = (1 + np.exp(-((rate / c.angular_velocity_scale) ** 2))) / 2
        return upright * centred * small_control * slow

    def _balanced(self) -> np.ndarray:
        position, angle = self.engine.qpos.T
        return (np.cos(angle) >= self._cos_success_angle) & (np.abs(position) <= self.config.success_position)
