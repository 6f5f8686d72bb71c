"""What the off-policy runner sets up before its first step: the prior buffer (`off_policy.prior_buffer`), the
weights it starts from (`off_policy.init_from`), the checks of a camera run, and the captured updates
(`off_policy.capture`). Each reads the run's config and answers a ValueError naming the setting it cannot honour.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import torch

from robo_rl.algorithms.off_policy import OffPolicyAlgorithm
from robo_rl.capture import capture_backend, capture_enabled
from robo_rl.chunks.demos import chunk_demos
from robo_rl.chunks.env import ChunkEnv, action_chunking
from robo_rl.envs import BatchedEnv, critic_obs_dim, image_specs_of
from robo_rl.hil.demos import load_demo_frames, load_demos
from robo_rl.image_spec import ImageSpec
from robo_rl.runners.captured_updates import CapturableAlgorithm, CapturedUpdates
from robo_rl.runners.off_policy_config import OffPolicyRunnerConfig
from robo_rl.storage import checkpoint
from robo_rl.storage.replay import ReplayBuffer, Transitions, transitions_to
from robo_rl.task_record import read_task_record


def load_prior_buffer(path: Path, capacity: int, env: BatchedEnv) -> ReplayBuffer:
    """The transitions of `path` (a replay buffer file from `robo-rl collect`, or a .npz demo file from
    `robo-rl record-demos`) in a new buffer of `capacity` on `env`'s device.

    The copy has the run's capacity, so interventions can be added to it during training; its dimensions (and,
    for demo files, its observation and action names) must match the task's (ValueError naming the mismatch).
    On a task that acts in chunks (`task.action_chunk` > 1), a demo file of single steps (what `robo-rl
    record-demos` writes) is read against one step's actions and becomes chunks of the episode's next actions and
    their macro transitions (`robo_rl.chunks.demos.chunk_demos`); a replay buffer file must hold chunks already.
    """
    if not path.is_file():
        raise FileNotFoundError(f"off_policy.prior_buffer: {path} does not exist")
    dims = (env.obs_spec.dim, critic_obs_dim(env), env.action_spec.dim)
    cameras = image_specs_of(env)
    if path.suffix == ".npz":
        stored = _demo_transitions(path, env, cameras)
    else:
        saved = ReplayBuffer.load(path, "cpu")
        names = ("obs_dim", "critic_obs_dim", "action_dim", "image_specs")
        for name, ours in zip(names, (*dims, cameras), strict=True):
            theirs = getattr(saved, name)
            if theirs != ours:
                raise ValueError(f"off_policy.prior_buffer: {path} has {name} {theirs}, the task needs {ours}")
        stored = saved.stored()
    if len(stored) == 0:
        raise ValueError(f"off_policy.prior_buffer: {path} holds no transitions")
    prior = ReplayBuffer(capacity, *dims, env.device, cameras)
    prior.add(transitions_to(stored, prior.device))
    return prior


def _demo_transitions(path: Path, env: BatchedEnv, cameras: tuple[ImageSpec, ...]) -> Transitions:
    """The demo file's transitions on `env`: as recorded, or as chunks when `env` acts in chunks."""
    chunking = action_chunking(env)
    if chunking.horizon == 1:
        return with_demo_frames(load_demos(path, env), path, cameras, env.device)
    if cameras:
        raise ValueError(
            f"off_policy.prior_buffer: {path}: demonstrations with camera frames cannot be chunked yet "
            f"(task.action_chunk={chunking.horizon} on a task with cameras)"
        )
    step_env = SimpleNamespace(  # what load_demos reads of an env, with one step's actions
        obs_spec=env.obs_spec,
        privileged_obs_spec=env.privileged_obs_spec,
        action_spec=chunking.step_action,
        device=env.device,
    )
    steps = load_demos(path, cast(BatchedEnv, step_env))
    return chunk_demos(steps, chunking.horizon, int(cast(ChunkEnv, env).execute)).transitions


def with_demo_frames(
    stored: Transitions, path: Path, cameras: tuple[ImageSpec, ...], device: torch.device
) -> Transitions:
    """`stored` (a demo file's vectors) with the file's camera frames, which must be the task's cameras exactly;
    a state-only task takes a file's vectors and leaves any frames."""
    if not cameras:
        return stored
    specs, frames = load_demo_frames(path)
    if specs != cameras:
        names = [spec.to_dict() for spec in specs] if specs else "no frames"
        raise ValueError(
            f"off_policy.prior_buffer: {path} has cameras {names}, the task needs {[c.to_dict() for c in cameras]}"
        )
    images = {name: torch.as_tensor(pair[0]).to(device) for name, pair in frames.items()}
    next_images = {name: torch.as_tensor(pair[1]).to(device) for name, pair in frames.items()}
    return replace(stored, images=images, next_images=next_images)


def load_weights(algorithm: OffPolicyAlgorithm, source: Path, env: BatchedEnv) -> None:
    """`off_policy.init_from`: the weights of `source` (a run directory or a checkpoint file) into `algorithm`;
    ValueError naming what does not fit."""
    path = source / "checkpoints" / "latest.pt" if source.is_dir() else source
    if not path.is_file():
        raise FileNotFoundError(f"off_policy.init_from: {path} does not exist")
    run = path.parent.parent if path.parent.name == "checkpoints" else path.parent
    record = read_task_record(run)
    if record is not None:
        for kind, theirs, ours in (
            ("observation", record.specs.obs.names, env.obs_spec.names),
            ("action", record.specs.action.names, env.action_spec.names),
        ):
            if tuple(theirs) != tuple(ours):
                raise ValueError(f"off_policy.init_from: {run} has {kind} names {list(theirs)}, this run {list(ours)}")
        cameras = image_specs_of(env)
        if record.specs.cameras and record.specs.cameras != cameras:
            theirs_cameras = [camera.to_dict() for camera in record.specs.cameras]
            raise ValueError(
                f"off_policy.init_from: {run} has cameras {theirs_cameras}, this run {[c.to_dict() for c in cameras]}"
            )
    state = checkpoint.load(path, env.device, required=("algorithm",))["algorithm"]
    try:
        if set(state) == {"actor"}:  # an actor_learner run's checkpoint: the actor side only
            algorithm.actor.load_state_dict(state["actor"])
        elif "encoder" in state and "critic" not in state:  # a camera run's best.pt: the deployable policy
            algorithm.load_policy_state(state)
        else:
            algorithm.load_state_dict(state)
    except (KeyError, RuntimeError) as err:
        raise ValueError(f"off_policy.init_from: {path} does not fit this run's algorithm ({err})") from None


def check_camera_run(cfg: OffPolicyRunnerConfig, cameras: tuple[ImageSpec, ...], algorithm: OffPolicyAlgorithm) -> None:
    """ValueError naming the setting when a camera env meets what does not learn from frames yet: an algorithm
    without a camera policy, a learner on the ROS graph (its topics carry vectors)."""
    if not cameras:
        return
    if not algorithm.image_specs:
        raise ValueError(f"{type(algorithm).__name__} does not learn from cameras; use sac (DrQ)")
    if cfg.actor_learner and cfg.learner_transport == "ros":
        raise ValueError(
            "off_policy.learner_transport=ros carries flat float vectors, not camera frames; with cameras use "
            "learner_transport=process (a learner process on this computer) or train in the env loop"
        )


def capture_refusal(
    cfg: OffPolicyRunnerConfig, algorithm: OffPolicyAlgorithm, cameras: tuple[ImageSpec, ...], world: int
) -> str | None:
    """Why this run's updates cannot be captured (`off_policy.capture`), or None."""
    if cfg.actor_learner or cfg.prior_buffer is not None:
        return "actor_learner and prior_buffer runs are not captured"
    if cameras:
        return "camera runs (DrQ) are not captured"
    if world > 1:
        return "runs over several processes are not captured (their gradient all-reduce)"
    reason = algorithm.capture_problem()
    return None if reason is None else f"{type(algorithm).__name__}: {reason}"


def captured_updates(
    cfg: OffPolicyRunnerConfig,
    algorithm: OffPolicyAlgorithm,
    buffer: ReplayBuffer,
    cameras: tuple[ImageSpec, ...],
    world: int,
) -> CapturedUpdates | None:
    """The captured gradient steps `off_policy.capture` asks for, or None ("never", or "auto" where they cannot
    be); ValueError naming the setting when "always" cannot be honoured. Rebuilds the algorithm's optimizers capturable,
    so it comes before any update or checkpoint load."""
    if not capture_enabled(cfg.capture, buffer.device):
        return None
    refusal = capture_refusal(cfg, algorithm, cameras, world)
    if refusal is not None:
        if cfg.capture == "always":
            raise ValueError(f"off_policy.capture=always: {refusal}; use capture=auto or never")
        return None
    capturable = cast(CapturableAlgorithm, algorithm)  # no capture_problem: it says it has these members
    return CapturedUpdates(capturable, buffer, cfg.batch_size, capture_backend(buffer.device))
