"""Fake Isaac Lab environments in pure torch, for the Isaac Lab adapter's tests (robo_rl.sim.manager_based).

Both fakes simulate the same task, a cart on a rail driven by a force: `N` carts of hidden per-env mass (the
critic's extra observation), terminated when a cart leaves `|position| > 1`, timed out after
`max_episode_length` steps. They mimic the parts of Isaac Lab's API that the adapter uses:

- `FakeManagerBasedEnv` (`ManagerBasedRLEnv`): an observation manager with groups "policy" and "critic" (or "actor"
  and "critic", as mjlab names them), terms and term shapes; an action manager whose joint action keeps
  `_joint_names`; `step` resetting finished envs inside itself through `_reset_idx`, then computing the
  observations; persistent buffers (`reset_terminated`, `reset_time_outs`, `reward_buf`) written in place; an
  unbounded action space. Options turn on the newer `cfg.compute_final_obs` (`extras["final_obs"]`) or mjlab's
  `cfg.auto_reset` (manual resets through `reset(env_ids=...)`).
- `FakeDirectEnv` (`DirectRLEnv`): `_get_observations`, `_get_dones`, `_get_rewards`, `_reset_idx`; no managers.

`resets=False` builds a twin that never resets: stepped with the same seed and actions, it shows what the env
looked like at the end of an episode, independently of the adapter.
"""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from gymnasium import spaces

DT = 0.1
MAX_EPISODE_LENGTH = 8
FORCE_GAIN = 10.0
"""Full force (action 1) drives a cart out of bounds within an episode, none leaves it at rest (time-out)."""


class RailCarts:
    """The shared torch dynamics: position, velocity, hidden mass, episode clock; all `(N,)`."""

    def __init__(self, num_envs: int, seed: int, resets: bool) -> None:
        self.num_envs, self.device, self.resets = num_envs, "cpu", resets
        self.step_dt = DT
        self.max_episode_length = MAX_EPISODE_LENGTH
        self.generator = torch.Generator().manual_seed(seed)
        self.position = torch.zeros(num_envs)
        self.velocity = torch.zeros(num_envs)
        self.mass = 1.0 + torch.rand(num_envs, generator=self.generator)
        self.episode_length_buf = torch.zeros(num_envs, dtype=torch.long)
        self.reset_terminated = torch.zeros(num_envs, dtype=torch.bool)
        self.reset_time_outs = torch.zeros(num_envs, dtype=torch.bool)
        self.reward_buf = torch.zeros(num_envs)
        self.extras: dict[str, Any] = {}
        self.last_action = torch.zeros(num_envs, 1)

    def terms(self) -> dict[str, torch.Tensor]:
        """Observation terms `(N, size)`; the phase makes an episode's last observation unlike its first."""
        angle = math.pi * self.episode_length_buf.float() / MAX_EPISODE_LENGTH  # half a turn: no wrap at the limit
        return {
            "position": self.position[:, None].clone(),
            "velocity": self.velocity[:, None].clone(),
            "phase": torch.stack((torch.cos(angle), torch.sin(angle)), dim=-1),
            "mass": self.mass[:, None].clone(),
        }

    def advance(self, action: torch.Tensor) -> torch.Tensor:
        """Integrate one control period; fill the done buffers in place; returns the env ids to reset."""
        self.last_action = action.clone()
        self.velocity += DT * FORCE_GAIN * action[:, 0] / self.mass
        self.position += DT * self.velocity
        self.episode_length_buf += 1
        self.reset_terminated[:] = self.position.abs() > 1.0
        self.reset_time_outs[:] = self.episode_length_buf >= MAX_EPISODE_LENGTH
        self.reward_buf[:] = 1.0 - self.position.abs()
        done = self.reset_terminated | self.reset_time_outs
        if not self.resets:
            return torch.zeros(0, dtype=torch.long)
        return done.nonzero(as_tuple=False).squeeze(-1)

    def _reset_idx(self, env_ids: torch.Tensor) -> None:
        count = len(env_ids)
        self.position[env_ids] = 0.4 * torch.rand(count, generator=self.generator) - 0.2
        self.velocity[env_ids] = 0.0
        self.mass[env_ids] = 1.0 + torch.rand(count, generator=self.generator)
        self.episode_length_buf[env_ids] = 0

    def close(self) -> None:
        self.closed = True


FakeStepReturn = tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor, torch.Tensor, dict[str, Any]]
"""Isaac Lab's `VecEnvStepReturn`: (obs groups, reward, terminated, time_outs, extras)."""


def _box(size: int, bound: float = math.inf) -> spaces.Box:
    return spaces.Box(low=-bound, high=bound, shape=(size,))


class FakeObservationManager:
    """Isaac Lab's ObservationManager surface: groups of named terms, concatenated per group."""

    def __init__(self, env: RailCarts, policy_group: str) -> None:
        self.env = env
        policy_terms = ["position", "velocity", "phase"]
        self.active_terms = {policy_group: policy_terms, "critic": [*policy_terms, "mass"]}
        self.group_obs_term_dim = {policy_group: [(1,), (1,), (2,)], "critic": [(1,), (1,), (2,), (1,)]}
        self.group_obs_dim = {policy_group: (4,), "critic": (5,)}
        self.group_obs_concatenate = {policy_group: True, "critic": True}

    def compute(self, update_history: bool = False) -> dict[str, torch.Tensor]:
        terms = self.env.terms()
        return {group: torch.cat([terms[t] for t in names], dim=-1) for group, names in self.active_terms.items()}


class FakeJointEffortAction:
    _joint_names = ("rail_joint",)


class FakeActionManager:
    active_terms = ("joint_effort",)
    action_term_dim = (1,)

    def get_term(self, name: str) -> FakeJointEffortAction:
        return FakeJointEffortAction()


class FakeManagerBasedEnv(RailCarts):
    """`ManagerBasedRLEnv`'s step: physics, dones, rewards, reset inside step, then observations."""

    def __init__(
        self,
        num_envs: int = 6,
        seed: int = 0,
        resets: bool = True,
        compute_final_obs: bool = False,
        auto_reset: bool = False,
        policy_group: str = "policy",
    ) -> None:
        super().__init__(num_envs, seed, resets)
        self.cfg = SimpleNamespace(decimation=2)
        if compute_final_obs:
            self.cfg.compute_final_obs = False
        if auto_reset:
            self.cfg.auto_reset = True
        self.observation_manager = FakeObservationManager(self, policy_group)
        self.action_manager = FakeActionManager()
        self.single_observation_space = spaces.Dict({policy_group: _box(4), "critic": _box(5)})
        self.single_action_space = _box(1)

    @property
    def unwrapped(self) -> FakeManagerBasedEnv:
        return self

    def reset(
        self, seed: int | None = None, env_ids: torch.Tensor | None = None, options: Any = None
    ) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        self._reset_idx(torch.arange(self.num_envs) if env_ids is None else env_ids)
        return self.observation_manager.compute(), self.extras

    def step(self, action: torch.Tensor) -> FakeStepReturn:
        reset_ids = self.advance(action)
        if len(reset_ids) > 0 and getattr(self.cfg, "compute_final_obs", False):
            self.extras["final_obs"] = self.observation_manager.compute()
        if len(reset_ids) > 0 and getattr(self.cfg, "auto_reset", True):
            self._reset_idx(reset_ids)
        obs = self.observation_manager.compute(update_history=True)
        return obs, self.reward_buf, self.reset_terminated, self.reset_time_outs, self.extras


class FakeDirectEnv(RailCarts):
    """`DirectRLEnv`'s step: `_get_dones`, `_get_rewards`, `_reset_idx`, then `_get_observations`."""

    def __init__(self, num_envs: int = 6, seed: int = 0, resets: bool = True, action_bound: float = math.inf) -> None:
        super().__init__(num_envs, seed, resets)
        self.cfg = SimpleNamespace(observation_space=4, state_space=5, action_space=1)
        self.single_observation_space = spaces.Dict({"policy": _box(4), "critic": _box(5)})
        self.single_action_space = _box(1, action_bound)

    @property
    def unwrapped(self) -> FakeDirectEnv:
        return self

    def _get_observations(self) -> dict[str, torch.Tensor]:
        terms = self.terms()
        policy = torch.cat([terms["position"], terms["velocity"], terms["phase"]], dim=-1)
        return {"policy": policy, "critic": torch.cat([policy, terms["mass"]], dim=-1)}

    def reset(self, seed: int | None = None, options: Any = None) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        self._reset_idx(torch.arange(self.num_envs))
        return self._get_observations(), self.extras

    def step(self, action: torch.Tensor) -> FakeStepReturn:
        reset_ids = self.advance(action)
        if len(reset_ids) > 0:
            self._reset_idx(reset_ids)
        return self._get_observations(), self.reward_buf, self.reset_terminated, self.reset_time_outs, self.extras


VARIANTS = {
    "manager/pre_reset": lambda **kw: FakeManagerBasedEnv(**kw),
    "manager/extras": lambda **kw: FakeManagerBasedEnv(compute_final_obs=True, **kw),
    "manager/manual_reset": lambda **kw: FakeManagerBasedEnv(auto_reset=True, **kw),
    "direct/pre_reset": lambda **kw: FakeDirectEnv(**kw),
}
"""Each API and each way of getting the final observation (the adapter picks it from what the env offers)."""


@pytest.fixture(params=sorted(VARIANTS))
def make_fake(request: pytest.FixtureRequest) -> Any:
    """`make_fake(resets=True, seed=0)` → a fake Isaac Lab env of one variant (the fixture is parametrized)."""
    return VARIANTS[request.param]


@pytest.fixture
def manager_env_class() -> type[FakeManagerBasedEnv]:
    return FakeManagerBasedEnv


@pytest.fixture
def direct_env_class() -> type[FakeDirectEnv]:
    return FakeDirectEnv
