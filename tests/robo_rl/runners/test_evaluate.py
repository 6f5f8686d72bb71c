"""`evaluate`: one episode per env, and the success rate of tasks that define success."""

from __future__ import annotations

import torch

from robo_rl.runners.evaluate import eval_metrics, evaluate
from robo_rl.sim import make


def _zero_torque(obs: torch.Tensor) -> torch.Tensor:
    return torch.zeros(obs.shape[0], 1)


def test_success_rate_counts_each_episode_once_at_its_end() -> None:
    lenient = make("pendulum", num_envs=8, max_episode_steps=5, success_angle=4.0, success_speed=100.0)
    strict = make("pendulum", num_envs=8, max_episode_steps=5, success_angle=1e-9)
    assert evaluate(lenient, _zero_torque, seed=0).success_rate == 1.0
    result = evaluate(strict, _zero_torque, seed=0)
    assert result.success_rate == 0.0 and result.lengths == (5,) * 8


def test_success_rate_matches_the_final_angles() -> None:
    env = make("pendulum", num_envs=64, max_episode_steps=3, success_angle=1.0, success_speed=100.0)
    result = evaluate(env, _zero_torque, seed=4)
    replay = make("pendulum", num_envs=64, max_episode_steps=3)
    obs = replay.reset(seed=4)
    for _ in range(3):
        obs, *_, info = replay.step(_zero_torque(obs))
    final_cos = info["final_obs"][:, 0]
    expected = final_cos >= torch.cos(torch.tensor(1.0))
    assert result.successes == tuple(expected.tolist()) and 0 < sum(result.successes) < 64


def test_tasks_without_success_report_none() -> None:
    env = make("gym/InvertedPendulum-v5", num_envs=2, max_episode_steps=3)
    result = evaluate(env, lambda obs: torch.zeros(obs.shape[0], 1), seed=0)
    assert result.successes is None and result.success_rate is None
    assert eval_metrics(result)["eval_success_rate"] is None and eval_metrics(None)["eval_return"] is None


def test_targets_reached_requires_every_target_that_is_set() -> None:
    from robo_rl.runners.evaluate import EvalResult, targets_reached

    with_success = EvalResult(returns=(-100.0, -300.0), lengths=(200, 200), successes=(True, False))
    no_success = EvalResult(returns=(-100.0, -300.0), lengths=(200, 200))
    assert not targets_reached(with_success, None, None)
    assert targets_reached(with_success, -200.0, None) and not targets_reached(with_success, -199.0, None)
    assert targets_reached(with_success, None, 0.5) and not targets_reached(with_success, None, 0.51)
    assert not targets_reached(with_success, -199.0, 0.5) and targets_reached(with_success, -200.0, 0.5)
    assert not targets_reached(no_success, None, 0.0)
