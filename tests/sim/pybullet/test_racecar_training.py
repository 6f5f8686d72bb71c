"""The PyBullet racecar goal task is learnable: PPO from scratch reaches most goals within a short run."""

from __future__ import annotations

import pytest

from robo_rl.algorithms.ppo import PPOConfig
from robo_rl.experiment import ExperimentConfig, TaskConfig
from robo_rl.runners.build import build_runner
from robo_rl.runners.on_policy import RunnerConfig
from robo_rl.sim import make


@pytest.mark.slow
def test_ppo_learns_to_reach_goals() -> None:
    cfg = ExperimentConfig(
        name="racecar_goal_ppo",
        seed=0,
        task=TaskConfig(name="pybullet/racecar_goal", num_envs=32),
        ppo=PPOConfig(num_steps=64, gamma=0.99, lam=0.95, num_epochs=5, num_minibatches=4, value_clip=False),
        runner=RunnerConfig(max_iterations=50, target_success_rate=0.7, eval_interval=10, eval_episodes=32),
    )
    runner = build_runner(cfg, make)
    untrained = runner.evaluate()
    result = runner.learn()
    assert untrained.success_rate is not None and untrained.success_rate < 0.3  # an untrained policy misses
    assert result.final_eval is not None and result.final_eval.success_rate is not None
    assert result.reached_target, f"success {result.final_eval.success_rate:.2f} in {result.iterations} iterations"
    assert result.final_eval.mean_return > untrained.mean_return + 10.0
