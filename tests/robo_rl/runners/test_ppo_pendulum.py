"""Training smoke test: the pendulum_ppo preset learns the swing-up (deterministic eval return ≥ -200)."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from robo_rl.api.configs import preset
from robo_rl.build import build_runner
from robo_rl.sim import make


@pytest.mark.slow
def test_ppo_pendulum_reaches_target_return() -> None:
    # A seed that never swings up happens (about 1 in 24 within 150 iterations), and which one depends on the
    # floating-point order of the machine's kernels and thread count: 2 of 3 seeds must pass.
    reached = [_train(seed) for seed in range(3)]
    assert sum(reached) >= 2, f"seeds that reached -200: {reached}"


def _train(seed: int) -> bool:
    base = preset("pendulum_ppo")
    cfg = replace(base, seed=seed, runner=replace(base.runner, loop=replace(base.runner.loop, max_iterations=150)))
    runner = build_runner(cfg, make)
    start = time.perf_counter()
    result = runner.learn()
    elapsed = time.perf_counter() - start
    assert result.final_eval is not None
    assert len(result.final_eval.returns) == cfg.runner.loop.eval_episodes
    assert result.reached_target == (result.final_eval.mean_return >= -200.0)
    mean_return, iterations = result.final_eval.mean_return, result.iterations
    print(f"seed {seed}: eval return {mean_return:.1f} after {iterations} iterations ({elapsed:.0f} s)")
    return result.reached_target
