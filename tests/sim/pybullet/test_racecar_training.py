"""The PyBullet racecar goal task is learnable: PPO from scratch reaches most goals within a short run."""

from __future__ import annotations

from dataclasses import replace

import pytest

from robo_rl.api.configs import preset
from robo_rl.build import build_runner
from robo_rl.sim import make


@pytest.mark.slow
def test_ppo_learns_to_reach_goals() -> None:
    base = preset("pybullet_racecar_goal_ppo")
    runner_cfg = replace(base.runner, loop=replace(base.runner.loop, max_iterations=50, target_success_rate=0.7))
    cfg = replace(base, seed=0, runner=runner_cfg)
    runner = build_runner(cfg, make)
    untrained = runner.evaluate()
    result = runner.learn()
    assert untrained.success_rate is not None and untrained.success_rate < 0.3  # an untrained policy misses
    assert result.final_eval is not None and result.final_eval.success_rate is not None
    assert result.reached_target, f"success {result.final_eval.success_rate:.2f} in {result.iterations} iterations"
    assert result.final_eval.mean_return > untrained.mean_return + 10.0
