"""Any robo_rl `BatchedEnv` as a `gymnasium.Env` (one copy) or a `gymnasium.vector.VectorEnv` (many copies).

Both adapters speak numpy on the outside and move data to and from the batched env's torch device inside, so
Gymnasium tooling (`check_env`, wrappers) and libraries such as Stable-Baselines3 can use robo_rl tasks.

The batched env resets finished envs inside `step`. The two adapters expose that differently:

- `GymnasiumEnv` follows single-env Gymnasium semantics: a finishing `step` returns the episode's *last*
  observation (the batched env's `info["final_obs"]`) and the caller calls `reset`.
- `GymnasiumVectorEnv` declares `AutoresetMode.SAME_STEP`, which is exactly the batched env's behaviour: the
  returned observation of a finished env is the first one of its next episode, and `info["final_obs"]` holds
  the last one, in the layout `gymnasium.vector.SyncVectorEnv` uses for that mode.

An env with cameras (`robo_rl.envs.CameraEnv`) has a `spaces.Dict` observation space (`observation_space`): the
float32 state `Box` under `"state"`, then one `Box(0, 255, (height, width, channels), uint8)` per camera under its
name, in the env's camera order. Its observations are dicts of numpy arrays with those keys; frames stay uint8, as
the cameras deliver them (Stable-Baselines3's `MultiInputPolicy` reads this layout).
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
import torch
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from robo_rl.envs import (
    INFO_FINAL_OBS,
    INFO_FINAL_PRIVILEGED_OBS,
    INFO_PRIVILEGED_OBS,
    INFO_SUCCESS,
    BatchedEnv,
    CameraEnv,
    ImageObs,
    SpaceSpec,
    image_specs_of,
)
from robo_rl.image_spec import STATE_KEY, ImageSpec
from robo_rl.sim.registry import make

IS_SUCCESS = "is_success"
"""Gymnasium-side info key for `robo_rl.envs.INFO_SUCCESS` (Stable-Baselines3's name)."""

NumpyObs = np.ndarray | dict[str, np.ndarray]
"""An observation on the Gymnasium side: a float32 array, or with cameras a dict of state and uint8 frames."""

__all__ = ["IS_SUCCESS", "GymnasiumEnv", "GymnasiumVectorEnv", "check_task", "observation_space", "space_to_box"]


def space_to_box(spec: SpaceSpec) -> spaces.Box:
    """A float32 `Box` of shape `(spec.dim,)` with the spec's bounds (infinite bounds stay infinite)."""
    low = np.asarray(spec.low, dtype=np.float32)
    high = np.asarray(spec.high, dtype=np.float32)
    return spaces.Box(low=low, high=high, shape=(spec.dim,), dtype=np.float32)


def image_box(spec: ImageSpec) -> spaces.Box:
    """A uint8 `Box(0, 255)` of one camera's frame shape `(height, width, channels)`."""
    return spaces.Box(low=0, high=255, shape=spec.shape, dtype=np.uint8)


def observation_space(env: BatchedEnv | CameraEnv) -> spaces.Space[Any]:
    """One env's observation space: the state `Box`, or for a camera env a `Dict` of it (under `"state"`) and one
    uint8 frame `Box` per camera, in the order state, then the env's cameras."""
    state = space_to_box(env.obs_spec)
    specs = image_specs_of(env)
    if not specs:
        return state
    return spaces.Dict([(STATE_KEY, state), *((spec.name, image_box(spec)) for spec in specs)])


def _to_numpy(tensor: torch.Tensor) -> np.ndarray:
    # Always a fresh array: callers keep what an env returns, and Gymnasium's checker verifies it. Frames stay uint8.
    dtype = torch.uint8 if tensor.dtype == torch.uint8 else torch.float32
    return tensor.detach().to("cpu", dtype).numpy().copy()


def _obs_to_numpy(obs: torch.Tensor | ImageObs) -> NumpyObs:
    """A batched observation (a tensor, or a camera env's dict of them) as numpy, key by key."""
    if isinstance(obs, dict):
        return {key: _to_numpy(value) for key, value in obs.items()}
    return _to_numpy(obs)


def _row(obs: NumpyObs, index: int) -> NumpyObs:
    """Env `index`'s observation of a batched numpy one."""
    if isinstance(obs, dict):
        return {key: value[index] for key, value in obs.items()}
    return obs[index]


def _metadata(env: BatchedEnv | CameraEnv) -> dict[str, Any]:
    return {"render_modes": [], "render_fps": 1.0 / env.dt}


def _check_render_mode(render_mode: str | None) -> None:
    if render_mode is not None:
        raise ValueError(f"robo_rl Gymnasium adapters do not render; render_mode must be None, got {render_mode!r}")


class GymnasiumEnv(gymnasium.Env[NumpyObs, np.ndarray]):
    """One copy of a robo_rl task as a `gymnasium.Env`.

    Observations are float32 arrays `(obs_dim,)` (with cameras: dicts, see the module docstring), actions
    `(action_dim,)` in the units of the env's specs.
    When the batched env has a `privileged_obs_spec`, `info["privileged_obs"]` `(privileged_dim,)` matches each
    returned observation. When a task defines success, the step ending an episode has `info["is_success"]`
    (the key Stable-Baselines3 reads for its success rate).
    """

    def __init__(self, env: BatchedEnv | CameraEnv, render_mode: str | None = None) -> None:
        """Wrap `env`, which must have `num_envs == 1`."""
        if env.num_envs != 1:
            raise ValueError(f"GymnasiumEnv wraps a BatchedEnv with num_envs == 1, got {env.num_envs}")
        _check_render_mode(render_mode)
        self.env = env
        self.render_mode = render_mode
        self.metadata = _metadata(env)
        self.observation_space = observation_space(env)
        self.action_space = space_to_box(env.action_spec)

    @classmethod
    def from_task(cls, name: str, device: str | torch.device = "cpu", **overrides: Any) -> GymnasiumEnv:
        """Build task `name` from the registry with one env; `overrides` replace fields of its config."""
        return cls(make(name, num_envs=1, device=device, **overrides))

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[NumpyObs, dict[str, Any]]:
        """Start a new episode; a seed reseeds the batched env's generator, None continues its stream."""
        super().reset(seed=seed)
        obs = self.env.reset(seed=seed)
        info: dict[str, Any] = {}
        if self.env.privileged_obs_spec is not None:
            info[INFO_PRIVILEGED_OBS] = _to_numpy(self.env.privileged_obs[0])  # type: ignore[union-attr]
        return _row(_obs_to_numpy(obs), 0), info

    def step(self, action: np.ndarray) -> tuple[NumpyObs, float, bool, bool, dict[str, Any]]:
        """Apply `action` `(action_dim,)` for one control period `dt`.

        When the episode ends (terminated or truncated) the last observation of that episode is returned; the
        batched env has already started a new one internally, but the caller must still call `reset`.
        """
        batched_action = torch.as_tensor(np.asarray(action, dtype=np.float32), device=self.env.device)
        obs, reward, terminated, truncated, batched_info = self.env.step(batched_action.reshape(1, -1))
        is_terminated, is_truncated = bool(terminated[0]), bool(truncated[0])
        done = is_terminated or is_truncated
        info: dict[str, Any] = {}
        if self.env.privileged_obs_spec is not None:
            key = INFO_FINAL_PRIVILEGED_OBS if done else INFO_PRIVILEGED_OBS
            info[INFO_PRIVILEGED_OBS] = _to_numpy(batched_info[key][0])
        if done and INFO_SUCCESS in batched_info:
            info[IS_SUCCESS] = bool(batched_info[INFO_SUCCESS][0])
        returned_obs = batched_info[INFO_FINAL_OBS] if done else obs
        return _row(_obs_to_numpy(returned_obs), 0), float(reward[0]), is_terminated, is_truncated, info


class GymnasiumVectorEnv(gymnasium.vector.VectorEnv[NumpyObs, np.ndarray, np.ndarray]):
    """All `num_envs` copies of a robo_rl env as a `gymnasium.vector.VectorEnv` with same-step autoreset.

    `step` returns obs `(num_envs, obs_dim)` float32 (with cameras: a dict of state `(num_envs, obs_dim)` and
    frames `(num_envs, H, W, C)` uint8, the layout of `batch_space` of the Dict space), rewards `(num_envs,)`
    float64 and bool flags `(num_envs,)`. When some envs finished, `info` carries (as `SyncVectorEnv` does in
    `SAME_STEP` mode) `final_obs`, an object array `(num_envs,)` holding the last observation of each finished env
    (an `(obs_dim,)` array, or one env's dict) and None elsewhere, `final_info` (a dict; `privileged_obs` there
    when the env has one, `is_success` when the task defines success), and the boolean masks `_final_obs` and
    `_final_info`. Privileged observations matching the returned obs are in
    `info["privileged_obs"]` `(num_envs, privileged_dim)`.
    """

    def __init__(self, env: BatchedEnv | CameraEnv, render_mode: str | None = None) -> None:
        _check_render_mode(render_mode)
        self.env = env
        self.num_envs = env.num_envs
        self.render_mode = render_mode
        self.metadata = {**_metadata(env), "autoreset_mode": AutoresetMode.SAME_STEP}
        self.single_observation_space = observation_space(env)
        self.single_action_space = space_to_box(env.action_spec)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)

    @classmethod
    def from_task(
        cls, name: str, num_envs: int, device: str | torch.device = "cpu", **overrides: Any
    ) -> GymnasiumVectorEnv:
        """Build `num_envs` copies of task `name`; `overrides` replace fields of its config."""
        return cls(make(name, num_envs=num_envs, device=device, **overrides))

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[NumpyObs, dict[str, Any]]:
        """Reset every env; returns obs `(num_envs, obs_dim)` (with cameras, a dict of batched arrays) and info.

        A partial reset (`options["reset_mask"]` with some False) is refused: the batched env resets all envs.
        """
        mask = (options or {}).get("reset_mask")
        if mask is not None and not np.all(mask):
            raise NotImplementedError("GymnasiumVectorEnv resets every env; a partial reset_mask is not supported")
        super().reset(seed=seed)
        obs = self.env.reset(seed=seed)
        info: dict[str, Any] = {}
        if self.env.privileged_obs_spec is not None:
            self._add_batched(info, INFO_PRIVILEGED_OBS, self.env.privileged_obs)  # type: ignore[union-attr]
        return _obs_to_numpy(obs), info

    def step(self, actions: np.ndarray) -> tuple[NumpyObs, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Apply actions `(num_envs, action_dim)`; finished envs are reset within this same step."""
        batched_actions = torch.as_tensor(np.asarray(actions, dtype=np.float32), device=self.env.device)
        obs, reward, terminated, truncated, batched_info = self.env.step(batched_actions.reshape(self.num_envs, -1))
        terminated_np = terminated.cpu().numpy().copy()
        truncated_np = truncated.cpu().numpy().copy()
        info: dict[str, Any] = {}
        if self.env.privileged_obs_spec is not None:
            self._add_batched(info, INFO_PRIVILEGED_OBS, batched_info[INFO_PRIVILEGED_OBS])
        done = terminated_np | truncated_np
        if done.any():
            self._add_final(info, batched_info, done)
        reward_np = reward.detach().cpu().numpy().astype(np.float64)
        return _obs_to_numpy(obs), reward_np, terminated_np, truncated_np, info

    def _add_batched(self, info: dict[str, Any], key: str, tensor: torch.Tensor) -> None:
        info[key] = _to_numpy(tensor)
        info[f"_{key}"] = np.ones(self.num_envs, dtype=np.bool_)

    def _add_final(self, info: dict[str, Any], batched_info: dict[str, torch.Tensor], done: np.ndarray) -> None:
        final_obs_rows = _obs_to_numpy(batched_info[INFO_FINAL_OBS])
        final_obs = np.full(self.num_envs, fill_value=None, dtype=object)
        for i in np.flatnonzero(done):
            final_obs[i] = _row(final_obs_rows, int(i))
        final_info: dict[str, Any] = {}
        if self.env.privileged_obs_spec is not None:
            final_privileged = _to_numpy(batched_info[INFO_FINAL_PRIVILEGED_OBS])
            final_info[INFO_PRIVILEGED_OBS] = np.where(done[:, None], final_privileged, 0.0).astype(np.float32)
            final_info[f"_{INFO_PRIVILEGED_OBS}"] = done.copy()
        if INFO_SUCCESS in batched_info:
            final_info[IS_SUCCESS] = batched_info[INFO_SUCCESS].cpu().numpy() & done
            final_info[f"_{IS_SUCCESS}"] = done.copy()
        info["final_obs"], info["_final_obs"] = final_obs, done.copy()
        info["final_info"], info["_final_info"] = final_info, done.copy()


def check_task(name: str, **overrides: Any) -> None:
    """Run Gymnasium's `check_env` on one env of registered task `name` (`overrides` replace fields of its config);
    raises on an API violation.

    `check_env` only compares seeded-reset observations for envs with a registered `spec`, which ours lack;
    the tests check that determinism directly.
    """
    check_env(GymnasiumEnv.from_task(name, **overrides), skip_render_check=True)
