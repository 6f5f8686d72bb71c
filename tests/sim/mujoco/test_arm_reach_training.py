"""The MuJoCo arm reach task is learnable: PPO from scratch (position mode) brings the end effector close."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from robo_rl.api.configs import preset
from robo_rl.build import build_runner
from robo_rl.sim import make


@pytest.mark.slow
def test_ppo_learns_to_reach_targets() -> None:
    # Return = sum over 150 steps of -distance (m) + 1 per step within 2 cm: -10 means an average distance of
    # at most ~7 cm over the episode, including the approach from the home pose.
    base = preset("mujoco_arm_reach_ppo")
    cfg = replace(base, seed=0, runner=replace(base.runner, loop=replace(base.runner.loop, max_iterations=120)))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small networks and batches: one thread is fastest, and immune to a busy machine
    try:
        runner = build_runner(cfg, make)
        untrained = runner.evaluate()
        result = runner.learn()
    finally:
        torch.set_num_threads(threads)
    assert untrained.mean_return < -40.0  # holding still away from the targets
    assert result.final_eval is not None
    assert result.reached_target, f"return {result.final_eval.mean_return:.1f} after {result.iterations} iterations"
