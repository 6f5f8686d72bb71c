"""Actor/learner split: transitions reach the learner process, its weights reach the actor, a slow learner
never slows the actor down."""

from __future__ import annotations

import copy
import pickle
import time
from collections.abc import Callable
from functools import partial

import numpy as np
import pytest
import torch

from robo_rl.algorithms.sac import SAC, SACConfig
from robo_rl.envs import BatchedEnv
from robo_rl.hil.actor_learner import ActorLearner, LearnerConfig, pack, unpack
from robo_rl.runners.off_policy import transitions_of_step
from robo_rl.sim import make
from robo_rl.storage.replay import FIELD_NAMES


def _start(cfg: LearnerConfig) -> tuple[ActorLearner, BatchedEnv]:
    env = make("pendulum", num_envs=4, seed=0)
    low, high = env.action_spec.low_tensor(), env.action_spec.high_tensor()
    torch.manual_seed(0)
    factory = partial(SAC, 3, 3, low, high, SACConfig(actor_hidden=(16,), critic_hidden=(16,)))
    split = ActorLearner(factory, (3, 3, 1), cfg)
    assert split.wait_ready()
    return split, env


def _run(
    cfg: LearnerConfig, pause: float, until: Callable[[int, set[int]], bool]
) -> tuple[ActorLearner, int, set[int], float]:
    """Step until `until(steps, versions seen)`; returns the split, the steps, the weight versions the actor
    took up and the seconds the loop ran."""
    split, env = _start(cfg)
    obs = env.reset(seed=0)
    steps, versions = 0, set()
    start = time.perf_counter()
    while not until(steps, versions):
        action = split.act(obs)
        result = env.step(split.actor.scaler(action))
        split.send(transitions_of_step(obs, obs, action, result, is_demo=False))
        obs = result[0]
        versions.add(split.loaded_version)
        steps += 1
        time.sleep(pause)
    return split, steps, versions, time.perf_counter() - start


def test_transitions_reach_the_learner_and_its_weights_reach_the_actor() -> None:
    cfg = LearnerConfig(learning_starts=64, batch_size=32, publish_every=5, queue_size=10_000)

    # at least 300 steps, and on until the actor took up several weight versions while it ran, without waiting
    # for any: how many steps that takes depends on the machine's load (the queue holds the 9,000 at most)
    def enough(steps: int, versions: set[int]) -> bool:
        return (steps >= 300 and len(versions) > 3) or steps == 9_000

    split, steps, versions, _ = _run(cfg, 0.003, enough)
    stats = split.close()
    assert len(versions) > 3
    assert split.dropped == 0 and stats.received == steps * 4
    assert stats.updates == steps - 64 // 4 + 1 and stats.published == stats.updates // 5
    learner_weights_now = {name: tensor.clone() for name, tensor in split.shared.items()}
    split.refresh()
    for name, tensor in split.actor.state_dict().items():
        assert torch.equal(tensor, learner_weights_now[name])


def test_a_slow_learner_does_not_slow_the_actor() -> None:
    cfg = LearnerConfig(learning_starts=8, batch_size=8, publish_every=1, queue_size=4, update_delay_s=0.2)
    split, steps, _, seconds = _run(cfg, 0.0, lambda steps, _: steps == 300)
    stats = split.close()
    # In lock step the actor would wait for the learner's 0.2 s per update, 59 s for these steps; it ran on and
    # dropped steps instead (only a machine 100 times slower than usual takes 30 s for 300 steps)
    lock_step_seconds = (steps - 8 // 4 + 1) * cfg.update_delay_s
    assert seconds < lock_step_seconds / 2 and split.dropped > 0
    assert stats.received + split.dropped == steps * 4


def test_close_reports_a_dead_learner_instead_of_hanging() -> None:
    split, env = _start(LearnerConfig(learning_starts=10_000, queue_size=2))
    obs = env.reset(seed=0)
    split.process.kill()
    split.process.join(30)
    for _ in range(4):  # fill the queue: nobody is left to empty it
        action = split.act(obs)
        split.send(transitions_of_step(obs, obs, action, env.step(split.actor.scaler(action)), is_demo=False))
    with pytest.raises(RuntimeError, match="learner process exited with code -9; training stops"):
        split.check_alive()  # what the off-policy runner asks every step: a dead learner stops the robot
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="learner process exited with code -9"):
        split.close(timeout=5.0)
    assert time.monotonic() - start < 30.0  # an answer, not a hang (the old close blocked forever)


def test_close_without_draining_drops_the_queued_transitions() -> None:
    split, env = _start(LearnerConfig(learning_starts=0, batch_size=4, update_delay_s=0.2, queue_size=100))
    obs = env.reset(seed=0)
    for _ in range(20):  # 80 transitions; the learner takes 0.2 s per update
        action = split.act(obs)
        result = env.step(split.actor.scaler(action))
        split.send(transitions_of_step(obs, obs, action, result, is_demo=False))
        obs = result[0]
    stats = split.close(drain=False)
    assert stats.received < 80  # the learner stopped instead of working through the queue (no wall-clock assert)


def test_the_learner_stores_intervened_transitions_in_the_prior_buffer_too() -> None:
    split, env = _start(LearnerConfig(learning_starts=10_000, queue_size=100))
    obs = env.reset(seed=0)
    for step in range(30):  # env k intervened where (step + k) % 3 == 0: 40 of the 120 transitions
        action = split.act(obs)
        result = env.step(split.actor.scaler(action))
        intervened = (step + torch.arange(4)) % 3 == 0
        split.send(transitions_of_step(obs, obs, action, result, is_demo=False, intervened=intervened))
        obs = result[0]
    stats = split.close()
    assert split.dropped == 0 and stats.received == 120  # all of them in the online buffer...
    assert stats.interventions == 40  # ...and the intervened ones in the prior buffer as well


def test_the_learner_fits_sac_s_normalizers_to_its_first_data_and_the_actor_takes_them_up() -> None:
    """SAC's `normalize_obs` with the learner in its own process: the learner fits the normalizers once, to the
    transitions it holds at its first update, and the published weights carry the statistics to the actor."""
    env = make("pendulum", num_envs=4, seed=0)
    low, high = env.action_spec.low_tensor(), env.action_spec.high_tensor()
    config = SACConfig(actor_hidden=(16,), critic_hidden=(16,), normalize_obs=True)
    learner = LearnerConfig(learning_starts=64, batch_size=32, publish_every=1)
    split = ActorLearner(partial(SAC, 3, 3, low, high, config), (3, 3, 1), learner)
    assert split.wait_ready()
    obs, sent = env.reset(seed=0), []
    for _ in range(40):  # 160 transitions; the first update comes at 64
        action = split.act(obs)
        result = env.step(split.actor.scaler(action))
        split.send(transitions_of_step(obs, obs, action, result, is_demo=False))
        sent.append(obs)
        obs = result[0]
    split.close()
    split.refresh()
    first = torch.cat(sent)[:64]  # what the learner held at its first update
    torch.testing.assert_close(split.actor.obs_normalizer.mean, first.mean(0))
    torch.testing.assert_close(split.actor.obs_normalizer.var, first.var(0, unbiased=False))


def test_a_step_message_holds_numpy_copies_of_its_transitions_and_frames() -> None:
    """What the queue carries: numpy arrays (pickled bytes, no shared-memory segment per tensor), copied when the
    step is sent, since the queue pickles later and an env may write into the same tensors meanwhile."""
    env = make("double_integrator/pixels", num_envs=3, seed=0, image_size=16)
    obs = env.reset(seed=0)
    action = torch.rand(3, 1) * 2 - 1
    step = transitions_of_step(obs, obs["state"], action, env.step(action), is_demo=False)
    expected = copy.deepcopy(step)
    message = pack(step)
    assert step.images is not None and message["images"].keys() == step.images.keys()
    arrays = [value for value in message.values() if not isinstance(value, dict)]
    arrays += [frames for key in ("images", "next_images") for frames in message[key].values()]
    # the 11 vector fields (costs included) and the camera's frame before and after the step
    assert len(arrays) == 13 and all(isinstance(array, np.ndarray) for array in arrays)
    step.obs.add_(1.0)  # the env reuses its tensors after the send
    step.images["rail"].zero_()
    received = unpack(pickle.loads(pickle.dumps(message)))
    assert received.images is not None and expected.images is not None and received.next_images is not None
    assert torch.equal(received.images["rail"], expected.images["rail"]) and received.images["rail"].any()
    for name in FIELD_NAMES:
        assert torch.equal(getattr(received, name), getattr(expected, name)), name
    assert received.next_images["rail"].dtype == torch.uint8
