"""`FromGymnasium`: a Gymnasium MuJoCo task behind the batched contract, equal to stepping Gymnasium itself."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
import torch

from robo_rl.envs import INFO_FINAL_OBS, check_step_result
from robo_rl.sim import make
from robo_rl.sim.from_gymnasium import FromGymnasium, GymnasiumTaskConfig

TASK = "gym/InvertedPendulum-v5"


def test_specs_come_from_the_gymnasium_spaces() -> None:
    env = make(TASK, num_envs=2, seed=0)
    reference = gymnasium.make("InvertedPendulum-v5")
    assert env.obs_spec.dim == reference.observation_space.shape[0] == 4
    assert env.action_spec.low == (-3.0,) and env.action_spec.high == (3.0,)
    assert env.max_episode_steps == reference.spec.max_episode_steps == 1000
    assert env.dt == pytest.approx(reference.unwrapped.dt)


def test_steps_equal_independent_gymnasium_envs_seeded_seed_plus_index() -> None:
    env = make(TASK, num_envs=3)
    obs = env.reset(seed=7)
    references = [gymnasium.make("InvertedPendulum-v5") for _ in range(3)]
    expected = np.stack([ref.reset(seed=7 + i)[0] for i, ref in enumerate(references)])
    np.testing.assert_allclose(obs.numpy(), expected, rtol=0, atol=1e-6)
    actions = np.random.default_rng(0).uniform(-3, 3, size=(5, 3, 1)).astype(np.float32)
    for action in actions:
        result = env.step(torch.from_numpy(action))
        check_step_result(env, result)
        for i, ref in enumerate(references):
            ref_obs, ref_reward, ref_terminated, _, _ = ref.step(action[i])
            np.testing.assert_allclose(result[4][INFO_FINAL_OBS][i].numpy(), ref_obs, atol=1e-6)
            assert result[1][i].item() == pytest.approx(ref_reward)
            assert bool(result[2][i]) == ref_terminated


def test_termination_resets_in_the_same_step_and_reports_the_last_obs() -> None:
    env = make(TASK, num_envs=2, seed=0)
    reference = gymnasium.make("InvertedPendulum-v5")
    reference.reset(seed=0)
    push = torch.full((2, 1), 3.0)  # full force topples the pole within a few steps
    for _ in range(100):
        obs, _, terminated, truncated, info = env.step(push)
        ref_obs, _, ref_terminated, _, _ = reference.step(push[0].numpy())
        if bool(terminated[0]):
            break
    assert ref_terminated and not bool(truncated[0])
    np.testing.assert_allclose(info[INFO_FINAL_OBS][0].numpy(), ref_obs, atol=1e-6)
    # The returned obs is the first of the next episode: InvertedPendulum resets near the origin.
    assert obs[0].abs().max() < 0.011 < info[INFO_FINAL_OBS][0].abs().max()


def test_time_limit_override_truncates() -> None:
    env = FromGymnasium(1, config=GymnasiumTaskConfig(env_id="InvertedPendulum-v5", max_episode_steps=3), seed=0)
    flags = [env.step(torch.zeros(1, 1))[3].item() for _ in range(3)]
    assert flags == [False, False, True] and env.max_episode_steps == 3


def test_bad_ids_and_limits_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="NoSuchEnv-v0"):
        FromGymnasium(1, config=GymnasiumTaskConfig(env_id="NoSuchEnv-v0"))
    with pytest.raises(ValueError, match="max_episode_steps"):
        GymnasiumTaskConfig(max_episode_steps=0)
