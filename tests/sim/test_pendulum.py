"""Pendulum: parity with Gymnasium's Pendulum-v1, auto-reset, seeding, devices, registry and resume."""

from __future__ import annotations

import math

import gymnasium
import numpy as np
import pytest
import torch

from robo_rl.envs import check_step_result
from robo_rl.sim import make
from robo_rl.sim.pendulum import Pendulum, PendulumConfig

DEVICES = [
    "cpu",
    pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")),
]


def _random_states_and_actions(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """States spread over [-1.5 pi, 1.5 pi] x [-9, 9] plus edge cases at +-pi and at the speed clip."""
    g = torch.Generator().manual_seed(seed)
    theta = (torch.rand(n, generator=g) * 2 - 1) * 1.5 * math.pi
    theta_dot = (torch.rand(n, generator=g) * 2 - 1) * 9.0
    theta[:8] = torch.tensor([math.pi, -math.pi, math.pi - 1e-4, -math.pi + 1e-4, 3.1, -3.1, 0.0, 2 * math.pi])
    theta_dot[8:16] = torch.tensor([8.0, -8.0, 7.99, -7.99, 7.9, -7.9, 8.0, -8.0])
    action = (torch.rand(n, 1, generator=g) * 2 - 1) * 3.0
    return torch.stack((theta, theta_dot), dim=-1), action


def _gym_step(gym_env: gymnasium.Env, state: torch.Tensor, action: torch.Tensor) -> tuple[np.ndarray, float]:
    gym_env.state = state.double().numpy()
    obs, reward, *_ = gym_env.step(action.numpy())
    return obs, reward


def _rollout(env: Pendulum, actions: torch.Tensor) -> torch.Tensor:
    """Observations `(T, num_envs, 3)` returned by stepping `actions` `(T, num_envs, 1)`."""
    return torch.stack([env.step(a)[0] for a in actions])


def test_step_matches_gymnasium() -> None:
    states, actions = _random_states_and_actions(256, seed=0)
    env = Pendulum(256, seed=0)
    env.set_state(states)
    obs, reward, terminated, truncated, _ = env.step(actions)
    gym_env = gymnasium.make("Pendulum-v1").unwrapped
    gym_env.reset(seed=0)
    for i in range(256):
        gym_obs, gym_reward = _gym_step(gym_env, states[i], actions[i])
        np.testing.assert_allclose(obs[i].numpy(), gym_obs, atol=1e-5, rtol=0)
        assert reward[i].item() == pytest.approx(gym_reward, abs=1e-5)
    assert not terminated.any() and not truncated.any()


def test_reward_at_upright_rest_is_zero_and_worst_case_matches_docs() -> None:
    env = Pendulum(2, seed=0)
    env.set_state(torch.tensor([[0.0, 0.0], [math.pi - 1e-6, 8.0]]))
    _, reward, *_ = env.step(torch.tensor([[0.0], [2.0]]))
    assert reward[0].item() == 0.0
    assert reward[1].item() == pytest.approx(-(math.pi**2 + 0.1 * 64 + 0.001 * 4), abs=1e-4)


def test_truncation_auto_resets_with_final_obs() -> None:
    n, horizon = 64, 200
    env = Pendulum(n, seed=3)
    no_reset = Pendulum(n, config=PendulumConfig(max_episode_steps=10_000), seed=4)
    no_reset.set_state(env.state)
    actions = (torch.rand(horizon, n, 1, generator=torch.Generator().manual_seed(5)) * 2 - 1) * 2.0
    for t, action in enumerate(actions):
        obs, _, terminated, truncated, info = env.step(action)
        expected = no_reset.step(action)[0]
        assert not terminated.any()
        if t < horizon - 1:
            assert not truncated.any()
            torch.testing.assert_close(info["final_obs"], obs, atol=0, rtol=0)
    assert truncated.all()
    torch.testing.assert_close(info["final_obs"], expected, atol=1e-6, rtol=0)
    assert (obs - expected).abs().amax() > 1e-3, "returned obs should be a fresh reset, not the final obs"
    assert (obs[:, 2].abs() <= 1.0).all()
    torch.testing.assert_close(obs[:, :2].norm(dim=-1), torch.ones(n))
    assert not env.step(actions[0])[3].any(), "step counters restart after the reset"


def test_same_seed_same_stream_different_seed_differs() -> None:
    actions = (torch.rand(250, 16, 1, generator=torch.Generator().manual_seed(0)) * 2 - 1) * 2.0
    runs = []
    for seed in (7, 7, 8):
        env = Pendulum(16, config=PendulumConfig(max_episode_steps=100))
        first = env.reset(seed=seed)
        runs.append(torch.cat((first.unsqueeze(0), _rollout(env, actions))))
    torch.testing.assert_close(runs[0], runs[1], atol=0, rtol=0)
    assert not torch.allclose(runs[0], runs[2])


def test_constructor_seed_equals_reset_seed() -> None:
    from_constructor = Pendulum(8, seed=11).state
    env = Pendulum(8)
    env.reset(seed=11)
    torch.testing.assert_close(env.state, from_constructor, atol=0, rtol=0)


def test_step_result_meets_contract() -> None:
    env = Pendulum(5, seed=0)
    check_step_result(env, env.step(torch.zeros(5, 1)))
    assert env.obs_spec.names == ("cos_theta", "sin_theta", "theta_dot")
    assert env.obs_spec.units == ("1", "1", "rad/s")
    assert env.obs_spec.low == (-1.0, -1.0, -8.0) and env.obs_spec.high == (1.0, 1.0, 8.0)
    assert env.action_spec.names == ("torque",) and env.action_spec.units == ("N*m",)
    assert env.action_spec.low == (-2.0,) and env.action_spec.high == (2.0,)
    assert env.privileged_obs_spec is None
    assert env.dt == 0.05 and env.max_episode_steps == 200


def test_actions_are_clipped_to_max_torque() -> None:
    states = torch.tensor([[0.3, -0.5], [-2.0, 4.0]])
    results = []
    for torque in (10.0, 2.0, -10.0, -2.0):
        env = Pendulum(2, seed=0)
        env.set_state(states)
        obs, reward, *_ = env.step(torch.full((2, 1), torque))
        results.append((obs, reward))
    for (obs_big, reward_big), (obs_max, reward_max) in (results[:2], results[2:]):
        torch.testing.assert_close(obs_big, obs_max, atol=0, rtol=0)
        torch.testing.assert_close(reward_big, reward_max, atol=0, rtol=0)


def test_registry_builds_pendulum_with_overrides() -> None:
    env = make("pendulum", num_envs=8, max_episode_steps=50)
    assert isinstance(env, Pendulum) and env.num_envs == 8 and env.max_episode_steps == 50
    for _ in range(49):
        assert not env.step(torch.zeros(8, 1))[3].any()
    assert env.step(torch.zeros(8, 1))[3].all()


def test_registry_rejects_unknown_override_and_task() -> None:
    with pytest.raises(ValueError, match="max_episode_stepz") as error:
        make("pendulum", num_envs=8, max_episode_stepz=50)
    assert "max_episode_steps" in str(error.value), "the error lists the valid fields"
    with pytest.raises(ValueError, match="pendulum"):
        make("no_such_task", num_envs=1)


@pytest.mark.parametrize("device", DEVICES)
def test_device_trajectory_matches_cpu(device: str) -> None:
    n, horizon = 128, 150
    states, _ = _random_states_and_actions(n, seed=1)
    actions = (torch.rand(horizon, n, 1, generator=torch.Generator().manual_seed(2)) * 2 - 1) * 2.0
    trajectories = []
    for dev in ("cpu", device):
        env = Pendulum(n, device=dev, seed=0)
        env.set_state(states.to(dev))
        obs = _rollout(env, actions.to(dev))
        assert obs.device.type == torch.device(dev).type
        trajectories.append(obs.cpu())
    # Chaotic swings amplify float32 rounding differences between kernels, so compare a short horizon tightly (an H100,
    # 2026-11-27: 3.7e-5 apart at step 44 of 50).
    torch.testing.assert_close(trajectories[1][:50], trajectories[0][:50], atol=1e-4, rtol=0)


@pytest.mark.parametrize("device", DEVICES)
def test_state_dict_round_trip_continues_identically(device: str) -> None:
    actions = (torch.rand(300, 32, 1, generator=torch.Generator().manual_seed(9)) * 2 - 1) * 2.0
    actions = actions.to(device)
    env = Pendulum(32, device=device, config=PendulumConfig(max_episode_steps=40), seed=5)
    _rollout(env, actions[:55])
    saved = env.state_dict()
    expected = _rollout(env, actions[55:])
    resumed = Pendulum(32, device=device, config=PendulumConfig(max_episode_steps=40), seed=123)
    resumed.load_state_dict(saved)
    torch.testing.assert_close(_rollout(resumed, actions[55:]), expected, atol=0, rtol=0)


@pytest.mark.parametrize(
    ("theta", "theta_dot", "success"),
    [(0.0, 0.0, True), (0.15, -0.5, True), (-0.3, 0.0, False), (0.0, 1.5, False), (math.pi, 0.0, False)],
)
def test_success_means_balanced_at_the_end_of_the_episode(theta: float, theta_dot: float, success: bool) -> None:
    # One-step episodes with zero torque and no gravity: the state barely moves, so the final state is the set one.
    env = Pendulum(1, config=PendulumConfig(max_episode_steps=1, g=0.0, dt=1e-4), seed=0)
    env.set_state(torch.tensor([[theta, theta_dot]]))
    *_, truncated, info = env.step(torch.zeros(1, 1))
    assert bool(truncated[0]) and bool(info["success"][0]) is success
