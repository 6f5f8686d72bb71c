"""The critic's input: an env's observation (its state vector, with cameras) and the privileged part it provides."""

from __future__ import annotations

from typing import Any

import torch

from robo_rl.envs import BatchedEnv, ImageObs, state_of


def critic_observation(obs: torch.Tensor | ImageObs, info: dict[str, Any], key: str) -> torch.Tensor:
    """Critic input `(N, critic_obs_dim)` after a step: the observation's state vector, followed by the privileged
    part `info[key]` when the env provides one."""
    privileged = info.get(key)
    return state_of(obs) if privileged is None else torch.cat([state_of(obs), privileged], dim=-1)


def reset_critic_observation(env: BatchedEnv, obs: torch.Tensor | ImageObs) -> torch.Tensor:
    """Critic input right after `reset`, when there is no step info: the env exposes `privileged_obs`."""
    privileged = getattr(env, "privileged_obs", None)
    return state_of(obs) if privileged is None else torch.cat([state_of(obs), privileged], dim=-1)
