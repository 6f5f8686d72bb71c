"""`BatchedTask`: the base of the batched torch tasks (episode counters, auto-reset, seeding, exact-resume state).

A task on it holds `num_envs` copies of its world as torch tensors on one device and steps them together without
host syncs (`robo_rl.envs.BatchedEnv`). The base owns what every such task needs, so that none copies it:
`_generator`, the torch Generator on `device` behind every random draw (seeded by `reset(seed)`; built with seed
None, a non-deterministic seed); `_steps` `(N,)`, control steps since each episode started; the end of a step
(`_end_step`: count it, truncate at the time limit, auto-reset the finished envs, the step's result); new episodes
for some envs (`_renew`); and `state_dict` / `load_state_dict` for a checkpoint's exact resume: counters and
generator state plus the task's own state. Subclasses may not override those two (TypeError at class creation), so
no task can drop the shared part or forget its own.

To write a task, subclass `BatchedTask`, call `super().__init__(num_envs, device, dt, max_episode_steps, seed)`
first in `__init__` and `self.reset(seed)` last, name the tensor attributes that hold its world in
`state_attributes` (saved and restored by the base), and implement:

- `step(action)`: apply the action, compute `final_obs`, reward, `terminated` (None where episodes only end at
  the time limit) and the info entries, and return `self._end_step(final_obs, reward, info, terminated=...)`.
- `_reset_where(done)`: new episodes where `done` `(N,)`: draw for every env and keep the draws where `done`
  (`self._renew(done, _state=drawn)`; `done.any()` would sync with the device).
- `_current_obs()`: the observation of the current state.

A task whose resets need more may write the hooks behind these defaults: `_reset_all()` (every env's first
episode after `reset` zeroed the counters; by default `_reset_where` for every env), `_first_obs(done, *draws)`
(the observation after `_reset_where`; by default `_current_obs()`), `_reset_where(done, *draws)` and `_first_obs` with
`draws`, random numbers `step` drew before the transition and passed to `_end_step`, and `_physics_state()` /
`_load_physics_state(state_dict)` in place of `state_attributes` (both, for state that is not a tensor attribute).
Set `component_major = True` where observations are `(obs_dim, N)` inside the task (transpose what you return).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

import torch

from robo_rl.envs import INFO_FINAL_OBS, SpaceSpec, StepResult

_STATE_HOOKS = ("_physics_state", "_load_physics_state")


class BatchedTask(ABC):
    """`num_envs` copies of a task on one torch device, with the bookkeeping every batched torch task shares."""

    dtype: torch.dtype = torch.float32
    component_major: ClassVar[bool] = False
    """Whether `_first_obs` and the `final_obs` given to `_auto_reset` are `(obs_dim, N)` rather than `(N, obs_dim)`."""
    state_attributes: ClassVar[tuple[str, ...]] = ()
    """The tensor attributes holding the task's world, saved in `state_dict` under their names without the leading
    underscore (`"_state"` as `"state"`) and restored on the device in their dtype."""
    obs_spec: SpaceSpec
    action_spec: SpaceSpec
    privileged_obs_spec: SpaceSpec | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        overridden = [name for name in ("state_dict", "load_state_dict") if name in vars(cls)]
        if overridden:
            raise TypeError(f"{cls.__name__} overrides {overridden}: add its state in _physics_state instead")
        if getattr(cls.step, "__isabstractmethod__", False):
            return  # a base of tasks, not a task
        own = [name for name in _STATE_HOOKS if getattr(cls, name) is not getattr(BatchedTask, name)]
        if len(own) == 1:
            raise TypeError(f"{cls.__name__} writes {own[0]} without its pair: write both, or set state_attributes")
        if not own and not cls.state_attributes:
            raise TypeError(f"{cls.__name__} keeps no state: set state_attributes or write {list(_STATE_HOOKS)}")

    def __init__(
        self, num_envs: int, device: str | torch.device, dt: float, max_episode_steps: int, seed: int | None
    ) -> None:
        """The protocol's attributes, step counters and generator (seeded by `reset(seed)`; by chance if None)."""
        self.num_envs = num_envs
        self.device = torch.device(device)
        self.dt = dt
        self.max_episode_steps = max_episode_steps
        self._generator = torch.Generator(device=self.device)
        if seed is None:
            self._generator.seed()
        self._steps = torch.zeros(num_envs, dtype=torch.long, device=self.device)

    def reset(self, seed: int | None = None) -> torch.Tensor:
        """Start a new episode in every env; returns obs `(num_envs, obs_dim)`. A seed restarts the random stream."""
        if seed is not None:
            self._generator.manual_seed(seed)
        self._steps.zero_()
        return self._reset_all()

    @abstractmethod
    def step(self, action: torch.Tensor) -> StepResult:
        """Apply `(num_envs, action_dim)` actions for one control period; auto-resets finished envs."""

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue the exact same stream: the task's state, step counters, generator state."""
        physics = self._physics_state()
        clash = sorted({"steps", "generator"} & physics.keys())
        if clash:
            raise ValueError(f"{type(self).__name__}._physics_state uses the base's keys {clash}")
        return {**physics, "steps": self._steps.clone(), "generator": self._generator.get_state()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what `state_dict` saved (possibly on another device)."""
        self._steps = state_dict["steps"].to(device=self.device, dtype=torch.long).clone()
        self._generator.set_state(state_dict["generator"].cpu())
        self._load_physics_state(state_dict)

    def _end_step(
        self,
        final_obs: torch.Tensor,
        reward: torch.Tensor,
        info: Mapping[str, Any],
        *draws: Any,
        terminated: torch.Tensor | None = None,
    ) -> StepResult:
        """The end of every step, after the transition: count it, truncate envs at the time limit, start new
        episodes where one ended (`draws` go to `_reset_where` and `_first_obs`). `terminated` None: episodes only
        end at the time limit. Returns the step's result, `info` with `final_obs` (the observation before resets)."""
        if terminated is None:
            terminated = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
        self._tick()
        truncated = self._truncated(terminated)
        obs = self._auto_reset(terminated | truncated, final_obs, *draws)
        return obs, reward, terminated, truncated, {INFO_FINAL_OBS: final_obs, **info}

    def _renew(self, done: torch.Tensor, **fresh: torch.Tensor) -> None:
        """Set each named attribute to its `fresh` value where `done` `(N,)`, keeping it elsewhere (no host sync)."""
        for name, value in fresh.items():
            rows = done if self.component_major else done.reshape(-1, *(1,) * (value.dim() - 1))
            setattr(self, name, torch.where(rows, value, getattr(self, name)))

    def _tick(self) -> None:
        """Count one control step of every env."""
        self._steps += 1

    def _truncated(self, terminated: torch.Tensor) -> torch.Tensor:
        """`(N,)` bool: envs that reached the time limit at this step without terminating."""
        return (self._steps >= self.max_episode_steps) & ~terminated

    def _auto_reset(self, done: torch.Tensor, final_obs: torch.Tensor, *draws: Any) -> torch.Tensor:
        """Start new episodes where `done` `(N,)`; returns the step's obs (task layout): the first observation of the
        new episode there, `final_obs` elsewhere."""
        self._steps.masked_fill_(done, 0)
        self._reset_where(done, *draws)
        rows = done if self.component_major else done.unsqueeze(-1)
        return torch.where(rows, self._first_obs(done, *draws), final_obs)

    def _reset_all(self) -> torch.Tensor:
        """Start every env's first episode after `reset` zeroed the counters; returns obs `(N, obs_dim)`."""
        everyone = torch.ones(self.num_envs, dtype=torch.bool, device=self.device)
        self._reset_where(everyone)
        return self._first_obs(everyone)

    @abstractmethod
    def _reset_where(self, done: torch.Tensor, *draws: Any) -> None:
        """Start new episodes where `done` `(N,)` (drawing for every env, selecting with `torch.where`)."""

    def _first_obs(self, done: torch.Tensor, *draws: Any) -> torch.Tensor:
        """The observation (task layout) after `_reset_where(done, *draws)`; only the rows where `done` are used."""
        return self._current_obs()

    def _current_obs(self) -> torch.Tensor:
        """The observation of the current state (task layout)."""
        raise NotImplementedError(f"{type(self).__name__} writes neither _current_obs nor _first_obs")

    def _physics_state(self) -> dict[str, Any]:
        """The task's own tensors (and numbers) that the next steps depend on, as copies, keyed by name."""
        return {name.removeprefix("_"): getattr(self, name).clone() for name in self.state_attributes}

    def _load_physics_state(self, state_dict: dict[str, Any]) -> None:
        """Restore what `_physics_state` saved, from the whole `state_dict` (possibly from another device)."""
        for name in self.state_attributes:
            saved = state_dict[name.removeprefix("_")]
            setattr(self, name, saved.to(device=self.device, dtype=getattr(self, name).dtype).clone())
