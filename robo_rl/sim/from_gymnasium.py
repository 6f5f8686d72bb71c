"""Any Gymnasium task (e.g. a gymnasium[mujoco] env) as a robo_rl `BatchedEnv`.

`FromGymnasium` steps `num_envs` copies in a `gymnasium.vector.SyncVectorEnv` with `AutoresetMode.SAME_STEP`,
which is the batched contract's reset rule: a finished env's returned observation already starts its next
episode, and its last observation is reported as `info["final_obs"]`. Stepping is Gymnasium's (one Python call
per env, on the CPU); tensors are moved to `device`. This is how robo_rl's algorithms train on tasks it does not
simulate itself, and how benchmarks compare them with other libraries on the very same simulator.

Registered as `gym/<ENV_ID>` for a few tasks (see `robo_rl.sim`); any other id works through
`make("gym/InvertedPendulum-v5", ..., env_id="Hopper-v5")` or by constructing `FromGymnasium` directly.

Observations: a 1-D `Box` space is the state vector. A `Dict` space of exactly one 1-D `Box` (the state, whatever
its key) and uint8 `(height, width, channels)` `Box`es (cameras, named by their keys) makes a camera env
(`robo_rl.envs.CameraEnv`): dict observations, the state under `"state"`, each camera's frames under its key, in
the space's key order; the layout `robo_rl.sim.gymnasium_adapter` gives robo_rl's own camera tasks. Anything else
is refused, naming the key that does not fit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from robo_rl.envs import INFO_FINAL_OBS, ImageObs, SpaceSpec
from robo_rl.image_spec import STATE_KEY, ImageSpec


@dataclass(frozen=True)
class GymnasiumTaskConfig:
    env_id: str = "InvertedPendulum-v5"
    """Gymnasium id passed to `gymnasium.make`."""
    max_episode_steps: int | None = None
    """Time limit in steps; None keeps the one registered with the id."""

    def __post_init__(self) -> None:
        if self.max_episode_steps is not None and self.max_episode_steps < 1:
            raise ValueError(f"max_episode_steps must be at least 1, got {self.max_episode_steps}")


def _is_vector_box(space: Any) -> bool:
    from gymnasium import spaces

    return isinstance(space, spaces.Box) and len(space.shape) == 1


def _box_spec(space: Any, prefix: str) -> SpaceSpec:
    if not _is_vector_box(space):
        raise ValueError(
            f"{prefix} space must be a 1-D gymnasium Box (or, for obs, a Dict of one and frames), got {space}"
        )
    size = space.shape[0]
    return SpaceSpec(
        names=tuple(f"{prefix}[{i}]" for i in range(size)),
        low=tuple(float(v) for v in space.low),
        high=tuple(float(v) for v in space.high),
        units=("",) * size,
    )


def _image_spec(key: str, space: Any) -> ImageSpec:
    """The camera of Dict key `key`: a uint8 `(height, width, channels)` Box; ValueError naming the key otherwise."""
    from gymnasium import spaces

    if not (isinstance(space, spaces.Box) and space.dtype == np.uint8 and len(space.shape) == 3):
        raise ValueError(
            f"obs[{key!r}]: a Dict obs space holds one 1-D Box (the state) and uint8 (height, width, channels) Box "
            f"frames, got {space}"
        )
    height, width, channels = (int(side) for side in space.shape)
    try:
        return ImageSpec(key, height, width, channels)
    except ValueError as err:
        raise ValueError(f"obs[{key!r}]: {err}") from None


def _observation_layout(space: Any) -> tuple[SpaceSpec, str | None, tuple[ImageSpec, ...]]:
    """The state's spec, its key in a Dict space (None for a Box space) and the cameras, in the space's order."""
    from gymnasium import spaces

    if not isinstance(space, spaces.Dict):
        return _box_spec(space, "obs"), None, ()
    vectors = [key for key, sub in space.spaces.items() if _is_vector_box(sub)]
    if len(vectors) != 1:
        raise ValueError(f"a Dict obs space needs exactly one 1-D Box (the state), got keys {vectors}: {space}")
    (state_key,) = vectors
    cameras = tuple(_image_spec(str(key), sub) for key, sub in space.spaces.items() if key != state_key)
    return _box_spec(space[state_key], "obs"), state_key, cameras


def _with_final_rows(obs: Any, info: dict[str, Any], key: str | None = None) -> Any:
    """A copy of the batch `obs` (an array, or a dict of them) in which each finished env's row is its last
    observation (`info["final_obs"]` of a `SAME_STEP` vector env; `key`: the dict entry being copied)."""
    if isinstance(obs, dict):
        return {name: _with_final_rows(value, info, name) for name, value in obs.items()}
    rows = np.array(obs, copy=True)
    for i in np.flatnonzero(info.get("_final_obs", ())):
        last = info["final_obs"][i]
        rows[i] = last if key is None else last[key]
    return rows


class FromGymnasium:
    """`num_envs` copies of a Gymnasium task behind the `BatchedEnv` protocol.

    Observations are float32 `(num_envs, obs_dim)` on `device` (a task with cameras: dicts of the state and uint8
    `(num_envs, H, W, C)` frames, `image_specs` the cameras; module docstring); actions are clipped to the task's
    Box bounds. `reset(seed)` seeds copy i with `seed + i` (Gymnasium's vector rule), so a seed reproduces every
    stream.
    """

    resumable = False
    """No `state_dict`: Gymnasium envs have no state to save: a resumed run restarts their episodes."""

    privileged_obs_spec: SpaceSpec | None = None

    def __init__(
        self,
        num_envs: int,
        device: str | torch.device = "cpu",
        config: GymnasiumTaskConfig = GymnasiumTaskConfig(),
        seed: int | None = None,
    ) -> None:
        import gymnasium
        from gymnasium.vector import AutoresetMode, SyncVectorEnv

        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        self.num_envs, self.device, self.config = num_envs, torch.device(device), config
        kwargs: dict[str, Any] = (
            {} if config.max_episode_steps is None else {"max_episode_steps": config.max_episode_steps}
        )
        try:
            probe = gymnasium.make(config.env_id, **kwargs)
        except gymnasium.error.Error as err:
            raise ValueError(f"gymnasium task {config.env_id!r} cannot be made: {err}") from None
        try:
            self.obs_spec, self._state_key, self.image_specs = _observation_layout(probe.observation_space)
            self.action_spec = _box_spec(probe.action_space, "action")
            limit = probe.spec.max_episode_steps if probe.spec is not None else None
            if limit is None:
                raise ValueError(f"gymnasium task {config.env_id!r} has no time limit; set max_episode_steps")
            self.max_episode_steps = int(limit)
            self.dt = float(getattr(probe.unwrapped, "dt", 1.0 / probe.metadata.get("render_fps", 1.0)))
        finally:
            probe.close()
        self._vector = SyncVectorEnv(
            [lambda: gymnasium.make(config.env_id, **kwargs) for _ in range(num_envs)],
            autoreset_mode=AutoresetMode.SAME_STEP,
        )
        self._low = np.asarray(self.action_spec.low, dtype=np.float32)
        self._high = np.asarray(self.action_spec.high, dtype=np.float32)
        self.reset(seed)

    def _tensor(self, array: np.ndarray, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return torch.as_tensor(np.asarray(array), dtype=dtype).to(self.device)

    def _observation(self, obs: Any) -> torch.Tensor | ImageObs:
        """A batch of Gymnasium observations on the robo_rl side: the state tensor, or with a Dict space the
        observation dict (the state under `"state"`, each camera's uint8 frames under its name)."""
        if self._state_key is None:
            return self._tensor(obs)
        state = self._tensor(obs[self._state_key])
        if not self.image_specs:
            return state
        frames = {spec.name: self._tensor(obs[spec.name], torch.uint8) for spec in self.image_specs}
        return {STATE_KEY: state, **frames}

    def reset(self, seed: int | None = None) -> torch.Tensor | ImageObs:
        obs, _ = self._vector.reset(seed=seed)
        return self._observation(obs)

    def step(
        self, action: torch.Tensor
    ) -> tuple[torch.Tensor | ImageObs, torch.Tensor, torch.Tensor, torch.Tensor, dict[str, Any]]:
        numpy_action = np.clip(action.detach().to("cpu", torch.float32).numpy(), self._low, self._high)
        obs, reward, terminated, truncated, info = self._vector.step(numpy_action)
        return (
            self._observation(obs),
            self._tensor(reward),
            self._tensor(terminated, torch.bool),
            self._tensor(truncated, torch.bool),
            {INFO_FINAL_OBS: self._observation(_with_final_rows(obs, info))},
        )

    def close(self) -> None:
        self._vector.close()
