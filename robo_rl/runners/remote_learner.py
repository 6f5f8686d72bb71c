"""The off-policy runner's learner elsewhere (`off_policy.actor_learner`): the env loop sends its transitions and
acts with the weights the learner publishes, and never waits for a gradient step.

Two transports: a learner process on this computer (`robo_rl.hil.actor_learner.ActorLearner`, shared memory) or a
learner anywhere on the ROS graph (`robo_rl.robot.topic_learner`, over topics; the robot env makes its end).
"""

from __future__ import annotations

import copy
from functools import partial
from typing import Protocol

from robo_rl.algorithms.off_policy import OffPolicyAlgorithm
from robo_rl.cost_spec import cost_spec_of
from robo_rl.envs import BatchedEnv, image_specs_of
from robo_rl.hil.actor_learner import ActorLearner, LearnerConfig, LearnerStats
from robo_rl.runners.loop import Losses
from robo_rl.runners.off_policy_config import OffPolicyRunnerConfig
from robo_rl.storage.replay import Transitions


class RemoteLearner(Protocol):
    """The env loop's end of a learner elsewhere (`ActorLearner`, or `TopicActor` over ROS)."""

    dropped: int
    """Transitions the learner could not keep up with, dropped (counted, never waited for)."""
    loaded_version: int
    """The version of the weights the env loop acts with."""

    def check_alive(self) -> None: ...
    def refresh(self) -> bool: ...
    def send(self, transitions: Transitions) -> bool: ...
    def close(self, timeout: float = ..., drain: bool = ...) -> LearnerStats: ...


def start_learner(
    cfg: OffPolicyRunnerConfig,
    algorithm: OffPolicyAlgorithm,
    env: BatchedEnv,
    dims: tuple[int, int, int],
    prior: Transitions | None,
) -> tuple[RemoteLearner, OffPolicyAlgorithm]:
    """The learner `cfg.learner_transport` names, started, and the algorithm the env loop then acts with (a
    learner process's copy, which takes up the weights it publishes). `dims`: (obs, critic obs, action) sizes;
    `prior`: the prior buffer's transitions the learner samples from. A learner process keeps a camera env's frames
    with its transitions (the ROS transport carries vectors only: `check_camera_run` refuses it with cameras)."""
    if cfg.learner_transport == "ros":
        make = getattr(env, "topic_actor", None)  # a robot env's (RobotEnv); a simulator has none
        if make is None:
            raise ValueError("off_policy.learner_transport=ros needs the robot through ROS (robo-rl train --robot)")
        if cost_spec_of(env) is not None:
            raise ValueError(
                "off_policy.learner_transport=ros: the transitions topic carries no cost yet, and this task has a "
                "constraint; use learner_transport=process"
            )
        remote: RemoteLearner = make(algorithm)
        return remote, algorithm
    if env.device.type != "cpu":
        raise ValueError("off_policy.actor_learner runs on the CPU only")
    learner = LearnerConfig(
        buffer_capacity=cfg.buffer_capacity,
        batch_size=cfg.batch_size,
        learning_starts=cfg.learning_starts,
        updates_per_batch=cfg.updates_per_step,
        prior_fraction=cfg.prior_fraction,
        critic_warmup_steps=cfg.critic_warmup_steps,
        interventions_to_prior=cfg.interventions_to_prior,
        image_specs=image_specs_of(env),
    )
    process = ActorLearner(partial(copy.deepcopy, algorithm), dims, learner, prior)
    acting: OffPolicyAlgorithm = process.algorithm  # acts with the weights the learner publishes
    process.wait_ready()
    return process, acting


def send_transitions(remote: RemoteLearner, transitions: Transitions) -> None:
    """One env step's transitions to the learner, after a check that it lives (a dead learner stops training, and
    with it the robot, never silently) and the take-up of newly published weights."""
    remote.check_alive()
    remote.refresh()
    if len(transitions):
        remote.send(transitions)


def learner_metrics(remote: RemoteLearner) -> Losses:
    """The learner's figures for the metrics row, in place of the losses it keeps to itself."""
    return {"learner_dropped": float(remote.dropped), "policy_version": float(remote.loaded_version)}
