"""A Stable-Baselines3 `VecEnv` over robo_rl's Gymnasium vector adapter (`GymnasiumVectorEnv`).

SB3 does not take a `gymnasium.vector.VectorEnv`; this thin bridge lets SB3 train on all copies of a batched
robo_rl task through the public Gymnasium interface (same-step autoreset, `final_obs` and `final_info`), so a
benchmark compares the learning code, not a Python loop over single envs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvStepReturn

from robo_rl.sim.gymnasium_adapter import IS_SUCCESS, GymnasiumVectorEnv


class GymnasiumVectorToSB3(VecEnv):
    """SB3 view of a `GymnasiumVectorEnv`: dones = terminated | truncated, per-env info dicts with
    `terminal_observation`, `TimeLimit.truncated` and `is_success` for finished envs."""

    def __init__(self, vector_env: GymnasiumVectorEnv) -> None:
        self.vector_env = vector_env  # before super().__init__, which reads render_mode through get_attr
        super().__init__(vector_env.num_envs, vector_env.single_observation_space, vector_env.single_action_space)
        self._actions: np.ndarray | None = None
        self._seed: int | None = None

    def reset(self) -> np.ndarray:
        obs, _ = self.vector_env.reset(seed=self._seed)
        self._seed = None
        return obs

    def seed(self, seed: int | None = None) -> list[int | None]:  # type: ignore[override]
        self._seed = seed
        return [seed] * self.num_envs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self) -> VecEnvStepReturn:
        obs, rewards, terminated, truncated, info = self.vector_env.step(self._actions)
        dones = terminated | truncated
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        final_info = info.get("final_info", {})
        for i in np.flatnonzero(dones):
            infos[i]["terminal_observation"] = info["final_obs"][i]
            infos[i]["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
            if IS_SUCCESS in final_info:
                infos[i]["is_success"] = bool(final_info[IS_SUCCESS][i])
        return obs, rewards.astype(np.float32), dones, infos

    def close(self) -> None:
        pass

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        return [getattr(self.vector_env, attr_name)] * len(self._indices(indices))

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        setattr(self.vector_env, attr_name, value)

    def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any) -> list[Any]:
        return [getattr(self.vector_env, method_name)(*args, **kwargs)]

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        return [False] * len(self._indices(indices))

    def _indices(self, indices: Any) -> list[int]:
        if indices is None:
            return list(range(self.num_envs))
        return [indices] if isinstance(indices, int) else list(indices)
