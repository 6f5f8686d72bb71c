"""A whole deterministic evaluation as one captured graph on the env's device (`CapturedEvaluation`).

All `max_episode_steps` steps of the eval env run in one replay (`robo_rl.capture.Captured`), through the step body
`evaluate` runs (`robo_rl.runners.evaluate.EpisodeTally`); the results are read once at the end. An early stop by a
sequential gate is decided afterwards, on the same episodes: the gate's decision does not depend on where it stops.
An actor with memory has its state carried inside the block as `evaluate` carries it (`PolicyStepper`, one of the
block's owners). The env's draws are made before the block (`robo_rl.capture.StaticDraws`).
"""

from __future__ import annotations

from typing import Any

import torch

from robo_rl.capture import CaptureBackend, Captured, StaticDraws
from robo_rl.envs import BatchedEnv, StepResult, capturable
from robo_rl.runners.evaluate import EpisodeTally, EvalResult
from robo_rl.runners.gate_test import SequentialGate
from robo_rl.runners.policy_stepper import Actor, PolicyStepper


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
        self.tally = EpisodeTally(n, device)
        self.draws = StaticDraws(env.max_episode_steps)
        self.obs = torch.zeros(n, env.obs_spec.dim, device=device)
        self.captured = Captured(self._block, owners=(env, self, self.policy, self.tally), backend=backend)

    @torch.no_grad()
    def __call__(self, seed: int, gate: SequentialGate | None = None) -> EvalResult:
        """One episode per env from the initial states of `seed`: `evaluate(env, actor, seed, gate)`'s result."""
        env: Any = self.env
        self.obs.copy_(env.reset(seed=seed))
        self.policy.restart(torch.ones(env.num_envs, dtype=torch.bool, device=env.device))
        self.tally.restart()
        for t in range(self.draws.steps):
            self.draws.fill(t, env.draw())
        self.captured()
        return self.tally.result(gate)

    def _block(self) -> None:
        for t in range(self.draws.steps):
            self.obs, _ = self.tally.step(self.policy, self.obs, self._step_env(t))

    def _step_env(self, t: int) -> Any:
        """The env's step `t` on the draws made for it before the block."""
        env: Any = self.env
        draws = self.draws.values[t]

        def step(action: torch.Tensor) -> StepResult:
            return env.transition(action, draws)

        return step
