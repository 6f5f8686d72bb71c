"""The on-policy loop: what the PPO update sees must be exactly what the rollout recorded."""

from __future__ import annotations

from dataclasses import replace

import torch

from robo_rl.api.configs import preset
from robo_rl.build import build_runner
from robo_rl.runners.on_policy import OnPolicyRunner
from robo_rl.sim import make


def _runner() -> OnPolicyRunner:
    base = preset("pendulum_ppo")
    cfg = replace(base, task=replace(base.task, num_envs=32), ppo=replace(base.ppo, num_steps=8))
    return build_runner(cfg, make, evaluate=False)


def _recorded_distribution_matches_policy(runner: OnPolicyRunner) -> bool:
    storage = runner.storage
    with torch.no_grad():
        now = runner.policy.distribution(storage.obs.flatten(0, 1), storage.actions.flatten(0, 1)).params()
    recorded = {name: value.flatten(0, 1) for name, value in storage.distribution.items()}
    return recorded.keys() == now.keys() and all(
        torch.allclose(now[name], recorded[name], atol=1e-6) for name in recorded
    )


def test_update_starts_from_the_rollouts_own_policy() -> None:
    """Regression: normalizer statistics used to change between collection and update, so the update's
    first KL was not zero and the adaptive learning rate collapsed."""
    runner = _runner()
    for _ in range(3):  # several iterations, so the normalizer statistics have moved away from the defaults
        runner.collect()
        assert _recorded_distribution_matches_policy(runner)
        runner.update()


def test_normalizer_statistics_follow_the_rollouts() -> None:
    runner = _runner()
    runner.collect()
    observed = runner.storage.obs.flatten(0, 1).clone()
    runner.update()
    normalizer = runner.policy.obs_normalizer
    assert int(normalizer.count) == observed.shape[0]
    torch.testing.assert_close(normalizer.mean, observed.mean(0), atol=1e-5, rtol=1e-5)
    assert runner.storage.step == 0  # cleared for the next rollout
