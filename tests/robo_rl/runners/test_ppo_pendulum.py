"""Training smoke test: the pendulum_ppo preset learns the swing-up (deterministic eval return ≥ -200)."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from robo_rl.experiment import pendulum_ppo
from robo_rl.runners.build import build_runner
from robo_rl.sim import make


@pytest.mark.slow
def test_ppo_pendulum_reaches_target_return() -> None:
    base = pendulum_ppo()
    cfg = replace(base, seed=0, runner=replace(base.runner, max_iterations=150))
    runner = build_runner(cfg, make)
    start = time.perf_counter()
    result = runner.learn()
    elapsed = time.perf_counter() - start
    assert result.final_eval is not None
    assert result.reached_target, (
        f"eval return {result.final_eval.mean_return:.1f} after {result.iterations} iterations ({elapsed:.0f} s)"
    )
    assert result.final_eval.mean_return >= -200.0
    assert len(result.final_eval.returns) == cfg.runner.eval_episodes
