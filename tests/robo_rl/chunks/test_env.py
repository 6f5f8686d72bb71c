"""ChunkEnv: macro steps of `execute` actions, their reward, and episodes that end mid-chunk."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from robo_rl.chunks.env import ChunkEnv, Chunking, action_chunking
from robo_rl.chunks.execution import ChunkExecution, ChunkExecutor
from robo_rl.envs import (
    INFO_FINAL_OBS,
    INFO_FINAL_PRIVILEGED_OBS,
    INFO_PRIVILEGED_OBS,
    INFO_SUCCESS,
    check_step_result,
)
from robo_rl.sim import make
from robo_rl.spaces import SpaceSpec


class CountdownEnv:
    """Env n's episodes last `lengths[n][k]` steps (k-th episode, cycling) and terminate (success) or, at
    `max_episode_steps`, truncate. obs = (step in episode, episodes begun); reward = action + 10 × step; the
    privileged obs is 2 × obs. Records every action it gets in `applied`."""

    def __init__(self, lengths: list[list[int]], max_episode_steps: int = 100) -> None:
        self.lengths, self.num_envs, self.device, self.dt = lengths, len(lengths), torch.device("cpu"), 0.1
        self.obs_spec = SpaceSpec(("t", "episode"), (0.0, 0.0), (1e9, 1e9), ("1", "1"))
        self.action_spec = SpaceSpec(("u",), (-1.0,), (3.0,), ("1",))
        self.privileged_obs_spec = SpaceSpec(("t2", "episode2"), (0.0, 0.0), (1e9, 1e9), ("1", "1"))
        self.max_episode_steps = max_episode_steps
        self.applied: list[list[float]] = []

    def _obs(self) -> torch.Tensor:
        return torch.stack([self.t, self.episode], dim=1).float()

    @property
    def privileged_obs(self) -> torch.Tensor:
        return 2 * self._obs()

    def reset(self, seed: int | None = None) -> torch.Tensor:
        self.t = torch.zeros(self.num_envs)
        self.episode = torch.zeros(self.num_envs)
        return self._obs()

    def step(self, action: torch.Tensor):
        self.applied.append(action[:, 0].tolist())
        self.t += 1
        reward = action[:, 0] + 10 * self.t
        length = torch.tensor([ls[int(e) % len(ls)] for ls, e in zip(self.lengths, self.episode, strict=True)])
        terminated = self.t >= length
        truncated = ~terminated & (self.t >= self.max_episode_steps)
        final, final_privileged = self._obs(), self.privileged_obs
        done = terminated | truncated
        self.t[done] = 0
        self.episode[done] += 1
        info = {
            INFO_FINAL_OBS: final,
            INFO_PRIVILEGED_OBS: self.privileged_obs,
            INFO_FINAL_PRIVILEGED_OBS: final_privileged,
            INFO_SUCCESS: terminated.clone(),
        }
        return self._obs(), reward, terminated, truncated, info


def test_a_macro_step_executes_the_first_actions_and_sums_their_rewards() -> None:
    inner = CountdownEnv([[50], [50]])
    env = ChunkEnv(inner, horizon=3, execute=2)
    assert env.action_spec.names == ("u@0", "u@1", "u@2") and env.dt == pytest.approx(0.2)
    assert action_chunking(env) == Chunking(inner.action_spec, 0.1, 3)
    assert action_chunking(inner) == Chunking(inner.action_spec, 0.1, 1)
    env.reset()
    result = env.step(torch.tensor([[0.5, 1.0, 2.0], [-1.0, 0.0, 3.0]]))
    check_step_result(env, result)
    obs, reward, terminated, truncated, _ = result
    assert inner.applied == [[0.5, -1.0], [1.0, 0.0]]  # steps 0 and 1 of each chunk, not step 2
    assert reward.tolist() == [0.5 + 10 + 1.0 + 20, -1.0 + 10 + 0.0 + 20]
    assert obs[:, 0].tolist() == [2.0, 2.0] and not terminated.any() and not truncated.any()
    with pytest.raises(ValueError, match=r"expected shape \(2, 3\), got \(2, 2\)"):
        env.step(torch.zeros(2, 2))


def test_an_episode_that_ends_mid_chunk_reports_its_end_and_idles_through_the_rest() -> None:
    # env 0 ends at the 2nd of 4 executed steps, then its next episode (1 step) ends during the idle steps;
    # env 1 ends at the last step; env 2 runs on.
    inner = CountdownEnv([[2, 1, 50], [4], [50]])
    env = ChunkEnv(inner, horizon=4, idle_action=[0.25])
    env.reset()
    result = env.step(torch.tensor([[1.0, 1.0, 1.0, 1.0], [2.0, 2.0, 2.0, 2.0], [3.0, 3.0, 3.0, 3.0]]))
    check_step_result(env, result)
    obs, reward, terminated, truncated, info = result
    assert [row[0] for row in inner.applied] == [1.0, 1.0, 0.25, 0.25]  # the rest of the chunk is not applied
    assert [row[1] for row in inner.applied] == [2.0] * 4
    assert terminated.tolist() == [True, True, False] and not truncated.any()
    assert reward.tolist() == [1 + 10 + 1 + 20, 4 * 2 + 100, 4 * 3 + 100]  # idle steps belong to no transition
    assert info[INFO_FINAL_OBS].tolist() == [[2.0, 0.0], [4.0, 0.0], [4.0, 0.0]]  # the policy's episode's end
    assert info[INFO_FINAL_PRIVILEGED_OBS][0].tolist() == [4.0, 0.0]
    assert info[INFO_SUCCESS].tolist() == [True, True, False]
    assert obs.tolist() == [[1.0, 2.0], [0.0, 1.0], [4.0, 0.0]]  # env 0: its third episode, after one idle step


def test_a_time_limit_mid_chunk_is_truncated_and_the_limit_is_counted_in_macro_steps() -> None:
    inner = CountdownEnv([[50]], max_episode_steps=5)
    env = ChunkEnv(inner, horizon=3)
    assert env.max_episode_steps == 2
    env.reset()
    env.step(torch.zeros(1, 3))
    _, reward, terminated, truncated, info = env.step(torch.ones(1, 3))
    assert truncated.tolist() == [True] and terminated.tolist() == [False]
    assert reward.tolist() == [1 + 40 + 1 + 50] and info[INFO_FINAL_OBS].tolist() == [[5.0, 0.0]]
    assert [row[0] for row in inner.applied] == [0, 0, 0, 1, 1, 1.0]  # idle: the middle of [-1, 3]


def test_it_matches_the_simulator_stepped_by_hand_and_a_receding_executor() -> None:
    params = ("max_episode_steps=7",)
    env, twin = ChunkEnv(make("pendulum", num_envs=3, seed=0, params=params), 4, 3), make("pendulum", 3, params=params)
    env.reset(seed=2)
    twin_obs = twin.reset(seed=2)
    executor = ChunkExecutor(3, 4, 1, ChunkExecution("receding", execute=3))
    generator = torch.Generator().manual_seed(0)
    for _ in range(4):
        chunk = torch.rand(3, 4, generator=generator) * 4 - 2
        result = env.step(chunk)
        check_step_result(env, result)
        total = torch.zeros(3)
        for _ in range(3):  # the executor gives the chunk's steps 0, 1, 2; idle (0) after an episode's end
            action = torch.as_tensor(executor.act(chunk.numpy()), dtype=torch.float32)
            twin_obs, reward, terminated, truncated, info = twin.step(action)
            total += reward
            done = terminated | truncated
            if done.any():
                assert torch.equal(result[4][INFO_FINAL_OBS][done], info[INFO_FINAL_OBS][done])
                assert result[3][done].all()
                break
        assert torch.allclose(result[1], total)
        assert torch.equal(result[0], twin_obs) == (not done.any())  # 7 = 3 + 3 + 1: the third macro step ends
        if done.any():
            twin.step(torch.zeros(3, 1))  # the two idle steps
            twin_obs = twin.step(torch.zeros(3, 1))[0]
            executor.reset(np.ones(3, dtype=bool))
            assert torch.equal(result[0], twin_obs)


def test_a_policy_that_starts_at_the_nominal_action_starts_there_at_every_step_of_its_chunk() -> None:
    """`PolicyConfig.init_mean="nominal"` on a chunk env: the quadrotor's hover command, repeated for each step."""
    from robo_rl.api.configs import preset
    from robo_rl.build import build_policy

    inner = make("quadrotor/hover", num_envs=2)
    env = ChunkEnv(inner, 3)
    assert env.nominal_action == tuple(inner.hover_action) * 3
    cfg = preset("quadrotor_hover_ppo")
    assert cfg.policy.init_mean == "nominal"
    torch.manual_seed(0)
    actor = build_policy(cfg, env).deterministic_actor()
    hover = torch.tensor(inner.hover_action).repeat(3)
    torch.testing.assert_close(actor(env.reset(seed=0)), hover.expand(2, 12), atol=0.05, rtol=0)
