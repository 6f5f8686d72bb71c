"""The double integrator (robo_rl.sim.double_integrator) against Newton's second law worked by hand, the env
contract, exact resume, and PPO bringing the cart to rest through its preset."""

from __future__ import annotations

import pytest
import torch

from robo_rl.api.configs import override, preset
from robo_rl.build import build_runner
from robo_rl.envs import INFO_SUCCESS, check_step_result
from robo_rl.sim import make
from robo_rl.sim.double_integrator import DoubleIntegrator, DoubleIntegratorConfig


def test_a_held_force_moves_the_cart_as_newton_says() -> None:
    """x(t) = x0 + v0 t + F t^2 / (2 m), v(t) = v0 + F t / m for a constant force: 2 kg pushed by 1 N from
    x0 = 0.2 m, v0 = -0.5 m/s for 1 s (20 steps of 50 ms) ends at 0.2 - 0.5 + 0.25 = -0.05 m, at -0.5 + 0.5 = 0 m/s.
    """
    env = DoubleIntegrator(1, config=DoubleIntegratorConfig(mass=2.0, max_force=1.0, dt=0.05), seed=0)
    env._state = torch.tensor([[0.2, -0.5]])
    for _ in range(20):
        result = env.step(torch.tensor([[5.0]]))  # clipped to max_force, 1 N
        check_step_result(env, result)
    assert env._state[0].tolist() == pytest.approx([-0.05, 0.0], abs=1e-6)


def test_reward_success_and_truncation() -> None:
    env = make("double_integrator", 3, seed=1, episode_length=0.1)  # 2 steps
    env._state = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    _, reward, terminated, truncated, info = env.step(torch.zeros(3, 1))
    assert reward.tolist() == pytest.approx([0.0, -1.0, -0.1])  # -(x^2 + 0.1 v^2) of the state before the step
    assert not terminated.any() and not truncated.any()
    *_, truncated, info = env.step(torch.zeros(3, 1))
    assert truncated.all() and info[INFO_SUCCESS].tolist() == [True, False, False]


def test_exact_resume_from_the_state_dict() -> None:
    env = make("double_integrator", 4, seed=3, episode_length=0.2)
    actions = torch.linspace(-2, 2, 4).unsqueeze(-1)
    for _ in range(5):
        env.step(actions)
    twin = make("double_integrator", 4, seed=99, episode_length=0.2)
    twin.load_state_dict(env.state_dict())
    for _ in range(7):  # through resets
        assert all(torch.equal(a, b) for a, b in zip(env.step(actions)[:4], twin.step(actions)[:4], strict=True))


@pytest.mark.slow
def test_ppo_brings_the_cart_to_rest_with_its_preset() -> None:
    result = build_runner(override(preset("double_integrator_ppo"), ["seed=0"]), make).learn()
    assert result.reached_target and result.final_eval is not None, result
    assert result.final_eval.success_rate is not None and result.final_eval.success_rate >= 0.95
