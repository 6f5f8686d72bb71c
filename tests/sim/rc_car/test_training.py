"""PPO with the rc_car_race_ppo preset learns to drive: the distance covered along the track per episode grows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest
import torch

from robo_rl.api.configs import preset
from robo_rl.build import build_runner
from robo_rl.sim import make
from robo_rl.sim.rc_car import INFO_PROGRESS

EPISODE = 10.0


@torch.no_grad()
def _progress_per_episode(actor: Callable[[torch.Tensor], torch.Tensor], episodes: int = 64) -> float:
    """Mean distance in m driven along the center line in one deterministic episode of 10 s (until off track)."""
    env = make("rc_car/race", num_envs=episodes, seed=123, episode_length=EPISODE)
    obs = env.reset(seed=123)
    total = torch.zeros(episodes)
    running = torch.ones(episodes, dtype=torch.bool)
    for _ in range(env.max_episode_steps):
        obs, _, terminated, truncated, info = env.step(actor(obs))
        total += info[INFO_PROGRESS] * running
        running &= ~(terminated | truncated)
    return float(total.mean())


@pytest.mark.slow
def test_ppo_drives_at_least_twice_as_far_per_episode_after_a_short_training() -> None:
    base = preset("rc_car_race_ppo")
    task = replace(base.task, num_envs=256, config=replace(base.task.config, episode_length=EPISODE))
    runner_config = replace(base.runner, loop=replace(base.runner.loop, max_iterations=30, target_success_rate=None))
    runner = build_runner(replace(base, task=task, runner=runner_config), make, evaluate=False)
    before = _progress_per_episode(runner.policy.deterministic_actor().eval())
    runner.learn()
    after = _progress_per_episode(runner.policy.deterministic_actor().eval())
    assert after >= 2 * before and after > 10.0, (before, after)
