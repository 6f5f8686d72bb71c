"""A learner anywhere on the ROS 2 graph: transitions and weights travel over topics, so the learner can run on
another machine than the robot's.

- The actor (`robo-rl train --robot PROFILE --set off_policy.learner_transport=ros`) publishes every step on
  `transitions` (RosLink, `robo_rl.robot.link.TRANSITION_FIELDS`) and takes up the actor weights the learner
  publishes on `policy_weights` (`TopicActor`, the runner's remote learner). It never waits for them.
- The learner (`robo-rl learn --robot PROFILE`, `run_learner`) subscribes `transitions`, keeps the replay and prior
  buffers (the demonstrations of `off_policy.prior_buffer`, plus the operator's takeovers as they arrive), makes
  `off_policy.updates_per_step` gradient steps per received transition once it holds `learning_starts`, and
  publishes the actor's weights every `PUBLISH_EVERY` steps.

A weights message is a std_msgs/Float32MultiArray: the actor's parameters flattened in state_dict order, one layout
dimension per tensor (label = name, size = element count), `data_offset` = the version. The actor checks the names
and sizes against its own module and refuses a mismatch (a learner built from another config).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from robo_rl.hil.actor_learner import LearnerStats
from robo_rl.real.profile import RobotProfile
from robo_rl.robot.link import TRANSITION_DEPTH, TRANSITION_TOPIC
from robo_rl.storage.replay import ReplayBuffer, SymmetricSampler, Transitions, select_transitions

WEIGHTS_TOPIC = "policy_weights"
PUBLISH_EVERY = 20
"""Gradient steps between weight messages."""
LEARNER_SILENCE_S = 30.0
"""The actor stops training (and the robot) when the learner that published weights falls silent this long."""


def encode_weights(module: torch.nn.Module, version: int) -> Any:
    from std_msgs.msg import Float32MultiArray, MultiArrayDimension, MultiArrayLayout

    state = module.state_dict()
    dims = [MultiArrayDimension(label=name, size=t.numel(), stride=t.numel()) for name, t in state.items()]
    flat = torch.cat([t.detach().reshape(-1).float() for t in state.values()]) if state else torch.zeros(0)
    return Float32MultiArray(layout=MultiArrayLayout(dim=dims, data_offset=version), data=flat.tolist())


def decode_weights(message: Any, module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The state dict a weights message carries, shaped as `module`'s; ValueError when names or sizes differ."""
    state = module.state_dict()
    theirs = [(d.label, d.size) for d in message.layout.dim]
    ours = [(name, t.numel()) for name, t in state.items()]
    if theirs != ours:
        raise ValueError(f"{WEIGHTS_TOPIC}: the learner's actor {theirs[:3]}... is not this actor {ours[:3]}...")
    data = torch.as_tensor(np.asarray(message.data, dtype=np.float32))
    out, start = {}, 0
    for name, tensor in state.items():
        out[name] = data[start : start + tensor.numel()].reshape(tensor.shape).to(tensor.dtype)
        start += tensor.numel()
    return out


class TopicActor:
    """The runner's remote learner over ROS (`off_policy.learner_transport=ros`), on the robot link's node."""

    def __init__(self, algorithm: Any, node: Any, clock: Callable[[], float] = time.monotonic) -> None:
        from std_msgs.msg import Float32MultiArray

        self.algorithm, self.actor, self.clock = algorithm, algorithm.actor, clock
        self.loaded_version = 0
        self.dropped = 0
        self._pending: Any = None
        self._heard_at: float | None = None
        self.error = ""
        node.create_subscription(Float32MultiArray, WEIGHTS_TOPIC, self._on_weights, 1)

    def _on_weights(self, message: Any) -> None:
        self._pending, self._heard_at = message, self.clock()

    def wait_ready(self, timeout: float = 0.0) -> bool:
        return True  # the actor starts with its own weights; the learner's arrive when they arrive

    def check_alive(self) -> None:
        if self.error:
            raise RuntimeError(self.error)
        if self._heard_at is not None and self.clock() - self._heard_at > LEARNER_SILENCE_S:
            raise RuntimeError(
                f"the learner on {WEIGHTS_TOPIC} fell silent for {LEARNER_SILENCE_S:.0f} s; training stops"
            )

    def refresh(self) -> bool:
        message, self._pending = self._pending, None
        if message is None or int(message.layout.data_offset) <= self.loaded_version:
            return False
        try:
            state = decode_weights(message, self.actor)
        except ValueError as err:
            self.error = str(err)
            return False
        self.actor.load_state_dict(state)
        self.loaded_version = int(message.layout.data_offset)
        return True

    def send(self, transitions: Transitions) -> bool:
        del transitions  # RobotEnv already published them on the transitions topic
        return True

    def close(self, timeout: float = 0.0, drain: bool = False) -> LearnerStats:
        return LearnerStats(received=0, updates=0, published=self.loaded_version)


class TopicLearner:
    """The learner side (see the module docstring): `spin(seconds)` until stopped."""

    def __init__(self, algorithm: Any, profile: RobotProfile, node: Any, cfg: Any, prior: Transitions | None) -> None:
        from std_msgs.msg import Float32MultiArray

        self.algorithm, self.profile, self.node, self.cfg = algorithm, profile, node, cfg
        n, a = len(profile.observations), len(profile.actions)
        self.dims = (n, a)
        self.low = torch.tensor([x.low for x in profile.actions], dtype=torch.float32)
        self.high = torch.tensor([x.high for x in profile.actions], dtype=torch.float32)
        self.buffer = ReplayBuffer(cfg.buffer_capacity, n, n, a, "cpu")
        self.prior = ReplayBuffer(cfg.buffer_capacity, n, n, a, "cpu")
        if prior is not None:
            self.prior.add(prior)
        self.sampler = SymmetricSampler(self.buffer, self.prior, cfg.prior_fraction)
        self.generator = torch.Generator().manual_seed(0)
        self.received = self.updates = self.published = self.invalid = self.interventions = 0
        self.publisher = node.create_publisher(Float32MultiArray, WEIGHTS_TOPIC, 1)
        node.create_subscription(Float32MultiArray, TRANSITION_TOPIC, self._on_transition, TRANSITION_DEPTH)

    def _on_transition(self, message: Any) -> None:
        n, a = self.dims
        row = torch.as_tensor(np.asarray(message.data, dtype=np.float32))
        if row.numel() != 2 * n + a + 5:
            self.invalid += 1
            return
        terminated, truncated, intervened, valid = (bool(row[2 * n + a + 1 + k] > 0.5) for k in range(4))
        if not valid:
            self.invalid += 1
            return
        obs, next_obs = row[:n].unsqueeze(0), row[n + a + 1 : 2 * n + a + 1].unsqueeze(0)
        action = (2.0 * (row[n : n + a] - self.low) / (self.high - self.low) - 1.0).unsqueeze(0)
        flag = lambda value: torch.tensor([value])  # noqa: E731
        step = Transitions(
            obs=obs,
            critic_obs=obs,
            actions=action,
            rewards=row[n + a].reshape(1),
            costs=torch.zeros(1, device=row.device),
            next_obs=next_obs,
            next_critic_obs=next_obs,
            terminated=flag(terminated),
            truncated=flag(truncated),
            intervened=flag(intervened),
            is_demo=flag(False),
        )
        self.buffer.add(step)
        if intervened and self.cfg.interventions_to_prior:
            self.prior.add(select_transitions(step, step.intervened))
        self.interventions += int(intervened)
        self.received += 1

    def spin(self, seconds: float, stopped: Callable[[], bool] = lambda: False) -> LearnerStats:
        """Receive and learn for `seconds` (or until `stopped()`), publishing weights; never blocks on the actor."""
        import rclpy

        deadline = time.monotonic() + seconds
        cfg = self.cfg
        while time.monotonic() < deadline and not stopped():
            rclpy.spin_once(self.node, timeout_sec=0.0 if self._due() else 0.05)
            if not self._due():
                continue
            if self.algorithm.needs_normalizers:  # SAC's normalize_obs: fitted once
                self.algorithm.fit_normalizers(self.prior.stored() if len(self.prior) else self.buffer.stored())
            batch = self.sampler.sample(cfg.batch_size, self.generator)
            self.algorithm.update(batch, update_actor=self.updates >= cfg.critic_warmup_steps)
            self.updates += 1
            if self.updates % PUBLISH_EVERY == 0:
                self.published += 1
                self.publisher.publish(encode_weights(self.algorithm.actor, self.published))
        return LearnerStats(self.received, self.updates, self.published, self.interventions)

    def _due(self) -> bool:
        ready = len(self.buffer) >= max(self.cfg.learning_starts, self.cfg.batch_size)
        online = self.received - self.cfg.learning_starts
        return ready and self.updates < self.cfg.updates_per_step * max(online, 1)
