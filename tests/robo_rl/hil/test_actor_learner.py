"""Actor/learner split: transitions reach the learner process, its weights reach the actor, a slow learner
never slows the actor down."""

from __future__ import annotations

import time
from functools import partial

import torch

from robo_rl.algorithms.sac import SAC, SACConfig
from robo_rl.hil.actor_learner import ActorLearner, LearnerConfig
from robo_rl.runners.off_policy import transitions_of_step
from robo_rl.sim import make


def _run(cfg: LearnerConfig, steps: int, pause: float) -> tuple[ActorLearner, set[int], float]:
    env = make("pendulum", num_envs=4, seed=0)
    low, high = env.action_spec.low_tensor(), env.action_spec.high_tensor()
    torch.manual_seed(0)
    factory = partial(SAC, 3, 3, low, high, SACConfig(actor_hidden=(16,), critic_hidden=(16,)))
    split = ActorLearner(factory, (3, 3, 1), cfg)
    assert split.wait_ready()
    obs = env.reset(seed=0)
    versions = set()
    start = time.perf_counter()
    for _ in range(steps):
        action = split.act(obs)
        result = env.step(split.actor.scaler(action))
        split.send(transitions_of_step(obs, obs, action, result, is_demo=False))
        obs = result[0]
        versions.add(split.loaded_version)
        time.sleep(pause)
    return split, versions, time.perf_counter() - start


def test_transitions_reach_the_learner_and_its_weights_reach_the_actor() -> None:
    cfg = LearnerConfig(learning_starts=64, batch_size=32, publish_every=5, queue_size=10_000)
    split, versions, _ = _run(cfg, steps=300, pause=0.003)
    stats = split.close()
    assert split.dropped == 0 and stats.received == 300 * 4
    assert stats.updates > 0 and stats.published == stats.updates // 5
    assert len(versions) > 3  # the actor took up several versions while it ran, without waiting for any
    learner_weights_now = {name: tensor.clone() for name, tensor in split.shared.items()}
    split.refresh()
    for name, tensor in split.actor.state_dict().items():
        assert torch.equal(tensor, learner_weights_now[name])


def test_a_slow_learner_does_not_slow_the_actor() -> None:
    cfg = LearnerConfig(learning_starts=8, batch_size=8, publish_every=1, queue_size=20, update_delay_s=0.05)
    split, _, seconds = _run(cfg, steps=300, pause=0.0)
    stats = split.close()
    # In lock step the 300 steps would wait for 300 × 0.05 s of learning; the actor ran on and dropped steps.
    assert seconds < 5.0 and split.dropped > 0
    assert stats.received + split.dropped == 300 * 4
