"""Record demonstrations: run a policy on a batched env and keep its transitions as a prior replay buffer.

The file feeds RLPD-style training (`off_policy.prior_buffer`): an expert policy, a scripted controller or a
human teleoperator's actions become transitions flagged `is_demo`, with actions stored in the normalized
[-1, 1] space the off-policy critics are trained in.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from robo_rl.envs import INFO_PRIVILEGED_OBS, BatchedEnv, critic_obs_dim
from robo_rl.modules.actor_critic import ActionScaler
from robo_rl.runners.episode_stats import EpisodeTracker
from robo_rl.runners.off_policy import transitions_of_step
from robo_rl.runners.on_policy import critic_observation, reset_critic_observation
from robo_rl.storage.replay import ReplayBuffer


@dataclass(frozen=True)
class Demonstrations:
    buffer: ReplayBuffer
    """Every collected transition, flagged `is_demo`."""
    episodes: int
    """Episodes that finished during collection."""
    mean_return: float | None
    """Mean return of those episodes (None when none finished)."""


@torch.no_grad()
def collect_demonstrations(
    env: BatchedEnv,
    policy: Callable[[torch.Tensor], torch.Tensor],
    num_transitions: int,
    seed: int,
    noise_std: float = 0.0,
) -> Demonstrations:
    """Step every env with `policy` (raw obs → env action) until at least `num_transitions` are stored.

    `noise_std` adds Gaussian noise to the normalized action (then clipped to [-1, 1]), which widens the
    states a deterministic expert visits. The env is reset with `seed`; the noise is seeded from it too.
    """
    if num_transitions < 1:
        raise ValueError(f"num_transitions must be at least 1, got {num_transitions}")
    if noise_std < 0:
        raise ValueError(f"noise_std must not be negative, got {noise_std}")
    scaler = ActionScaler(env.action_spec.low_tensor(env.device), env.action_spec.high_tensor(env.device))
    steps = math.ceil(num_transitions / env.num_envs)
    buffer = ReplayBuffer(steps * env.num_envs, env.obs_spec.dim, critic_obs_dim(env), env.action_spec.dim, env.device)
    generator = torch.Generator(device=env.device).manual_seed(seed)
    tracker = EpisodeTracker(env.num_envs, env.device)
    obs = env.reset(seed=seed)
    critic_obs = reset_critic_observation(env, obs)
    for _ in range(steps):
        action = scaler.normalize(policy(obs))
        if noise_std > 0:
            noise = torch.randn(action.shape, generator=generator, device=env.device) * noise_std
            action = (action + noise).clamp(-1.0, 1.0)
        result = env.step(scaler(action))
        buffer.add(transitions_of_step(obs, critic_obs, action, result, is_demo=True))
        obs, reward, terminated, truncated, info = result
        tracker.record(reward, terminated | truncated)
        critic_obs = critic_observation(obs, info, INFO_PRIVILEGED_OBS)
    stats = tracker.flush()
    return Demonstrations(buffer, stats.episodes, stats.mean_return)
