"""Isaac Lab-style environments (manager-based and direct) as robo_rl `BatchedEnv`s.

Isaac Lab's `ManagerBasedRLEnv` and `DirectRLEnv`, and mjlab's `ManagerBasedRlEnv` (which copies their API), step
`num_envs` copies on one torch device: `step(action)` returns `(obs, reward, terminated, time_outs, extras)`, where
`obs` maps an observation group ("policy" in Isaac Lab, "actor" in mjlab, "critic" for the critic) to an
`(N, dim)` tensor, or to a dict of per-term tensors for groups that do not concatenate their terms. They reset
finished envs inside `step`, so the observation returned for such an env already starts its next episode.
`IsaacLabEnv` maps this onto robo_rl's contract (`robo_rl.envs`):

- the policy group is the observation; the critic group, where the env has one, the privileged observation;
- `terminated` stays apart from `truncated` (the time-outs, less the envs that also terminated: those get no
  bootstrap);
- actions get finite bounds: the env's action space where it is bounded, else `±action_clip` (Isaac Lab and mjlab
  declare unbounded action spaces; their action terms scale the raw action);
- `info["final_obs"]` is the last observation of each finished episode, taken before the env reset it.

How the final observation is obtained depends on what the env offers (`IsaacLabConfig.final_obs`, "auto" picks):

- "extras": Isaac Lab versions whose config has `compute_final_obs`. The adapter sets it; `step` then computes the
  observations before it resets and puts them in `extras["final_obs"]`.
- "manual_reset": mjlab (config field `auto_reset`). The adapter sets `auto_reset = False`, so `step` returns the
  true terminal observation and leaves the reset to the caller; the adapter then resets the finished envs with
  `env.reset(env_ids=...)` and returns their first observation. (mjlab's `observation_manager.compute()` without
  `update_history` returns its cached buffer, so computing observations "before the reset" would read stale data.)
- "pre_reset": any other Isaac Lab version. The adapter wraps the env's `_reset_idx` so that, inside `step`, the
  observations are computed right before the reset: `observation_manager.compute()` for manager-based envs,
  `_get_observations()` for direct ones. Versions whose `compute()` always advances observation histories shift
  those histories by one extra frame at an episode boundary; prefer "extras" where the env has it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch

from robo_rl.envs import INFO_FINAL_OBS, INFO_FINAL_PRIVILEGED_OBS, INFO_PRIVILEGED_OBS, SpaceSpec, StepResult

FinalObsSource = Literal["auto", "extras", "manual_reset", "pre_reset"]
ObsGroups = Mapping[str, Any]
"""An Isaac Lab observation: group name → `(N, dim)` tensor, or → {term name: `(N, ...)` tensor}."""

POLICY_GROUPS = ("policy", "actor")
"""Names of the policy's observation group, tried in this order: Isaac Lab's, then mjlab's."""


@dataclass(frozen=True)
class IsaacLabConfig:
    """How an Isaac Lab-style env is mapped onto the batched env contract."""

    policy_group: str | None = None
    """Observation group the policy sees; None: the first of "policy" (Isaac Lab) and "actor" (mjlab) present."""
    critic_group: str | None = "critic"
    """Group mapped to the privileged (critic-only) observation when the env has it; None: no privileged obs."""
    action_clip: float = 1.0
    """Bound of the raw actions where the env's action space is unbounded: actions are clipped to
    `[-action_clip, action_clip]` before the env's action terms scale them (rsl_rl's `clip_actions`). 1.0 suits
    terms whose scale maps ±1 onto the useful range (mjlab's cart-pole: ±1 is its motor's control range)."""
    final_obs: FinalObsSource = "auto"
    """How the last observation of a finished episode is obtained (module docstring); "auto": "extras" if the
    env's config has `compute_final_obs`, else "manual_reset" if it has `auto_reset`, else "pre_reset"."""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.action_clip) and self.action_clip > 0):
            raise ValueError(f"action_clip must be a finite positive number, got {self.action_clip}")
        if self.final_obs not in ("auto", "extras", "manual_reset", "pre_reset"):
            raise ValueError(f"final_obs must be one of auto, extras, manual_reset, pre_reset; got {self.final_obs!r}")


class IsaacLabEnv:
    """An Isaac Lab `ManagerBasedRLEnv`/`DirectRLEnv` or mjlab `ManagerBasedRlEnv` behind `BatchedEnv`.

    Observations are float32 `(num_envs, obs_dim)` on the env's device: the policy group, its terms flattened
    and concatenated in the env's order. The adapter owns the env: it sets the env config's
    `compute_final_obs` or `auto_reset` as the chosen final-observation source needs (module docstring).

    Args:
        env: the environment, or a Gymnasium wrapper around it (its `unwrapped` is used).
        config: group names, action bounds and final-observation source.
    """

    resumable = False
    """No `state_dict`: Isaac Lab and mjlab envs are not checkpointed here: a resumed run restarts their episodes."""

    def __init__(self, env: Any, config: IsaacLabConfig = IsaacLabConfig()) -> None:
        self.env = getattr(env, "unwrapped", env)
        self.config = config
        self.num_envs = int(self.env.num_envs)
        self.device = torch.device(self.env.device)
        self.dt = float(self.env.step_dt)
        self.max_episode_steps = int(self.env.max_episode_length)
        groups = _observation_groups(self.env)
        self._policy_group = _policy_group(config.policy_group, groups)
        self.obs_spec = observation_spec(self.env, self._policy_group)
        critic = config.critic_group if config.critic_group in groups else None
        self._critic_group = critic
        self.privileged_obs_spec = None if critic is None else observation_spec(self.env, critic)
        self.action_spec = action_spec(self.env, config.action_clip)
        self._low = self.action_spec.low_tensor(self.device)
        self._high = self.action_spec.high_tensor(self.device)
        self.final_obs_source = _final_obs_source(self.env, config.final_obs)
        self._prepare_final_obs()
        self._capturing = False
        self._pre_reset: ObsGroups | None = None
        self.privileged_obs = torch.zeros(self.num_envs, self._privileged_dim(), device=self.device)

    def reset(self, seed: int | None = None) -> torch.Tensor:
        """Reset every env (seeding the env's generators when `seed` is given); returns obs `(N, obs_dim)`."""
        groups, _ = self.env.reset(seed=seed)
        self._set_privileged(groups)
        return self._group(groups, self._policy_group)

    def step(self, action: torch.Tensor) -> StepResult:
        """Clip `(N, action_dim)` actions to the bounds and step; finished envs come back reset (module doc)."""
        action = torch.clamp(action.to(self.device, torch.float32), self._low, self._high)
        self._pre_reset, self._capturing = None, True
        try:
            groups, reward, terminated, time_outs, extras = self.env.step(action)
        finally:
            self._capturing = False
        terminated = terminated.to(torch.bool).clone()
        truncated = time_outs.to(torch.bool) & ~terminated
        done = terminated | truncated
        final_groups = groups
        if bool(done.any()):
            final_groups, groups = self._boundary(groups, extras, done)
        obs = self._group(groups, self._policy_group)
        info = self._info(obs, groups, final_groups, done)
        return obs, reward.to(torch.float32).clone(), terminated, truncated, info

    def close(self) -> None:
        """Close the wrapped env."""
        self.env.close()

    def _boundary(self, groups: ObsGroups, extras: dict[str, Any], done: torch.Tensor) -> tuple[ObsGroups, ObsGroups]:
        """(observations before the reset, observations returned) of a step in which envs finished."""
        if self.final_obs_source == "extras":
            final = extras.pop("final_obs", None)
            if final is None:
                raise RuntimeError(
                    "the env's config has compute_final_obs set, but its step put no 'final_obs' in extras; "
                    "pass IsaacLabConfig(final_obs='pre_reset')"
                )
            return final, groups
        if self.final_obs_source == "manual_reset":
            env_ids = done.nonzero().squeeze(-1)
            reset_groups, _ = self.env.reset(env_ids=env_ids)
            return groups, _merge(done, reset_groups, groups)
        if self._pre_reset is None:
            raise RuntimeError("envs finished, but the env's step called no _reset_idx before its observations")
        return self._pre_reset, groups

    def _info(
        self, obs: torch.Tensor, groups: ObsGroups, final_groups: ObsGroups, done: torch.Tensor
    ) -> dict[str, torch.Tensor]:
        """final_obs (and the privileged pair): the pre-reset observation where `done`, the returned one elsewhere."""
        info = {INFO_FINAL_OBS: _where(done, self._group(final_groups, self._policy_group), obs)}
        if self._critic_group is not None:
            self._set_privileged(groups)
            final = self._group(final_groups, self._critic_group)
            info[INFO_PRIVILEGED_OBS] = self.privileged_obs
            info[INFO_FINAL_PRIVILEGED_OBS] = _where(done, final, self.privileged_obs)
        return info

    def _group(self, groups: ObsGroups, name: str) -> torch.Tensor:
        if name not in groups:
            raise KeyError(f"the env returned no observation group {name!r}; it returned {sorted(groups)}")
        return flatten_group(groups[name], self.num_envs).to(self.device, torch.float32)

    def _set_privileged(self, groups: ObsGroups) -> None:
        if self._critic_group is not None:
            self.privileged_obs = self._group(groups, self._critic_group)

    def _privileged_dim(self) -> int:
        return 0 if self.privileged_obs_spec is None else self.privileged_obs_spec.dim

    def _prepare_final_obs(self) -> None:
        """Configure the env (or wrap its `_reset_idx`) for the chosen final-observation source."""
        if self.final_obs_source == "extras":
            self.env.cfg.compute_final_obs = True
        elif self.final_obs_source == "manual_reset":
            self.env.cfg.auto_reset = False
        else:
            self.env._reset_idx = self._capturing_reset(self.env._reset_idx, _observer(self.env))

    def _capturing_reset(self, reset_idx: Callable[..., Any], observe: Callable[[], ObsGroups]) -> Callable[..., Any]:
        """`reset_idx` that first records the observations, when called from inside `step`."""

        def capturing(*args: Any, **kwargs: Any) -> Any:
            if self._capturing:
                self._pre_reset = {name: _detached(value) for name, value in observe().items()}
            return reset_idx(*args, **kwargs)

        return capturing


def from_isaaclab(env: Any, config: IsaacLabConfig = IsaacLabConfig()) -> IsaacLabEnv:
    """An Isaac Lab `ManagerBasedRLEnv`/`DirectRLEnv` (or mjlab `ManagerBasedRlEnv`) as a robo_rl `BatchedEnv`."""
    return IsaacLabEnv(env, config)


def observation_spec(env: Any, group: str) -> SpaceSpec:
    """The flat spec of observation `group`: term names where the env has an observation manager (`cart_pos`,
    `pole_angle[0]`, ...), else `group[i]`; bounds from the group's Box space where it gives them, else infinite."""
    space = _observation_groups(env)[group]
    dim = _space_dim(space)
    low, high = _space_bounds(space, dim)
    return SpaceSpec(_observation_names(env, group, dim), low, high, ("",) * dim)


def action_spec(env: Any, action_clip: float) -> SpaceSpec:
    """The flat action spec: names of the action terms' targets (joint names) where the env has them, bounds
    from the action space where finite, else `±action_clip`."""
    space = env.single_action_space
    dim = _space_dim(space)
    low, high = _space_bounds(space, dim)
    low = tuple(v if math.isfinite(v) else -action_clip for v in low)
    high = tuple(v if math.isfinite(v) else action_clip for v in high)
    return SpaceSpec(_action_names(env, dim), low, high, ("",) * dim)


def flatten_group(value: torch.Tensor | Mapping[str, torch.Tensor], num_envs: int) -> torch.Tensor:
    """One observation group as `(num_envs, dim)`: a tensor flattened per env, or a dict's terms concatenated."""
    if isinstance(value, Mapping):
        return torch.cat([term.reshape(num_envs, -1) for term in value.values()], dim=-1)
    return value.reshape(num_envs, -1).clone()


def _observation_groups(env: Any) -> Mapping[str, Any]:
    """Group name → its (single-env) space, from the env's Gymnasium-style `single_observation_space`."""
    spaces = getattr(env.single_observation_space, "spaces", None)
    if not isinstance(spaces, Mapping):
        raise ValueError(
            "the env's single_observation_space must be a Dict of observation groups (Isaac Lab's and mjlab's are); "
            f"got {env.single_observation_space!r}"
        )
    return spaces


def _policy_group(requested: str | None, groups: Mapping[str, Any]) -> str:
    candidates = POLICY_GROUPS if requested is None else (requested,)
    for name in candidates:
        if name in groups:
            return name
    raise ValueError(
        f"the env has no observation group {' or '.join(map(repr, candidates))}; its groups are {sorted(groups)}: "
        "pass IsaacLabConfig(policy_group=...)"
    )


def _space_dim(space: Any) -> int:
    inner = getattr(space, "spaces", None)
    if isinstance(inner, Mapping):
        return sum(_space_dim(term) for term in inner.values())
    return math.prod(space.shape)


def _space_bounds(space: Any, dim: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Per-element bounds of a Box (scalar or array bounds); infinite for a Dict of terms."""
    if isinstance(getattr(space, "spaces", None), Mapping):
        return (-math.inf,) * dim, (math.inf,) * dim
    shape = tuple(space.shape)
    low = np.broadcast_to(np.asarray(space.low, dtype=np.float64), shape).reshape(-1)
    high = np.broadcast_to(np.asarray(space.high, dtype=np.float64), shape).reshape(-1)
    return tuple(float(v) for v in low), tuple(float(v) for v in high)


def _element_names(name: str, size: int) -> list[str]:
    return [name] if size == 1 else [f"{name}[{i}]" for i in range(size)]


def _observation_names(env: Any, group: str, dim: int) -> tuple[str, ...]:
    manager = getattr(env, "observation_manager", None)
    if manager is not None and group in manager.active_terms:
        sizes = [math.prod(shape) for shape in manager.group_obs_term_dim[group]]
        terms = zip(manager.active_terms[group], sizes, strict=True)
        names = [name for term, size in terms for name in _element_names(term, size)]
        if len(names) == dim and len(set(names)) == dim:
            return tuple(names)
    return tuple(_element_names(group, dim))


TARGET_NAME_ATTRIBUTES = ("target_names", "joint_names", "_joint_names")
"""Where an action term keeps the names of what it drives: mjlab's `target_names`, Isaac Lab's joint actions'
`_joint_names` (`joint_names` in some versions)."""


def _action_names(env: Any, dim: int) -> tuple[str, ...]:
    manager = getattr(env, "action_manager", None)
    if manager is None:
        return tuple(_element_names("action", dim))
    per_term = [
        (name, _term_targets(name, manager.get_term(name), size))
        for name, size in zip(manager.active_terms, manager.action_term_dim, strict=True)
    ]
    names = [target for _, targets in per_term for target in targets]
    if len(set(names)) != len(names):
        names = [f"{term}/{target}" for term, targets in per_term for target in targets]
    if len(names) != dim or len(set(names)) != dim:
        return tuple(_element_names("action", dim))
    return tuple(names)


def _term_targets(term_name: str, term: Any, size: int) -> list[str]:
    for attribute in TARGET_NAME_ATTRIBUTES:
        targets = getattr(term, attribute, None)
        if isinstance(targets, (list, tuple)) and len(targets) == size and all(isinstance(t, str) for t in targets):
            return list(targets)
    return _element_names(term_name, size)


def _final_obs_source(env: Any, requested: FinalObsSource) -> FinalObsSource:
    cfg = getattr(env, "cfg", None)
    if requested == "auto":
        if hasattr(cfg, "compute_final_obs"):
            return "extras"
        return "manual_reset" if hasattr(cfg, "auto_reset") else "pre_reset"
    needs = {"extras": "compute_final_obs", "manual_reset": "auto_reset"}.get(requested)
    if needs is not None and not hasattr(cfg, needs):
        raise ValueError(f"final_obs={requested!r} needs an env whose config has {needs!r}; this one has not")
    if requested == "pre_reset" and not hasattr(env, "_reset_idx"):
        raise ValueError("final_obs='pre_reset' needs an env with _reset_idx (Isaac Lab's envs have it)")
    return requested


def _observer(env: Any) -> Callable[[], ObsGroups]:
    """What computes the env's current observations without stepping: the observation manager, or a direct
    env's `_get_observations`."""
    manager = getattr(env, "observation_manager", None)
    if manager is not None:
        return manager.compute
    return env._get_observations


def _detached(value: Any) -> Any:
    """A copy of an observation group that the env's reset cannot overwrite."""
    if isinstance(value, Mapping):
        return {name: term.clone() for name, term in value.items()}
    return value.clone()


def _merge(done: torch.Tensor, reset_groups: ObsGroups, groups: ObsGroups) -> dict[str, Any]:
    """Per group: the reset observation where `done`, the step's elsewhere (its history and noise untouched)."""
    merged: dict[str, Any] = {}
    for name, value in groups.items():
        fresh = reset_groups[name]
        if isinstance(value, Mapping):
            merged[name] = {term: _where(done, fresh[term], part) for term, part in value.items()}
        else:
            merged[name] = _where(done, fresh, value)
    return merged


def _where(done: torch.Tensor, if_done: torch.Tensor, otherwise: torch.Tensor) -> torch.Tensor:
    """Row-wise choice between two `(N, ...)` tensors by the `(N,)` mask `done`."""
    mask = done.reshape(-1, *([1] * (otherwise.dim() - 1)))
    return torch.where(mask, if_done.to(otherwise.device), otherwise)
