"""Record demonstrations: run a policy on a batched env and keep its transitions as a prior replay buffer.

The file feeds RLPD-style training (`off_policy.prior_buffer`): an expert policy, a scripted controller or a
human teleoperator's actions become transitions flagged `is_demo`, with actions stored in the normalized
[-1, 1] space the off-policy critics are trained in.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch

from robo_rl.envs import INFO_PRIVILEGED_OBS, INFO_SUCCESS, INFO_VALID, BatchedEnv, critic_obs_dim, image_specs_of
from robo_rl.hil.intervention import INFO_EXECUTED_ACTION, INFO_INTERVENED
from robo_rl.modules.actor_critic import ActionScaler
from robo_rl.runners.episode_stats import EpisodeTracker
from robo_rl.runners.observations import critic_observation, reset_critic_observation
from robo_rl.runners.off_policy import transitions_of_step
from robo_rl.storage.replay import ReplayBuffer, Transitions, select_transitions


@dataclass(frozen=True)
class Demonstrations:
    buffer: ReplayBuffer
    """Every collected transition, flagged `is_demo`."""
    episodes: int
    """Episodes that finished during collection."""
    mean_return: float | None
    """Mean return of those episodes (None when none finished)."""
    success: torch.Tensor | None = None
    """`(len(buffer),)` bool: `info["success"]` of each stored transition (what a success classifier learns from,
    robo_rl.robot.classifier); None when the env does not report success."""


@torch.no_grad()
def collect_demonstrations(
    env: BatchedEnv,
    policy: Callable[[torch.Tensor], torch.Tensor],
    num_transitions: int,
    seed: int,
    noise_std: float = 0.0,
    operator_only: bool = False,
    max_steps: int | None = None,
    episodes_per_env: int | None = None,
) -> Demonstrations:
    """Step every env with `policy` (raw obs → env action) until at least `num_transitions` are stored.

    `noise_std` adds Gaussian noise to the normalized action (then clipped to [-1, 1]), which widens the
    states a deterministic expert visits. The env is reset with `seed`; the noise is seeded from it too.
    On a robot (`robo_rl.robot.RobotEnv`) the operator demonstrates: where the env reports a takeover
    (`INFO_INTERVENED`) the executed action is stored, steps it marks invalid (`INFO_VALID`) are not, and with
    `operator_only` neither are the steps the operator did not drive. `max_steps` bounds the env steps (default:
    enough for `num_transitions` when every step is stored). `episodes_per_env` stores only each env's first that
    many episodes and stops once every env has finished them (whole episodes, as many as asked: an env whose
    episode ends early would otherwise start another and record part of it).
    """
    if num_transitions < 1:
        raise ValueError(f"num_transitions must be at least 1, got {num_transitions}")
    if noise_std < 0:
        raise ValueError(f"noise_std must not be negative, got {noise_std}")
    scaler = ActionScaler(env.action_spec.low_tensor(env.device), env.action_spec.high_tensor(env.device))
    steps = max_steps or math.ceil(num_transitions / env.num_envs)
    buffer = ReplayBuffer(
        max(steps * env.num_envs, num_transitions),
        env.obs_spec.dim,
        critic_obs_dim(env),
        env.action_spec.dim,
        env.device,
        image_specs_of(env),  # a camera env's demonstrations keep their frames
    )
    generator = torch.Generator(device=env.device).manual_seed(seed)
    tracker = EpisodeTracker(env.num_envs, env.device)
    obs = env.reset(seed=seed)
    critic_obs = reset_critic_observation(env, obs)
    success: list[torch.Tensor] | None = []
    finished = torch.zeros(env.num_envs, dtype=torch.long, device=env.device)
    for _ in range(steps):
        if len(buffer) >= num_transitions:
            break
        recording = None if episodes_per_env is None else finished < episodes_per_env
        if recording is not None and not bool(recording.any()):
            break
        action = scaler.normalize(policy(obs))
        if noise_std > 0:
            noise = torch.randn(action.shape, generator=generator, device=env.device) * noise_std
            action = (action + noise).clamp(-1.0, 1.0)
        result = env.step(scaler(action))
        step, keep = _kept(
            transitions_of_step(obs, critic_obs, action, result, True), result[4], scaler, operator_only, recording
        )
        buffer.add(step)
        reported = result[4].get(INFO_SUCCESS)
        success = None if success is None or reported is None else [*success, reported.bool()[keep].cpu()]
        obs, reward, terminated, truncated, info = result
        done = terminated | truncated
        tracker.record(reward, done if recording is None else done & recording)
        finished += done.long()
        critic_obs = critic_observation(obs, info, INFO_PRIVILEGED_OBS)
    stats = tracker.flush()
    flags = None if success is None else torch.cat(success)[: len(buffer)]
    return Demonstrations(buffer, stats.episodes, stats.mean_return, flags)


def _kept(
    step: Transitions, info: dict, scaler: ActionScaler, operator_only: bool, recording: torch.Tensor | None = None
) -> tuple[Transitions, torch.Tensor]:
    """A step's transitions as a demonstration: the operator's executed actions where it took over, without the
    invalid steps (and, `operator_only`, without the steps it did not drive; without the envs not `recording`); and
    which envs' rows were kept."""
    intervened = info.get(INFO_INTERVENED)
    keep = torch.ones_like(step.terminated, dtype=torch.bool) if recording is None else recording.clone()
    if intervened is not None:
        executed = scaler.normalize(info[INFO_EXECUTED_ACTION])
        step = replace(step, actions=torch.where(intervened.unsqueeze(-1), executed, step.actions))
        step = replace(step, intervened=intervened.to(step.terminated.dtype))
        if operator_only:
            keep &= intervened
    elif operator_only:
        raise ValueError("operator_only demonstrations need an env that reports the operator's takeover")
    valid = info.get(INFO_VALID)
    if valid is not None:
        keep &= valid
    return (step if bool(keep.all()) else select_transitions(step, keep)), keep.cpu()
