"""The contract of `BatchedTask`, held by a tiny task on it: counters, auto-reset, seeding, exact resume, and a
subclass that would lose its state fails loudly."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from robo_rl.envs import INFO_FINAL_OBS, SpaceSpec, StepResult, check_step_result
from robo_rl.sim.batched_task import BatchedTask

N, LIMIT, WALL = 6, 5, 3.0


class Walk(BatchedTask):
    """1-D walkers starting at U(0, 1): the action moves them, passing `WALL` terminates, `LIMIT` steps truncate."""

    def __init__(self, num_envs: int = N, seed: int | None = 0) -> None:
        super().__init__(num_envs, "cpu", 0.1, LIMIT, seed)
        self.obs_spec = SpaceSpec(("x",), (-10.0,), (10.0,), ("m",))
        self.action_spec = SpaceSpec(("dx",), (-1.0,), (1.0,), ("m",))
        self.x = torch.zeros(num_envs)
        self.reset(seed)

    def step(self, action: torch.Tensor) -> StepResult:
        self.x = self.x + action.reshape(self.num_envs)
        self._tick()
        final_obs = self.x.unsqueeze(-1).clone()
        terminated = self.x > WALL
        truncated = self._truncated(terminated)
        obs = self._auto_reset(terminated | truncated, final_obs)
        return obs, -self.x.abs(), terminated, truncated, {INFO_FINAL_OBS: final_obs}

    def _draw(self) -> torch.Tensor:
        return torch.rand(self.num_envs, generator=self._generator)

    def _reset_all(self) -> torch.Tensor:
        self.x = self._draw()
        return self.x.unsqueeze(-1).clone()

    def _reset_where(self, done: torch.Tensor) -> None:
        self.x = torch.where(done, self._draw(), self.x)

    def _first_obs(self, done: torch.Tensor) -> torch.Tensor:
        return self.x.unsqueeze(-1).clone()

    def _physics_state(self) -> dict[str, Any]:
        return {"x": self.x.clone()}

    def _load_physics_state(self, state_dict: dict[str, Any]) -> None:
        self.x = state_dict["x"].clone()


def _actions(steps: int) -> torch.Tensor:
    return torch.rand(steps, N, 1, generator=torch.Generator().manual_seed(1)) * 2 - 0.5


def test_counters_count_steps_and_the_time_limit_truncates_and_resets() -> None:
    env = Walk()
    start = env.reset(seed=3)
    for k in range(1, LIMIT):
        result = env.step(torch.zeros(N, 1))
        check_step_result(env, result)
        assert torch.equal(env._steps, torch.full((N,), k)) and not result[3].any()
    obs, _, terminated, truncated, info = env.step(torch.zeros(N, 1))
    assert truncated.all() and not terminated.any() and torch.equal(env._steps, torch.zeros(N, dtype=torch.long))
    assert torch.equal(info[INFO_FINAL_OBS], start)  # standing still: the episode ended where it began...
    assert not torch.equal(obs, start) and torch.equal(obs[:, 0], env.x)  # ...and the new one starts elsewhere


def test_only_finished_envs_reset_and_restart_their_counters() -> None:
    env = Walk()
    before = env.x.clone()
    push = torch.zeros(N, 1)
    push[0] = 10.0  # env 0 passes the wall at once
    env.step(torch.zeros(N, 1))
    obs, _, terminated, truncated, info = env.step(push)
    assert terminated.tolist() == [True] + [False] * (N - 1) and not truncated.any()
    assert info[INFO_FINAL_OBS][0, 0] > WALL and 0 <= obs[0, 0] < 1  # its last obs, then its new episode's first
    assert torch.equal(obs[1:, 0], before[1:]) and env._steps.tolist() == [0] + [2] * (N - 1)


def test_the_same_seed_gives_the_same_stream_and_none_a_fresh_one() -> None:
    assert torch.equal(Walk(seed=5).reset(seed=5), Walk(seed=9).reset(seed=5))
    assert not torch.equal(Walk(seed=None).x, Walk(seed=None).x)


def test_state_dict_round_trip_continues_the_exact_stream() -> None:
    actions = _actions(40)
    env = Walk(seed=2)
    for action in actions[:17]:
        env.step(action)
    saved = env.state_dict()
    assert {"x", "steps", "generator"} <= saved.keys()
    expected = [env.step(action) for action in actions[17:]]
    resumed = Walk(seed=99)
    resumed.load_state_dict(saved)
    for action, (obs, reward, terminated, truncated, _) in zip(actions[17:], expected, strict=True):
        got = resumed.step(action)
        assert all(torch.equal(a, b) for a, b in zip(got[:4], (obs, reward, terminated, truncated), strict=True))
    assert sum(int((t[2] | t[3]).sum()) for t in expected) > 0  # the continuation crossed resets


def test_a_task_without_its_state_cannot_be_defined() -> None:
    with pytest.raises(TypeError, match="_load_physics_state without its pair"):

        class Forgot(Walk):
            _physics_state = BatchedTask._physics_state  # as if never written

    with pytest.raises(TypeError, match="keeps no state"):

        class Stateless(BatchedTask):
            def step(self, action: torch.Tensor) -> StepResult:
                raise NotImplementedError

            def _reset_where(self, done: torch.Tensor) -> None:
                pass


class Cart(BatchedTask):
    """The smallest task on the base's defaults: its state named, one reset hook and one observation."""

    state_attributes = ("_x", "_episodes")

    def __init__(self, num_envs: int = N, seed: int | None = 0) -> None:
        super().__init__(num_envs, "cpu", 0.1, LIMIT, seed)
        self.obs_spec = SpaceSpec(("x",), (-10.0,), (10.0,), ("m",))
        self.action_spec = SpaceSpec(("dx",), (-1.0,), (1.0,), ("m",))
        self._x = torch.zeros(num_envs, 1)
        self._episodes = torch.zeros(num_envs, dtype=torch.long)
        self.reset(seed)

    def step(self, action: torch.Tensor) -> StepResult:
        self._x = self._x + action.reshape(self.num_envs, 1)
        return self._end_step(self._current_obs(), -self._x[:, 0].abs(), {}, terminated=self._x[:, 0] > WALL)

    def _reset_where(self, done: torch.Tensor) -> None:
        self._renew(done, _x=torch.rand(self.num_envs, 1, generator=self._generator))
        self._episodes = self._episodes + done.long()

    def _current_obs(self) -> torch.Tensor:
        return self._x.clone()


def test_the_default_hooks_reset_resume_and_end_steps_like_written_ones() -> None:
    """`Cart` writes only step, `_reset_where` and `_current_obs`: it walks, resets and resumes as `Walk` does (whose
    reward is of the state after resets)."""
    actions = _actions(40)
    walk, cart = Walk(seed=4), Cart(seed=4)
    assert torch.equal(walk.reset(seed=4), cart.reset(seed=4))
    for action in actions[:17]:
        expected, got = walk.step(action), cart.step(action)
        check_step_result(cart, got)
        assert all(torch.equal(expected[k], got[k]) for k in (0, 2, 3))  # obs, terminated, truncated
        assert torch.equal(expected[4][INFO_FINAL_OBS], got[4][INFO_FINAL_OBS])
    saved = cart.state_dict()
    assert set(saved) == {"x", "episodes", "steps", "generator"} and saved["episodes"].sum() > N
    resumed = Cart(seed=99)
    resumed.load_state_dict(saved)
    for action in actions[17:]:
        assert all(torch.equal(a, b) for a, b in zip(cart.step(action)[:4], resumed.step(action)[:4], strict=True))
    assert resumed._episodes.dtype == torch.long and torch.equal(resumed._episodes, cart._episodes)


def test_a_task_cannot_replace_the_shared_state_dict() -> None:
    with pytest.raises(TypeError, match="overrides \\['state_dict'\\]"):

        class Own(Walk):
            def state_dict(self) -> dict[str, Any]:
                return {"x": self.x}


def test_task_state_may_not_shadow_the_base_entries() -> None:
    class Clash(Walk):
        def _physics_state(self) -> dict[str, Any]:
            return {"x": self.x.clone(), "steps": torch.zeros(N)}

    with pytest.raises(ValueError, match="steps"):
        Clash().state_dict()
