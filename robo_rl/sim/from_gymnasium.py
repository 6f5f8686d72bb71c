"""Any Gymnasium task (e.g. a gymnasium[mujoco] env) as a robo_rl `BatchedEnv`.

`FromGymnasium` steps `num_envs` copies in a `gymnasium.vector.SyncVectorEnv` with `AutoresetMode.SAME_STEP`,
which is the batched contract's reset rule: a finished env's returned observation already starts its next
episode, and its last observation is reported as `info["final_obs"]`. Stepping is Gymnasium's (one Python call
per env, on the CPU); tensors are moved to `device`. This is how robo_rl's algorithms train on tasks it does not
simulate itself, and how benchmarks compare them with other libraries on the very same simulator.

Registered as `gym/<ENV_ID>` for a few tasks (see `robo_rl.sim`); any other id works through
`make("gym/InvertedPendulum-v5", ..., env_id="Hopper-v5")` or by constructing `FromGymnasium` directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from robo_rl.envs import INFO_FINAL_OBS, SpaceSpec, StepResult


@dataclass(frozen=True)
class GymnasiumTaskConfig:
    env_id: str = "InvertedPendulum-v5"
    """Gymnasium id passed to `gymnasium.make`."""
    max_episode_steps: int | None = None
    """Time limit in steps; None keeps the one registered with the id."""

    def __post_init__(self) -> None:
        if self.max_episode_steps is not None and self.max_episode_steps < 1:
            raise ValueError(f"max_episode_steps must be at least 1, got {self.max_episode_steps}")


def _box_spec(space: Any, prefix: str) -> SpaceSpec:
    from gymnasium import spaces

    if not isinstance(space, spaces.Box) or len(space.shape) != 1:
        raise ValueError(f"{prefix} space must be a 1-D gymnasium Box, got {space}")
    size = space.shape[0]
    return SpaceSpec(
        names=tuple(f"{prefix}[{i}]" for i in range(size)),
        low=tuple(float(v) for v in space.low),
        high=tuple(float(v) for v in space.high),
        units=("",) * size,
    )


class FromGymnasium:
    """`num_envs` copies of a Gymnasium task behind the `BatchedEnv` protocol.

    Observations are float32 `(num_envs, obs_dim)` on `device`; actions are clipped to the task's Box bounds.
    `reset(seed)` seeds copy i with `seed + i` (Gymnasium's vector rule), so a seed reproduces every stream.
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
        self.obs_spec = _box_spec(probe.observation_space, "obs")
        self.action_spec = _box_spec(probe.action_space, "action")
        limit = probe.spec.max_episode_steps if probe.spec is not None else None
        if limit is None:
            raise ValueError(f"gymnasium task {config.env_id!r} has no time limit; set max_episode_steps")
        self.max_episode_steps = int(limit)
        self.dt = float(getattr(probe.unwrapped, "dt", 1.0 / probe.metadata.get("render_fps", 1.0)))
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

    def reset(self, seed: int | None = None) -> torch.Tensor:
        obs, _ = self._vector.reset(seed=seed)
        return self._tensor(obs)

    def step(self, action: torch.Tensor) -> StepResult:
        numpy_action = np.clip(action.detach().to("cpu", torch.float32).numpy(), self._low, self._high)
        obs, reward, terminated, truncated, info = self._vector.step(numpy_action)
        final_obs = np.array(obs, dtype=np.float32, copy=True)
        if "_final_obs" in info:
            for i in np.flatnonzero(info["_final_obs"]):
                final_obs[i] = info["final_obs"][i]
        return (
            self._tensor(obs),
            self._tensor(reward),
            self._tensor(terminated, torch.bool),
            self._tensor(truncated, torch.bool),
            {INFO_FINAL_OBS: self._tensor(final_obs)},
        )

    def close(self) -> None:
        self._vector.close()
