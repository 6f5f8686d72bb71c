"""`MujocoTask`: the base of the MuJoCo tasks (reset, auto-reset, step results, exact-resume state, joint state, close).

The MuJoCo counterpart of `robo_rl.sim.batched_task.BatchedTask`: a task on it keeps its physics in a
`PhysicsEngine` (numpy rows on the CPU) and its step counters and random stream in an `Episodes`; the base owns what
every such task does with them, so that none copies it: `dt` and `max_episode_steps` from the model and the config,
`reset(seed)`, the end of `step` (restart the finished envs, keep the final observation, the info dict, the tensors on
`device`), `state_dict` / `load_state_dict` (the episodes' state plus the task's own from its hooks),
`set_joint_state` and `close`.

To write a task, subclass `MujocoTask`, build the model and its engine, call
`super().__init__(num_envs, device, engine, episode_length, seed)`, set up the task's own state and call
`self.reset(seed)` last; implement:

- `step(action)`: step the engine, compute `final_obs`, reward and success, `truncated = self._episodes.tick()`
  (`& ~terminated` where episodes terminate) and return `self._end_step(final_obs, reward, truncated, success)`.
- `_restart(index)`: new episodes for envs `index` (draws from `self._episodes`, then `self._episodes.restart`).
- `_current_obs()`: the observation `(N, obs_dim)` of the current state.
- `_task_state()` / `_load_task_state(state_dict)`: the task's own arrays that the next steps depend on.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from robo_rl.envs import INFO_FINAL_OBS, INFO_SUCCESS, SpaceSpec, StepResult
from robo_rl.sim.mujoco.engine import PhysicsEngine
from robo_rl.sim.mujoco.episodes import Episodes, to_torch
from robo_rl.sim.mujoco.rendering import FrameRenderer


class MujocoTask(ABC):
    """`num_envs` copies of a MuJoCo task in one engine, with the bookkeeping every MuJoCo task shares.

    Attributes beyond the `BatchedEnv` protocol: `model` (the compiled `MjModel`) and `engine` (the batched physics).
    """

    obs_spec: SpaceSpec
    action_spec: SpaceSpec
    privileged_obs_spec: SpaceSpec | None = None

    def __init__(
        self, num_envs: int, device: str | torch.device, engine: PhysicsEngine, episode_length: float, seed: int | None
    ) -> None:
        """Episodes of `episode_length` s (at least one control step) in `engine`; `seed` None: non-deterministic."""
        self.num_envs, self.device = num_envs, torch.device(device)
        self.model, self.engine = engine.model, engine
        self.dt = float(self.model.opt.timestep) * engine.frame_skip
        self.max_episode_steps = max(1, round(episode_length / self.dt))
        self._episodes = Episodes(engine, self.max_episode_steps, seed)
        self._renderer = FrameRenderer(self.model, "fixed")
        self.episode_end_hook: Callable[[np.ndarray], None] | None = None
        """Called by `step` with the indices `(k,)` of the envs whose episode just ended, before they restart (the
        engine still holds their final states): a camera env renders their last frames there."""

    def set_joint_state(self, qpos: torch.Tensor, qvel: torch.Tensor) -> None:
        """Overwrite joint positions `(num_envs, nq)` and velocities `(num_envs, nv)` (rad or m, per second for the
        velocities) of every env; step counters are kept."""
        qpos_np = qpos.detach().cpu().numpy().astype(np.float64).reshape(self.num_envs, self.model.nq)
        qvel_np = qvel.detach().cpu().numpy().astype(np.float64).reshape(self.num_envs, self.model.nv)
        self.engine.reset(np.arange(self.num_envs), qpos_np, qvel_np)

    def reset(self, seed: int | None = None) -> torch.Tensor:
        """Start a new episode in every env; returns obs `(num_envs, obs_dim)`. A seed restarts the random stream."""
        self._episodes.reseed(seed)
        self._restart(np.arange(self.num_envs))
        return to_torch(self._current_obs(), self.device)

    @abstractmethod
    def step(self, action: torch.Tensor) -> StepResult:
        """Apply `(num_envs, action_dim)` actions for one control period; auto-resets finished envs."""

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue the exact same stream: physics, counters, generator and the task's state."""
        episodes, task = self._episodes.state_dict(), self._task_state()
        clash = sorted(episodes.keys() & task.keys())
        if clash:
            raise ValueError(f"{type(self).__name__}._task_state uses the episodes' keys {clash}")
        return {**episodes, **task}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what `state_dict` saved."""
        self._episodes.load_state_dict(state_dict)
        self._load_task_state(state_dict)

    def close(self) -> None:
        """Stop the physics threads and free the renderer; the env cannot step afterwards."""
        self.engine.close()
        self._renderer.close()

    def _end_step(
        self,
        final_obs: np.ndarray,
        reward: np.ndarray,
        truncated: np.ndarray,
        success: np.ndarray,
        terminated: np.ndarray | None = None,
    ) -> StepResult:
        """Restart the envs whose episode ended (`terminated` None: episodes only end at the time limit) and return
        the step's result on `device`: the new episodes' first observations there, `final_obs` elsewhere."""
        if terminated is None:
            terminated = np.zeros(self.num_envs, dtype=np.bool_)
        obs = final_obs
        done = np.flatnonzero(terminated | truncated)
        if done.size > 0:
            if self.episode_end_hook is not None:
                self.episode_end_hook(done)
            self._restart(done)
            obs = self._current_obs()  # rows of envs that did not finish equal final_obs
        info = {INFO_FINAL_OBS: to_torch(final_obs, self.device), INFO_SUCCESS: to_torch(success, self.device)}
        return (
            to_torch(obs, self.device),
            to_torch(reward, self.device),
            to_torch(terminated, self.device),
            to_torch(truncated, self.device),
            info,
        )

    @abstractmethod
    def _restart(self, index: np.ndarray) -> None:
        """Start new episodes for envs `index` `(k,)`: draw from `self._episodes`, then `self._episodes.restart`."""

    @abstractmethod
    def _current_obs(self) -> np.ndarray:
        """The observation `(N, obs_dim)` of every env in the current state."""

    @abstractmethod
    def _task_state(self) -> dict[str, Any]:
        """The task's own arrays that the next steps depend on, as tensor copies, keyed by name (not the episodes')."""

    @abstractmethod
    def _load_task_state(self, state_dict: dict[str, Any]) -> None:
        """Restore what `_task_state` saved, from the whole `state_dict`."""


def check_int_fields(config: object, minimums: dict[str, int]) -> None:
    """Raise a ValueError naming the first field of `config` in `minimums` that is not an int >= its minimum."""
    for name, minimum in minimums.items():
        value = getattr(config, name)
        if not isinstance(value, int) or value < minimum:
            raise ValueError(f"{type(config).__name__}.{name} must be an int >= {minimum}, got {value!r}")
