"""Actor/learner split (as SERL and HIL-SERL run it): slow learning never blocks the control loop.

The actor (this process) steps the robot or simulator with the latest policy weights it has; a learner process
owns the replay buffer and the off-policy algorithm. They share one machine:
- transitions go actor → learner through a bounded `multiprocessing` queue, one message per env step, a camera
  env's frames with them; when the learner falls behind and the queue is full the actor drops the step's
  transitions (counted) instead of waiting. A message holds numpy copies, not tensors: a tensor would travel as a
  shared-memory segment and a file descriptor of its own, twenty times slower per message than the pickled bytes;
- weights go learner → actor through shared memory: the learner copies the weights the acting side needs
  (`OffPolicyAlgorithm.acting_module`: the actor, and with cameras the encoder) into shared tensors under a lock
  and bumps a version counter every `publish_every` updates; the actor copies them in only when the version
  changed, without waiting for the learner.

`ActorLearner(make_algorithm, ...)` starts the learner (spawn), `act(obs)` gives actions, `send(...)` ships a
step's transitions, `close()` stops the learner and returns its statistics. The learner samples batches as the
in-process runner does: RLPD's symmetric mix with a prior buffer of demonstrations (`prior`) to which intervened
transitions are added as they arrive; `critic_warmup_steps` first train the critic alone.
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from robo_rl.algorithms.off_policy import OffPolicyAlgorithm
from robo_rl.image_spec import ImageSpec
from robo_rl.storage.replay import (
    FIELD_NAMES,
    IMAGE_FIELD_NAMES,
    ReplayBuffer,
    SymmetricSampler,
    Transitions,
    select_transitions,
    vector_transitions,
)

STOP = "stop"


@dataclass(frozen=True)
class LearnerConfig:
    buffer_capacity: int = 100_000
    batch_size: int = 256
    learning_starts: int = 1_000
    """Transitions the learner waits for before its first update."""
    updates_per_batch: int = 1
    """Gradient steps per received step message."""
    publish_every: int = 10
    """Gradient steps between weight publications."""
    queue_size: int = 1_000
    """Step messages the queue holds before the actor starts dropping."""
    update_delay_s: float = 0.0
    """Artificial pause per gradient step (tests and benchmarks of a slow learner)."""
    prior_fraction: float = 0.5
    """Share of each batch from the prior buffer (demonstrations and interventions), once it holds any."""
    critic_warmup_steps: int = 0
    """Gradient steps that train only the critic."""
    interventions_to_prior: bool = True
    """Intervened transitions go to the prior buffer too (HIL-SERL); False: the online buffer only."""
    image_specs: tuple[ImageSpec, ...] = ()
    """The env's cameras, whose frames the learner's buffers keep with each transition; (): a state-only env."""


@dataclass(frozen=True)
class LearnerStats:
    received: int
    """Transitions the learner received."""
    updates: int
    """Gradient steps it made."""
    published: int
    """Weight versions it published."""
    interventions: int = 0
    """Intervened transitions it received, each stored in the online buffer (and in the prior buffer with
    `interventions_to_prior`)."""


def _learner(
    make_algorithm: Callable[[], OffPolicyAlgorithm],
    dims: tuple[int, int, int],
    cfg: LearnerConfig,
    channels: tuple[Any, ...],
    shared: dict[str, torch.Tensor],
    prior_transitions: Transitions | None,
) -> None:
    inbox, version, lock, results, ready, skip = channels
    torch.set_num_threads(1)
    algorithm = make_algorithm()
    ready.set()
    buffer = ReplayBuffer(cfg.buffer_capacity, *dims, "cpu", cfg.image_specs)
    prior = ReplayBuffer(cfg.buffer_capacity, *dims, "cpu", cfg.image_specs)
    acting = algorithm.acting_module()
    if prior_transitions is not None:
        prior.add(prior_transitions)
    sampler = SymmetricSampler(buffer, prior, cfg.prior_fraction)
    generator = torch.Generator().manual_seed(0)
    received = updates = published = interventions = 0
    while True:
        message = inbox.get()
        if message == STOP:
            break
        if skip.is_set():  # closing without draining: drop what is still queued
            continue
        transitions = unpack(message)
        algorithm.observe(transitions)
        buffer.add(transitions)
        if bool(transitions.intervened.any()):
            intervened = select_transitions(transitions, transitions.intervened.bool())
            interventions += len(intervened)
            if cfg.interventions_to_prior:
                prior.add(intervened)
        received += len(transitions)
        if len(buffer) < max(cfg.learning_starts, cfg.batch_size):
            continue
        if algorithm.needs_normalizers:  # SAC's normalize_obs: fitted once, to the first data
            algorithm.fit_normalizers(prior.stored() if len(prior) else buffer.stored())
        for _ in range(cfg.updates_per_batch):
            algorithm.update(sampler.sample(cfg.batch_size, generator), update_actor=updates >= cfg.critic_warmup_steps)
            updates += 1
            if cfg.update_delay_s > 0:
                time.sleep(cfg.update_delay_s)
            if updates % cfg.publish_every == 0:
                _publish(acting, shared, version, lock)
                published += 1
    results.put(LearnerStats(received, updates, published, interventions))


Message = dict[str, Any]
"""One step's transitions as the queue carries them: field name -> numpy array, and for the frames camera name ->
numpy array (`pack`)."""


def pack(transitions: Transitions) -> Message:
    """`transitions` as numpy copies (taken now: the queue pickles later, in its feeder thread, and an env may reuse
    its tensors), frames included."""
    message: Message = {name: _numpy_copy(getattr(transitions, name)) for name in FIELD_NAMES}
    for key in IMAGE_FIELD_NAMES:
        frames: dict[str, torch.Tensor] | None = getattr(transitions, key)
        message[key] = None if frames is None else {name: _numpy_copy(t) for name, t in frames.items()}
    return message


def unpack(message: Message) -> Transitions:
    """The transitions `pack` made `message` of, as tensors sharing its arrays."""
    vectors = {name: torch.from_numpy(message[name]) for name in FIELD_NAMES}
    frames = [message[key] for key in IMAGE_FIELD_NAMES]
    images = [None if f is None else {name: torch.from_numpy(a) for name, a in f.items()} for f in frames]
    return vector_transitions(vectors, *images)


def _numpy_copy(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().to("cpu", copy=True).numpy()


def _publish(acting: torch.nn.Module, shared: dict[str, torch.Tensor], version: Any, lock: Any) -> None:
    with lock, torch.no_grad():
        for name, tensor in acting.state_dict().items():
            shared[name].copy_(tensor)
        version.value += 1


class ActorLearner:
    """The actor side; `make_algorithm` (picklable, e.g. a functools.partial) builds the same algorithm in both
    processes: the actor side acts with its `acting_module()` (the actor; with cameras the encoder too), whose
    weights the learner publishes. `cfg.image_specs`: the env's cameras, whose frames `send` carries."""

    def __init__(
        self,
        make_algorithm: Callable[[], OffPolicyAlgorithm],
        dims: tuple[int, int, int],
        cfg: LearnerConfig,
        prior: Transitions | None = None,
    ) -> None:
        context = mp.get_context("spawn")
        self.algorithm = make_algorithm()
        self.actor = self.algorithm.actor
        """The algorithm's actor (its `scaler` maps actions onto the env's bounds)."""
        self.acting = self.algorithm.acting_module()
        """What `act` reads, refreshed from the learner's publications."""
        self.shared = {name: t.detach().clone().share_memory_() for name, t in self.acting.state_dict().items()}
        self.version = context.Value("l", 0)
        self.lock = context.Lock()
        self.inbox = context.Queue(maxsize=cfg.queue_size)
        self.results = context.Queue()
        self.ready = context.Event()
        self.skip = context.Event()
        self.loaded_version = 0
        self.dropped = 0
        channels = (self.inbox, self.version, self.lock, self.results, self.ready, self.skip)
        arguments = (make_algorithm, dims, cfg, channels, self.shared, prior)
        self.process = context.Process(target=_learner, args=arguments, daemon=True)
        self.process.start()

    def wait_ready(self, timeout: float = 60.0) -> bool:
        """Wait until the learner process has built its algorithm (start-up takes seconds: it imports torch).

        False after `timeout`; RuntimeError at once if the learner process has died.
        """
        deadline = time.monotonic() + timeout
        while not self.ready.wait(min(1.0, max(deadline - time.monotonic(), 0.0))):
            if not self.process.is_alive():
                raise RuntimeError(f"the learner process exited with code {self.process.exitcode} while starting")
            if time.monotonic() >= deadline:
                return False
        return True

    def check_alive(self) -> None:
        """RuntimeError when the learner process has died (the actor then stops rather than act on stale weights
        forever while its transitions go nowhere)."""
        if not self.process.is_alive():
            raise RuntimeError(f"the learner process exited with code {self.process.exitcode}; training stops")

    def refresh(self) -> bool:
        """Copy in the learner's newest weights if there are any; never waits. True when they changed."""
        if self.version.value == self.loaded_version:
            return False
        with self.lock, torch.no_grad():
            for name, tensor in self.acting.state_dict().items():
                tensor.copy_(self.shared[name])
            self.loaded_version = self.version.value
        return True

    @torch.no_grad()
    def act(self, obs: Any, deterministic: bool = False) -> torch.Tensor:
        """Normalized actions for `obs` (a camera env's: its dict) from the newest weights the learner published."""
        self.refresh()
        return self.algorithm.act(obs, deterministic)

    def send(self, transitions: Transitions) -> bool:
        """Queue one step's transitions (with their frames) for the learner; False (and counted) when its queue is
        full."""
        try:
            self.inbox.put_nowait(pack(transitions))
            return True
        except queue.Full:
            self.dropped += len(transitions)
            return False

    def close(self, timeout: float = 60.0, drain: bool = True) -> LearnerStats:
        """Let the learner finish the queued transitions (`drain`; else it drops them), stop it, and return its
        statistics.

        RuntimeError, never a hang, when the learner process has died or does not answer within `timeout`.
        """
        if not drain:
            self.skip.set()
        try:
            self._put_stop(timeout)
            stats = self.results.get(timeout=timeout)
        except (queue.Full, queue.Empty):
            self.process.kill()
            raise RuntimeError(self._not_answering(timeout)) from None
        self.process.join(timeout)
        return stats

    def _put_stop(self, timeout: float) -> None:
        """Queue STOP, checking every second that the learner is still alive to take it."""
        deadline = time.monotonic() + timeout
        while True:
            if not self.process.is_alive():
                raise queue.Full
            try:
                self.inbox.put(STOP, timeout=min(1.0, max(deadline - time.monotonic(), 0.01)))
                return
            except queue.Full:
                if time.monotonic() >= deadline:
                    raise

    def _not_answering(self, timeout: float) -> str:
        if self.process.exitcode is not None:
            return f"the learner process exited with code {self.process.exitcode} before it could be stopped"
        return f"the learner process did not stop within {timeout:.0f} s"
