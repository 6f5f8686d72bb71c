"""A task whose actor observes what only the critic observes (`ObservePrivileged`): the teacher of a distillation.

Teacher-student training (RAPTOR's meta-imitation, Eschmann et al. 2025; RMA, Kumar et al. 2021) first trains a
policy that knows the hidden parameters of each episode (here: the drawn airframe, `privileged_obs`), then distills
it into a student that must infer them from its history (`robo_rl.algorithms.distill`). The wrapper appends the
env's privileged observation to its observation, so the ordinary PPO preset trains the teacher; the critic still
sees the privileged part (once more after the observation: harmless). The privileged names keep their own names,
so no deploy profile can match a teacher: it is not meant to fly a robot.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from robo_rl.envs import (
    INFO_FINAL_OBS,
    INFO_FINAL_PRIVILEGED_OBS,
    INFO_PRIVILEGED_OBS,
    BatchedEnv,
    SpaceSpec,
    StepResult,
)


class ObservePrivileged:
    """`env` with `obs := cat(obs, privileged_obs)`; everything else is `env`'s."""

    capturable = False
    """No split step of its own (`robo_rl.envs.capturable`): the inner env's would return its own observation."""

    def __init__(self, env: BatchedEnv) -> None:
        if env.privileged_obs_spec is None:
            raise ValueError(f"{type(env).__name__} has no privileged observation for its actor to observe")
        self.env = env
        self.obs_spec = _concat(env.obs_spec, env.privileged_obs_spec)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)

    def state_dict(self) -> dict[str, Any]:
        """The inner env's state (`robo_rl.storage` resumes training from it)."""
        return self.env.state_dict()  # type: ignore[attr-defined, no-any-return]

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.env.load_state_dict(state_dict)  # type: ignore[attr-defined]

    def reset(self, seed: int | None = None) -> torch.Tensor:
        obs = self.env.reset(seed=seed)
        return torch.cat((obs, self.env.privileged_obs), dim=-1)  # type: ignore[attr-defined]

    def step(self, action: torch.Tensor) -> StepResult:
        obs, reward, terminated, truncated, info = self.env.step(action)
        info = dict(info)
        info[INFO_FINAL_OBS] = torch.cat((info[INFO_FINAL_OBS], info[INFO_FINAL_PRIVILEGED_OBS]), dim=-1)
        return torch.cat((obs, info[INFO_PRIVILEGED_OBS]), dim=-1), reward, terminated, truncated, info


def _concat(first: SpaceSpec, second: SpaceSpec) -> SpaceSpec:
    """`first` then `second`; an entry of `second` whose bounds coincide (a parameter these settings do not draw)
    becomes unbounded: an observation box of zero width is malformed (Gymnasium's checker says so)."""
    fixed = [low == high for low, high in zip(second.low, second.high, strict=True)]
    low = tuple(-math.inf if same else value for same, value in zip(fixed, second.low, strict=True))
    high = tuple(math.inf if same else value for same, value in zip(fixed, second.high, strict=True))
    return SpaceSpec(first.names + second.names, first.low + low, first.high + high, first.units + second.units)
