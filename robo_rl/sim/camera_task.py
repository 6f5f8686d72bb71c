"""`CameraTask`: a state-vector task plus rendered cameras, as a `robo_rl.envs.CameraEnv`.

The simulator steps as before; after each step the camera task renders every env's new state and returns the
observation dict (`"state"` plus one uint8 `(N, H, W, 3)` tensor per camera). The subtle part is `final_obs`: where
an episode ended, the returned frames already show the next episode's first state (auto-reset), while
`info["final_obs"]` must show the state the episode ended in (a value target bootstraps from it on time-outs). The
state task therefore calls a hook of its camera task right before it restarts finished envs (`episode_end_hook`),
and the subclass keeps there what it needs to draw those last frames (the frames themselves, or the poses).

Composition, not inheritance: the state task keeps its own `step -> StepResult` signature (every caller that
reads `obs` as a tensor stays right), and its task-specific API stays reachable as `camera_task.task`.

A camera task may observe only part of the state (`observed`: e.g. a car's speed, the rest to be seen in the frames).
The whole state vector then becomes privileged, ahead of the task's own privileged observation: an asymmetric
critic, or a teacher that a camera student is distilled from (`off_policy.teacher`), still reads it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Protocol

import numpy as np
import torch

from robo_rl.envs import (
    INFO_FINAL_OBS,
    INFO_FINAL_PRIVILEGED_OBS,
    INFO_PRIVILEGED_OBS,
    STATE_KEY,
    BatchedEnv,
    ImageObs,
    ImageStepResult,
    SpaceSpec,
)
from robo_rl.image_spec import ImageSpec, check_camera_names

Frames = dict[str, np.ndarray]
"""`{camera name: (k, H, W, 3) uint8}` frames of k envs."""


class StateTask(BatchedEnv, Protocol):
    """What a camera task needs of the simulator it wraps: the env protocol, checkpoints and frames (a `close`
    method, where it has one, is called by the camera task's)."""

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state_dict: dict[str, Any]) -> None: ...

    def render(self, index: int = 0) -> np.ndarray: ...


class CameraTask(ABC):
    """`task` observed through cameras: `BatchedEnv`'s attributes (the task's), `image_specs`, and `reset`/`step`
    returning observation dicts (module docstring). `state_dict`, `load_state_dict` and `render` are the task's:
    frames are a function of the state, so there is nothing else to save."""

    def __init__(self, task: StateTask, image_specs: tuple[ImageSpec, ...], observed: tuple[str, ...] = ()) -> None:
        """`observed`: names of `task.obs_spec` the "state" entry keeps, in that order (() keeps the whole vector);
        with a subset, the whole state vector is privileged (module docstring)."""
        check_camera_names(image_specs)
        self.task = task
        self.image_specs = image_specs
        self.num_envs, self.device, self.dt = task.num_envs, task.device, task.dt
        self.action_spec = task.action_spec
        self.max_episode_steps = task.max_episode_steps
        self._columns = None if not observed else _columns(task.obs_spec, observed)
        self.obs_spec = task.obs_spec if self._columns is None else _subset(task.obs_spec, self._columns)
        self.privileged_obs_spec = task.privileged_obs_spec
        if self._columns is not None:
            extra = task.privileged_obs_spec
            self.privileged_obs_spec = task.obs_spec if extra is None else _concat(task.obs_spec, extra)
        self._state = torch.zeros(0)
        """The task's whole state vector `(num_envs, dim)` of the last observation (privileged with `observed`)."""

    @property
    def privileged_obs(self) -> torch.Tensor:
        """The critic-only observation (for tasks with a `privileged_obs_spec`): the task's, after the whole state
        vector where the camera task observes only part of it."""
        value = getattr(self.task, "privileged_obs", None)
        if self._columns is not None:
            return self._state if value is None else torch.cat((self._state, torch.as_tensor(value)), dim=-1)
        if value is None:
            raise AttributeError(f"{type(self.task).__name__} has no privileged observation")
        return torch.as_tensor(value)

    def reset(self, seed: int | None = None) -> ImageObs:
        """Reset every env; returns the observation dict of the first states."""
        state = self.task.reset(seed)
        self._state = state
        return self._observation(state, self._frames())

    def step(self, action: torch.Tensor) -> ImageStepResult:
        """Step the task, then render: the returned frames show the states after auto-reset, `final_obs`'s the
        states the step ended in (the last frames of finished episodes)."""
        obs, reward, terminated, truncated, info = self.task.step(action)
        self._state = obs
        if self._columns is not None:
            info = self._privileged_info(info)
        frames = self._frames()
        done = np.flatnonzero((terminated | truncated).cpu().numpy())
        final = {name: frames[name].copy() for name in frames}
        if done.size > 0:
            last = self._final_frames(done)
            for name in final:
                final[name][done] = last[name]
        camera_info: dict[str, Any] = {**info, INFO_FINAL_OBS: self._observation(info[INFO_FINAL_OBS], final)}
        return self._observation(obs, frames), reward, terminated, truncated, camera_info

    def frames(self) -> dict[str, torch.Tensor]:
        """Every camera's frames `(num_envs, H, W, 3)` uint8 of the current states, without stepping (after the
        task's state was set from outside, e.g. by a bridge that shows the simulated camera)."""
        frames = self._frames()
        return {spec.name: torch.from_numpy(frames[spec.name]).to(self.device) for spec in self.image_specs}

    def state_dict(self) -> dict[str, Any]:
        return self.task.state_dict()

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.task.load_state_dict(state_dict)

    def render(self, index: int = 0) -> np.ndarray:
        """The task's own (large, pretty) frame of env `index`, for videos; not an observation."""
        return self.task.render(index)

    def close(self) -> None:
        """Close the task (where it has something to close) and free the cameras' GL context."""
        close = getattr(self.task, "close", None)
        if close is not None:
            close()
        self._close_cameras()

    def _observation(self, state: torch.Tensor, frames: Frames) -> ImageObs:
        images = {spec.name: torch.from_numpy(frames[spec.name]).to(self.device) for spec in self.image_specs}
        observed = state if self._columns is None else state[:, self._columns]
        return {STATE_KEY: observed, **images}

    def _privileged_info(self, info: dict[str, Any]) -> dict[str, Any]:
        """`info` whose privileged observations (now and at episode ends) start with the whole state vector."""
        updated = {**info, INFO_PRIVILEGED_OBS: self.privileged_obs}
        final_extra = info.get(INFO_FINAL_PRIVILEGED_OBS)
        final = info[INFO_FINAL_OBS]
        updated[INFO_FINAL_PRIVILEGED_OBS] = final if final_extra is None else torch.cat((final, final_extra), -1)
        return updated

    @abstractmethod
    def _frames(self) -> Frames:
        """Frames of every env in its current state, `(num_envs, H, W, 3)` per camera."""

    @abstractmethod
    def _final_frames(self, done: np.ndarray) -> Frames:
        """Frames `(k, H, W, 3)` of the states in which envs `done` `(k,)` ended their episodes at the last step
        (kept by the task's `episode_end_hook`)."""

    @abstractmethod
    def _close_cameras(self) -> None:
        """Free the renderer."""


def _columns(spec: SpaceSpec, observed: tuple[str, ...]) -> torch.Tensor:
    """Indices in `spec` of the names `observed`; ValueError naming unknown or repeated names."""
    unknown = [name for name in observed if name not in spec.names]
    if unknown or len(set(observed)) != len(observed):
        raise ValueError(
            f"observed state names must be distinct names of the task's observation {spec.names}; "
            f"unknown: {unknown}, given: {observed}"
        )
    return torch.tensor([spec.names.index(name) for name in observed])


def _subset(spec: SpaceSpec, columns: torch.Tensor) -> SpaceSpec:
    index = columns.tolist()
    return SpaceSpec(
        tuple(spec.names[i] for i in index),
        tuple(spec.low[i] for i in index),
        tuple(spec.high[i] for i in index),
        tuple(spec.units[i] for i in index),
    )


def _concat(first: SpaceSpec, second: SpaceSpec) -> SpaceSpec:
    return SpaceSpec(
        first.names + second.names, first.low + second.low, first.high + second.high, first.units + second.units
    )
