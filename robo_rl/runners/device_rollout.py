"""A whole on-policy rollout, and a whole evaluation, as one captured graph on the env's device.

`OnPolicyRunner.collect` steps the env and the policy from Python: on a GPU every step costs hundreds of kernel
launches and the Python between them. `DeviceRollout` runs the same `num_steps` steps (the critic, the policy's
forward pass and sampling, the env's transition with its observations, rewards and resets, the rollout storage
and the episode statistics) as one block that `robo_rl.capture.Captured` replays as a CUDA graph: no host sync
inside a rollout. The random numbers of the block (the env's draws, `CapturableEnv.draw`, and the policy's
standard normal noise) are drawn before it, step by step in the order `collect` draws them, so on the same seeds
the rollout is `collect`'s, number for number (tests/robo_rl/runners/test_device_rollout.py).

`CapturedEvaluation` does the same for the deterministic evaluation: all `max_episode_steps` steps of the eval
env in one replay, the results read once at the end (an early stop by a sequential gate is decided afterwards,
on the same episodes: the gate's decision does not depend on where it stops). An actor with memory has its state
carried inside the block as `evaluate` carries it (`PolicyStepper`, one of the block's owners).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import torch

from robo_rl.capture import CaptureBackend, Captured, copy_into, static_copy
from robo_rl.envs import (
    INFO_FINAL_OBS,
    INFO_FINAL_PRIVILEGED_OBS,
    INFO_PRIVILEGED_OBS,
    INFO_SUCCESS,
    INFO_TRACKING_ERROR,
    BatchedEnv,
    capturable,
)
from robo_rl.runners.evaluate import EvalResult
from robo_rl.runners.gate_test import SequentialGate
from robo_rl.runners.loop import critic_observation
from robo_rl.runners.policy_stepper import Actor, PolicyStepper

if TYPE_CHECKING:
    from robo_rl.runners.on_policy import OnPolicyRunner


def rollout_unsupported(env: BatchedEnv, policy: object, world_size: int) -> list[str]:
    """What a captured rollout of `policy` on `env` would need and lacks (empty: it applies)."""
    needs = (
        ("an env with a split step (robo_rl.envs.CapturableEnv: the torch quadrotor tasks)", not capturable(env)),
        ("a policy that samples from given noise (act_with_noise: ActorCritic)", not hasattr(policy, "act_with_noise")),
        ("a single process (the captured update has no collectives)", world_size != 1),
    )
    return [what for what, missing in needs if missing]


class StaticDraws:
    """Per-step random numbers, drawn eagerly into tensors that a captured block reads at fixed addresses."""

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.values: list[Any] = [None] * steps

    def fill(self, t: int, value: Any) -> None:
        """Store step `t`'s draws (copied into the step's pinned tensors after the first time)."""
        if self.values[t] is None:
            self.values[t] = static_copy(value)
        else:
            with torch.no_grad():
                copy_into(self.values[t], value, f"draws of step {t}")


class DeviceRollout:
    """`OnPolicyRunner.collect` as one captured block (see the module docstring).

    Args:
        runner: the runner whose env, policy, storage, tracker and observations the rollout uses and updates.
        backend: `robo_rl.capture.CAPTURE_BACKENDS` ("cuda" on a GPU, "eager" on the CPU, "fx" in tests).
    """

    def __init__(self, runner: OnPolicyRunner, backend: CaptureBackend) -> None:
        missing = rollout_unsupported(runner.env, runner.policy, runner.reducer.world.size)
        if missing:
            raise ValueError(f"runner.capture needs {'; '.join(missing)}")
        self.runner = runner
        steps, env = runner.storage.num_steps, runner.env
        self.env_draws = StaticDraws(steps)
        self.noise = torch.zeros(steps, env.num_envs, runner.policy.action_dim, device=env.device)
        self.captured = Captured(self._block, owners=(env, runner, runner.tracker), backend=backend)

    def __call__(self) -> None:
        """Fill the runner's rollout storage with `num_steps` steps of every env."""
        runner = self.runner
        env: Any = runner.env
        for t in range(self.env_draws.steps):
            torch.randn(self.noise.shape[1:], device=self.noise.device, out=self.noise[t])
            self.env_draws.fill(t, env.draw())
        self.captured()
        runner.storage.step = runner.storage.num_steps  # a replay wrote every step; Python did not count them
        runner.env_steps += runner.storage.num_steps * env.num_envs

    @torch.no_grad()
    def _block(self) -> None:
        runner = self.runner
        policy, storage, tracker = runner.policy, runner.storage, runner.tracker
        env: Any = runner.env
        storage.step = 0
        value = policy.value(runner.critic_obs)
        for t in range(storage.num_steps):
            action, distribution = policy.act_with_noise(runner.obs, self.noise[t])  # type: ignore[attr-defined]
            next_obs, reward, terminated, truncated, info = env.transition(
                policy.scaler(action), self.env_draws.values[t]
            )
            done = terminated | truncated
            next_critic = critic_observation(next_obs, info, INFO_PRIVILEGED_OBS)
            final_critic = critic_observation(info[INFO_FINAL_OBS], info, INFO_FINAL_PRIVILEGED_OBS)
            next_value, final_value = policy.value(torch.cat([next_critic, final_critic])).chunk(2)
            storage.add(
                obs=runner.obs,
                critic_obs=runner.critic_obs,
                actions=action,
                log_probs=distribution.log_prob(action),
                values=value,
                next_values=torch.where(done, final_value, next_value),
                distribution=distribution.params(),
                rewards=reward,
                terminated=terminated,
                dones=done,
            )
            tracker.record(reward, done, info.get(INFO_SUCCESS))
            runner.obs, runner.critic_obs, value = next_obs, next_critic, next_value


class CapturedEvaluation:
    """`robo_rl.runners.evaluate.evaluate` as one captured block of `max_episode_steps` steps.

    Built once per (eval env, actor); the actor's parameters and statistics may change in place between calls (the
    training updates them), as they do in a runner. The env's `reset(seed)` runs eagerly before each replay.
    """

    def __init__(self, env: BatchedEnv, actor: Actor, backend: CaptureBackend):
        if not capturable(env):
            raise ValueError("a captured evaluation needs an env with a split step (robo_rl.envs.CapturableEnv)")
        self.env, self.actor = env, actor
        n, device = env.num_envs, env.device
        self.policy = PolicyStepper(actor, n, device)
        self.draws = StaticDraws(env.max_episode_steps)
        self.obs = torch.zeros(n, env.obs_spec.dim, device=device)
        self.returns = torch.zeros(n, device=device)
        self.lengths = torch.zeros(n, dtype=torch.long, device=device)
        self.running = torch.ones(n, dtype=torch.bool, device=device)
        self.succeeded = torch.zeros(n, dtype=torch.bool, device=device)
        self.squared_error = torch.zeros((), device=device)
        self.defines_success = self.tracks = False
        self.captured = Captured(self._block, owners=(env, self, self.policy), backend=backend)

    @torch.no_grad()
    def __call__(self, seed: int, gate: SequentialGate | None = None) -> EvalResult:
        """One episode per env from the initial states of `seed`: `evaluate(env, actor, seed, gate)`'s result."""
        env: Any = self.env
        self.obs.copy_(env.reset(seed=seed))
        self.policy.restart(torch.ones(env.num_envs, dtype=torch.bool, device=env.device))
        for tensor in (self.returns, self.lengths, self.succeeded, self.squared_error):
            tensor.zero_()
        self.running.fill_(True)
        for t in range(self.draws.steps):
            self.draws.fill(t, env.draw())
        self.captured()
        return self._result(gate)

    def _block(self) -> None:
        env: Any = self.env
        for t in range(self.draws.steps):
            obs, reward, terminated, truncated, info = env.transition(self.policy(self.obs), self.draws.values[t])
            self.policy.restart(terminated | truncated)
            self.returns += reward * self.running
            self.lengths += self.running.long()
            ended = self.running & (terminated | truncated)
            if INFO_SUCCESS in info:
                self.defines_success = True
                self.succeeded |= ended & info[INFO_SUCCESS]
            if INFO_TRACKING_ERROR in info:
                self.tracks = True
                self.squared_error += (info[INFO_TRACKING_ERROR].square() * self.running).sum()
            self.running &= ~ended
            self.obs = obs

    def _result(self, gate: SequentialGate | None) -> EvalResult:
        returns, lengths = tuple(self.returns.tolist()), tuple(self.lengths.tolist())
        successes = tuple(self.succeeded.tolist()) if self.defines_success else None
        rms = None
        if self.tracks:
            rms = math.sqrt(self.squared_error.item() / max(int(self.lengths.sum().item()), 1))
        decision = None
        if gate is not None and successes is not None:
            wins = sum(successes)
            decision = gate.certain(wins, len(successes) - wins, len(successes))
        return EvalResult(returns, lengths, successes, decision, tracking_rms=rms)
