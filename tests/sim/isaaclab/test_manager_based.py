"""The Isaac Lab adapter (robo_rl.sim.manager_based) on fake Isaac Lab envs in pure torch (conftest.py).

Every variant (manager-based and direct API; final observation from `extras`, from manual resets, or computed
before `_reset_idx`) is checked against the batched env contract and against a twin fake that never resets: at
an episode boundary, `final_obs` must be what the twin shows, not the next episode's first observation.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
import torch

from robo_rl.envs import (
    INFO_FINAL_OBS,
    INFO_FINAL_PRIVILEGED_OBS,
    INFO_PRIVILEGED_OBS,
    BatchedEnv,
    check_step_result,
)
from robo_rl.sim.manager_based import IsaacLabConfig, IsaacLabEnv, from_isaaclab

NUM_ENVS = 6
PUSHED = torch.tensor([True, True, True, False, False, False])
"""Envs 0-2 get full force (they leave the rail: terminated), envs 3-5 none (they time out after 8 steps)."""


def push_actions() -> torch.Tensor:
    return PUSHED.float()[:, None] * 5.0  # beyond the default bound: the adapter clips it to 1


def policy_obs(groups: dict[str, Any]) -> torch.Tensor:
    group = "policy" if "policy" in groups else "actor"
    return groups[group].clone()


def test_every_step_keeps_the_contract(make_fake: Callable[..., Any]) -> None:
    env = from_isaaclab(make_fake(seed=1))
    assert isinstance(env, BatchedEnv)
    env.reset(seed=1)
    generator = torch.Generator().manual_seed(0)
    ends = 0
    for _ in range(40):
        action = 2 * torch.rand(NUM_ENVS, 1, generator=generator) - 1
        result = env.step(action)
        check_step_result(env, result)
        ends += int((result[2] | result[3]).sum())
    assert ends >= NUM_ENVS  # 40 steps of 8-step episodes: every env crossed at least one boundary


def test_final_obs_is_the_observation_before_the_reset(make_fake: Callable[..., Any]) -> None:
    env = from_isaaclab(make_fake(seed=2))
    twin = make_fake(seed=2, resets=False)  # same carts, never reset: the truth at each env's first boundary
    env.reset()
    twin.reset()
    ended_before = torch.zeros(NUM_ENVS, dtype=torch.bool)
    for _ in range(MAX_STEPS):
        obs, _, terminated, truncated, info = env.step(push_actions())
        truth = policy_obs(twin.step(push_actions().clamp(-1, 1))[0])
        done = terminated | truncated
        first = done & ~ended_before
        final = info[INFO_FINAL_OBS]
        assert torch.equal(final[first], truth[first])
        # the returned observation of a finished env starts its next episode: clock at zero, cart at rest
        assert torch.equal(obs[done, 2:], torch.tensor([[1.0, 0.0]]).expand(int(done.sum()), 2))
        assert torch.all(obs[done, 1] == 0)
        assert torch.all((final[done] - obs[done]).abs().amax(dim=-1) > 0.1)
        assert torch.equal(final[~done], obs[~done])
        ended_before |= done
    assert ended_before.all()


MAX_STEPS = 8


def test_terminated_and_truncated_stay_apart(make_fake: Callable[..., Any]) -> None:
    env = from_isaaclab(make_fake(seed=3))
    env.reset()
    terminated_by_env = torch.zeros(NUM_ENVS, dtype=torch.bool)
    truncated_at: list[int] = []
    for step in range(1, MAX_STEPS + 1):
        _, _, terminated, truncated, _ = env.step(push_actions())
        assert not torch.any(terminated & truncated)
        terminated_by_env |= terminated
        if truncated.any():
            assert torch.equal(truncated, ~PUSHED)
            truncated_at.append(step)
    assert torch.equal(terminated_by_env, PUSHED)
    assert truncated_at == [MAX_STEPS]


def test_an_env_that_terminates_at_its_time_limit_is_terminated(manager_env_class: Any) -> None:
    fake = manager_env_class(compute_final_obs=True)
    env = from_isaaclab(fake)
    env.reset()
    for _ in range(MAX_STEPS - 1):
        env.step(torch.zeros(NUM_ENVS, 1))
    fake.position[0] = 5.0  # out of bounds on the last step of its episode: both flags are set by the env
    _, _, terminated, truncated, _ = env.step(torch.zeros(NUM_ENVS, 1))
    assert bool(terminated[0]) and not bool(truncated[0])
    assert torch.equal(truncated[1:], torch.ones(NUM_ENVS - 1, dtype=torch.bool))


def test_returned_tensors_are_not_the_envs_buffers(make_fake: Callable[..., Any]) -> None:
    """Isaac Lab writes its done and reward buffers in place: what a runner stored must not change later."""
    env = from_isaaclab(make_fake(seed=4))
    env.reset()
    kept, copies = [], []
    for _ in range(MAX_STEPS + 2):
        obs, reward, terminated, truncated, info = env.step(push_actions())
        kept.append((obs, reward, terminated, truncated, info[INFO_FINAL_OBS]))
        copies.append(tuple(t.clone() for t in kept[-1]))
    for stored, copy in zip(kept, copies, strict=True):
        assert all(torch.equal(a, b) for a, b in zip(stored, copy, strict=True))


def test_privileged_obs_is_the_critic_group(make_fake: Callable[..., Any]) -> None:
    fake = make_fake(seed=5)
    env = from_isaaclab(fake)
    obs = env.reset()
    assert env.privileged_obs_spec is not None and env.privileged_obs_spec.dim == 5
    assert torch.equal(env.privileged_obs[:, :4], obs)
    assert torch.equal(env.privileged_obs[:, 4], fake.mass)
    masses_before = fake.mass.clone()
    for _ in range(MAX_STEPS):
        obs, _, terminated, truncated, info = env.step(push_actions())
        done = terminated | truncated
        assert torch.equal(info[INFO_PRIVILEGED_OBS][:, 4], fake.mass)
        assert torch.equal(info[INFO_PRIVILEGED_OBS][:, :4], obs)
        # the finished episode's critic view still has the mass the cart had in it
        assert torch.equal(info[INFO_FINAL_PRIVILEGED_OBS][done, 4], masses_before[done])
        assert torch.equal(info[INFO_FINAL_PRIVILEGED_OBS][:, :4], info[INFO_FINAL_OBS])
        masses_before = fake.mass.clone()


def test_specs_carry_term_and_joint_names(manager_env_class: Any) -> None:
    env = from_isaaclab(manager_env_class())
    assert env.obs_spec.names == ("position", "velocity", "phase[0]", "phase[1]")
    assert env.privileged_obs_spec is not None
    assert env.privileged_obs_spec.names == ("position", "velocity", "phase[0]", "phase[1]", "mass")
    assert env.action_spec.names == ("rail_joint",)
    assert (env.action_spec.low, env.action_spec.high) == ((-1.0,), (1.0,))
    assert env.dt == pytest.approx(0.1)
    assert env.max_episode_steps == MAX_STEPS
    assert all(math.isinf(v) for v in env.obs_spec.low + env.obs_spec.high)


def test_direct_env_specs_are_named_by_group(direct_env_class: Any) -> None:
    env = from_isaaclab(direct_env_class())
    assert env.obs_spec.names == tuple(f"policy[{i}]" for i in range(4))
    assert env.action_spec.names == ("action",)
    assert env.final_obs_source == "pre_reset"


def test_action_bounds_are_finite_and_clip_the_actions(manager_env_class: Any, direct_env_class: Any) -> None:
    fake = manager_env_class()
    env = from_isaaclab(fake, IsaacLabConfig(action_clip=2.5))
    assert env.action_spec.is_bounded and env.action_spec.high == (2.5,)
    env.reset()
    env.step(torch.tensor([[100.0], [-100.0], [0.5], [0.0], [2.5], [-3.0]]))
    assert torch.equal(fake.last_action[:, 0], torch.tensor([2.5, -2.5, 0.5, 0.0, 2.5, -2.5]))
    bounded = from_isaaclab(direct_env_class(action_bound=3.0), IsaacLabConfig(action_clip=0.5))
    assert (bounded.action_spec.low, bounded.action_spec.high) == ((-3.0,), (3.0,))  # the env's own bounds win


def test_mjlab_names_its_policy_group_actor(manager_env_class: Any) -> None:
    fake = manager_env_class(policy_group="actor", auto_reset=True)
    env = from_isaaclab(fake)
    assert env.final_obs_source == "manual_reset" and fake.cfg.auto_reset is False
    assert torch.equal(env.reset()[:, 0], fake.position)


def test_final_obs_source_follows_what_the_env_offers(manager_env_class: Any) -> None:
    with_extras = manager_env_class(compute_final_obs=True)
    assert from_isaaclab(with_extras).final_obs_source == "extras" and with_extras.cfg.compute_final_obs is True
    assert from_isaaclab(manager_env_class()).final_obs_source == "pre_reset"


def test_bad_settings_name_what_to_supply(manager_env_class: Any) -> None:
    with pytest.raises(ValueError, match="policy_group"):
        from_isaaclab(manager_env_class(), IsaacLabConfig(policy_group="proprio"))
    with pytest.raises(ValueError, match="compute_final_obs"):
        from_isaaclab(manager_env_class(), IsaacLabConfig(final_obs="extras"))
    with pytest.raises(ValueError, match="action_clip"):
        IsaacLabConfig(action_clip=0.0)
    with pytest.raises(ValueError, match="action_clip"):
        IsaacLabConfig(action_clip=math.inf)


def test_an_env_without_a_critic_group_has_no_privileged_obs(manager_env_class: Any) -> None:
    env: IsaacLabEnv = from_isaaclab(manager_env_class(), IsaacLabConfig(critic_group=None))
    assert env.privileged_obs_spec is None
    env.reset()
    result = env.step(torch.zeros(NUM_ENVS, 1))
    check_step_result(env, result)
    assert INFO_PRIVILEGED_OBS not in result[4]
