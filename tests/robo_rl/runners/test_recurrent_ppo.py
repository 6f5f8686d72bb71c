"""PPO with a policy that has memory (robo_rl.modules.recurrent): the update replays each env's sequence from the
state stored at the rollout's start, zeroing it where an episode started, and must see exactly the distributions
the rollout acted with (the same property test_on_policy checks for the MLP policy)."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from robo_rl.api.configs import preset
from robo_rl.build import build_runner
from robo_rl.modules.recurrent import RecurrentActorCritic
from robo_rl.runners.on_policy import OnPolicyRunner
from robo_rl.sim import make


def _runner(memory: str) -> OnPolicyRunner:
    base = preset("quadrotor_hover_ppo")
    policy = replace(base.policy, memory=memory, actor_hidden=(32,), memory_size=16, history_length=3)
    task = replace(base.task, num_envs=64, config=replace(base.task.config, backend="torch"))
    cfg = replace(base, task=task, policy=policy, ppo=replace(base.ppo, num_steps=32, num_minibatches=4))
    return build_runner(cfg, make, evaluate=False)


@pytest.mark.parametrize("memory", ["gru", "history"])
def test_the_update_replays_the_rollouts_own_distributions(memory: str) -> None:
    runner = _runner(memory)
    assert isinstance(runner.policy, RecurrentActorCritic)
    started = 0
    for _ in range(3):  # the state is carried across rollouts, and episodes end inside them (crashes)
        runner.collect()
        storage = runner.storage
        started += int(storage.starts.sum())
        with torch.no_grad():
            for batch in storage.sequence_minibatches(4, 1):
                assert batch.hidden is not None and batch.starts is not None
                replay = runner.policy.sequence(batch.sequences(batch.obs), batch.hidden, batch.starts)
                recorded = batch.sequences(batch.old_distribution["mean"])
                torch.testing.assert_close(replay.mean, recorded, atol=1e-5, rtol=1e-5)
        runner.update()
    assert started > 0, "no episode started inside a rollout: the reset path was not exercised"
    assert runner.hidden.abs().sum() > 0  # the state carried into the next rollout


def test_zeroing_the_stored_starts_changes_the_replay() -> None:
    """The replay depends on the stored episode starts: without them it would not match (a test that could fail)."""
    runner = _runner("gru")
    for _ in range(2):
        runner.collect()
        if runner.storage.starts.any():
            break
        runner.update()
    storage = runner.storage
    assert storage.starts.any()
    with torch.no_grad():
        right = runner.policy.sequence(storage.obs, storage.hidden_start, storage.starts).mean
        wrong = runner.policy.sequence(storage.obs, storage.hidden_start, torch.zeros_like(storage.starts)).mean
    torch.testing.assert_close(right, storage.distribution["mean"], atol=1e-5, rtol=1e-5)
    assert not torch.allclose(wrong, storage.distribution["mean"], atol=1e-4)
