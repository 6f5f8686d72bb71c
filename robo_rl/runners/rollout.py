"""One on-policy rollout: `num_steps` steps of every env, stored for the update; the step body both paths run.

The eager loop (`OnPolicyRunner.collect`) and the captured block (`robo_rl.runners.device_rollout.DeviceRollout`)
run this same `run_rollout`; they differ only in where the random numbers come from, which they hand in as two
functions: `act` (the eager loop samples with the policy's own noise, the captured block reads noise drawn before
it) and `step_env` (`env.step`, or `env.transition` with the env's draws made before the block). Everything a step
changes lives in the objects of a `Rollout`: the storage and the tracker are written in place, the `RolloutCursor`
is rebound (a captured block names it as an owner, `robo_rl.capture.Captured`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from robo_rl.envs import (
    INFO_COST,
    INFO_FINAL_OBS,
    INFO_FINAL_PRIVILEGED_OBS,
    INFO_PRIVILEGED_OBS,
    INFO_SUCCESS,
    BatchedEnv,
    StepResult,
)
from robo_rl.modules.distributions import ActionDistribution, StochasticPolicy
from robo_rl.runners.episode_stats import EpisodeTracker
from robo_rl.runners.observations import critic_observation
from robo_rl.storage.rollout import RolloutStorage

Act = Callable[[int, Any], tuple[torch.Tensor, ActionDistribution]]
"""`act(t, obs)`: step `t`'s sampled normalized actions `(N, action_dim)` and their distribution."""
EnvStep = Callable[[int, torch.Tensor], StepResult]
"""`step_env(t, env_action)`: step `t` of the env on the scaled actions `(N, env_action_dim)`."""


@dataclass
class RolloutCursor:
    """Where the training envs are between steps: what the next step acts on."""

    obs: Any
    """Observations `(N, obs_dim)` (a camera env's dict of them)."""
    critic_obs: torch.Tensor
    """The critic's input `(N, critic_obs_dim)` (`robo_rl.runners.observations.critic_observation`)."""
    hidden: torch.Tensor | None = None
    """A policy with memory: each env's state `(N, state)` before its next step (zeroed where an episode ended);
    None for a policy without."""


@dataclass(frozen=True)
class Rollout:
    """What a rollout reads and writes: the env, the policy, the storage it fills, the training episodes'
    statistics and the cursor it advances."""

    env: BatchedEnv
    policy: StochasticPolicy
    storage: RolloutStorage
    tracker: EpisodeTracker
    cursor: RolloutCursor


@torch.no_grad()
def run_rollout(rollout: Rollout, act: Act, step_env: EnvStep, stop: Callable[[], bool] | None = None) -> int:
    """Fill `rollout.storage` from its current step with `storage.num_steps` steps of every env; returns the steps
    taken, fewer where `stop()` turned True before a step (a stop signal: the rollout is then incomplete).

    Each step stores V(obs) and, as `next_values`, V of the state it reached: the next observation's, or the final
    observation's where the episode ended (GAE bootstraps a time-out from it); both from one critic pass.
    """
    policy, storage, cursor = rollout.policy, rollout.storage, rollout.cursor
    if cursor.hidden is not None:  # the state at the rollout's start: the update replays each env's sequence from it
        storage.hidden_start.copy_(cursor.hidden)
    value, started = policy.value(cursor.critic_obs), torch.zeros_like(storage.starts[0])
    for t in range(storage.num_steps):
        if stop is not None and stop():
            return t
        action, distribution = act(t, cursor.obs)
        next_obs, reward, terminated, truncated, info = step_env(t, policy.scaler(action))
        done = terminated | truncated
        next_critic = critic_observation(next_obs, info, INFO_PRIVILEGED_OBS)
        final_critic = critic_observation(info[INFO_FINAL_OBS], info, INFO_FINAL_PRIVILEGED_OBS)
        next_value, final_value = policy.value(torch.cat([next_critic, final_critic])).chunk(2)
        storage.add(
            obs=cursor.obs,
            critic_obs=cursor.critic_obs,
            actions=action,
            log_probs=distribution.log_prob(action),
            values=value,
            next_values=torch.where(done, final_value, next_value),
            distribution=distribution.params(),
            rewards=reward,
            terminated=terminated,
            dones=done,
            starts=started,
            costs=info[INFO_COST] if INFO_COST in info else torch.zeros_like(reward),
            final_critic_obs=final_critic,
        )
        rollout.tracker.record(reward, done, info.get(INFO_SUCCESS), info.get(INFO_COST))
        if cursor.hidden is not None:  # a new episode starts from the reset state
            cursor.hidden = torch.where(done.unsqueeze(-1), torch.zeros_like(cursor.hidden), cursor.hidden)
        cursor.obs, cursor.critic_obs, value, started = next_obs, next_critic, next_value, done
    storage.last_critic_obs.copy_(cursor.critic_obs)
    return storage.num_steps
