"""ChunkEnv: any `BatchedEnv` as an env whose action is a chunk of H actions, executed with a receding horizon.

Each `step(chunk)` applies the first `execute` actions of every env's chunk to the wrapped env, one control period
each (a macro step of `execute * dt` seconds), so PPO, SAC, FQL or flow behaviour cloning train a chunked policy
without knowing about chunks: the policy's action is `(N, H * action_dim)`, named `NAME@i` (step i), bounds
repeated (`robo_rl.chunks.spec`).

The macro step's reward is the undiscounted sum of its executed steps' rewards, so an episode's return is the same
as on the wrapped env (the algorithm's discount then applies per macro step: `gamma ** (1 / execute)` per step
keeps the horizon the same).

An episode that ends mid-chunk (the wrapped env resets that env by itself): the macro step reports the end
(`terminated` / `truncated` of that sub-step, `info["final_obs"]` and `final_privileged_obs` and `success` of the
finished episode), and the remaining actions of that env's chunk are NOT applied to the new episode. Since a
batched env steps all its envs together, that env gets the `idle_action` (default: the middle of the action
bounds, what a normalized 0 maps to) for the rest of the macro step instead. Those idle steps belong to no
transition: their rewards are dropped, and should the new episode end during them too, that end is not reported
(the policy never acted in it); the obs returned is the state after them, the first the policy sees of its new
episode.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import torch

from robo_rl.chunks.spec import check_horizon, chunk_spec
from robo_rl.envs import (
    INFO_FINAL_OBS,
    INFO_FINAL_PRIVILEGED_OBS,
    INFO_SUCCESS,
    INFO_VALID,
    BatchedEnv,
    StepResult,
)
from robo_rl.spaces import SpaceSpec

_FROM_FINISHING_STEP = (INFO_FINAL_OBS, INFO_FINAL_PRIVILEGED_OBS, INFO_SUCCESS)
"""info keys taken from the sub-step where the policy's episode ended (from the last sub-step elsewhere)."""


class ChunkEnv:
    """`env` acting on chunks of `horizon` actions, `execute` of them per step (see the module docstring).

    Attributes beyond `BatchedEnv`'s: `step_action_spec` and `step_dt` (one step's action spec and control period,
    the wrapped env's), `action_chunk` (H) and `execute`; `action_chunking(env)` reads them. Other attributes are
    the wrapped env's.
    """

    def __init__(
        self,
        env: BatchedEnv,
        horizon: int,
        execute: int | None = None,
        idle_action: Sequence[float] | None = None,
    ) -> None:
        self.env = env
        self.execute = check_horizon(horizon, execute)
        self.action_chunk = horizon
        self.step_action_spec: SpaceSpec = env.action_spec
        self.action_spec = chunk_spec(env.action_spec, horizon)
        self.num_envs, self.device = env.num_envs, env.device
        self.obs_spec, self.privileged_obs_spec = env.obs_spec, env.privileged_obs_spec
        self.step_dt = env.dt
        self.dt = env.dt * self.execute
        self.max_episode_steps = math.ceil(env.max_episode_steps / self.execute)
        self.idle_action = _idle_action(env.action_spec, idle_action, env.device)
        nominal = getattr(env, "nominal_action", None)
        self.nominal_action = None if nominal is None else tuple(nominal) * horizon
        """The wrapped env's `nominal_action` at every step of a chunk (`PolicyConfig.init_mean="nominal"`)."""

    def __getattr__(self, name: str) -> Any:  # privileged_obs, render, ... of the wrapped env
        return getattr(self.env, name)

    def reset(self, seed: int | None = None) -> torch.Tensor:
        return self.env.reset(seed)

    def step(self, action: torch.Tensor) -> StepResult:
        """Apply the first `execute` actions of `action` `(N, H * action_dim)`; see the module docstring."""
        n, width = self.num_envs, self.step_action_spec.dim
        if tuple(action.shape) != (n, self.action_spec.dim):
            raise ValueError(f"chunk action: expected shape {(n, self.action_spec.dim)}, got {tuple(action.shape)}")
        chunk = action.reshape(n, self.action_chunk, width)
        ended = torch.zeros(n, dtype=torch.bool, device=self.device)
        terminated, truncated = torch.zeros_like(ended), torch.zeros_like(ended)
        reward: torch.Tensor | None = None
        finished: dict[str, torch.Tensor] = {}
        valid: torch.Tensor | None = None
        for k in range(self.execute):
            step_action = torch.where(ended.unsqueeze(-1), self.idle_action.to(chunk.dtype), chunk[:, k])
            obs, step_reward, step_terminated, step_truncated, info = self.env.step(step_action)
            acting = ~ended
            step_reward = torch.where(acting, step_reward, torch.zeros_like(step_reward))
            reward = step_reward if reward is None else reward + step_reward
            ends = (step_terminated | step_truncated) & acting
            terminated |= step_terminated & acting
            truncated |= step_truncated & acting
            _keep_finished(finished, info, ends)
            if INFO_VALID in info:
                step_valid = info[INFO_VALID] | ended
                valid = step_valid if valid is None else valid & step_valid
            ended |= ends
        assert reward is not None  # execute >= 1
        out = dict(info)
        for key, values in finished.items():
            if key in info:  # where no episode ended, the last sub-step's (final_obs: the returned obs)
                out[key] = torch.where(_rows(ended, values), values, info[key])
        if valid is not None:
            out[INFO_VALID] = valid
        return obs, reward, terminated, truncated, out


def _keep_finished(finished: dict[str, torch.Tensor], info: dict[str, torch.Tensor], ends: torch.Tensor) -> None:
    """Record, for the envs whose policy episode ends at this sub-step, the info of that end."""
    for key in _FROM_FINISHING_STEP:
        if key not in info:
            continue
        value = info[key]
        kept = finished.get(key)
        finished[key] = value.clone() if kept is None else torch.where(_rows(ends, value), value, kept)


def _rows(mask: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """`mask` `(N,)` shaped to broadcast over the rows of `like` `(N, ...)`."""
    return mask.reshape(-1, *([1] * (like.dim() - 1)))


def _idle_action(spec: SpaceSpec, idle: Sequence[float] | None, device: torch.device | str) -> torch.Tensor:
    """The action `(action_dim,)` of an env between the end of its episode and the end of the macro step."""
    if idle is None:
        if not spec.is_bounded:
            raise ValueError("ChunkEnv: the action bounds are not finite; give an idle_action")
        values = [(low + high) / 2 for low, high in zip(spec.low, spec.high, strict=True)]
    else:
        values = [float(v) for v in idle]
    if len(values) != spec.dim:
        raise ValueError(f"ChunkEnv: idle_action has {len(values)} values, the action has {spec.dim}")
    outside = [n for n, v, lo, hi in zip(spec.names, values, spec.low, spec.high, strict=True) if not lo <= v <= hi]
    if outside:
        raise ValueError(f"ChunkEnv: idle_action outside the action bounds for {outside}")
    return torch.tensor(values, dtype=torch.float32, device=device)


@dataclass(frozen=True)
class Chunking:
    """What a policy trained on an env exports as its action (`robo_rl.export.onnx.PolicyMetadata`)."""

    step_action: SpaceSpec
    """One step's action spec."""
    step_dt: float
    """The control period of one step, s."""
    horizon: int
    """H, the actions the policy outputs at once (1: not chunked)."""


def action_chunking(env: BatchedEnv) -> Chunking:
    """The chunking of `env`'s actions: a `ChunkEnv`'s (also under wrappers that forward their attributes, e.g.
    `InterventionEnv`), or none (the env's own action spec and dt, H = 1)."""
    if not hasattr(env, "action_chunk"):
        return Chunking(env.action_spec, float(env.dt), 1)
    chunked = cast(ChunkEnv, env)  # or a wrapper forwarding a ChunkEnv's attributes
    return Chunking(chunked.step_action_spec, float(chunked.step_dt), int(chunked.action_chunk))
