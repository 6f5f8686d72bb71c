"""Deterministic evaluation of an actor on a batched env: one episode per env, its step body (`EpisodeTally`)
shared with the captured form."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from robo_rl.envs import INFO_COST, INFO_SUCCESS, INFO_TRACKING_ERROR, BatchedEnv, StepResult
from robo_rl.runners.gate_test import SequentialGate
from robo_rl.runners.policy_stepper import Actor, PolicyStepper

EVAL_SEED_OFFSET = 1_000_003
"""Evaluation envs are reset with `seed + EVAL_SEED_OFFSET`: fixed held-out initial states per training seed."""
PRECHECK_SEED_OFFSET = 2_000_003
"""The evaluation's pre-check (`LoopConfig.eval_precheck_episodes`) is reset with `seed + PRECHECK_SEED_OFFSET`:
held-out initial states of their own."""


def evaluation_due(
    iteration: int,
    max_iterations: int,
    interval: int,
    training_success_rate: float | None = None,
    min_training_success_rate: float | None = None,
) -> bool:
    """Evaluate every `interval` iterations (0: never periodically) and always after the last one.

    With `min_training_success_rate` set, a periodic evaluation is skipped while the success rate of the recent
    training episodes is known and below it (a cheap pre-check before a costly evaluation).
    """
    if iteration >= max_iterations:
        return True
    if interval <= 0 or iteration % interval != 0:
        return False
    if min_training_success_rate is None or training_success_rate is None:
        return True
    return training_success_rate >= min_training_success_rate


@dataclass(frozen=True)
class EvalResult:
    returns: tuple[float, ...]
    """Undiscounted return of each evaluated episode."""
    lengths: tuple[int, ...]
    """Length of each episode in control steps."""
    successes: tuple[bool, ...] | None = None
    """Whether each episode succeeded, for tasks that define success (`info["success"]`); else None."""
    decision: str | None = None
    """With a sequential gate (`evaluate(..., gate=...)`): "pass" or "fail"; the evaluation stopped as soon as it
    was decided, so `returns`, `lengths` and `successes` hold only the episodes that had finished."""
    tracking_rms: float | None = None
    """Root mean square of `info["tracking_error"]` over every step of every episode, for tasks that report it
    (e.g. m from the quadrotor's reference); else None."""
    costs: tuple[float, ...] | None = None
    """Each episode's cost (the sum of `info["cost"]`), for tasks with a constraint; else None."""

    @property
    def mean_cost(self) -> float | None:
        """Mean cost per episode, or None when the task reports no cost."""
        return None if not self.costs else sum(self.costs) / len(self.costs)

    @property
    def mean_return(self) -> float:
        return sum(self.returns) / len(self.returns)

    @property
    def std_return(self) -> float:
        mean = self.mean_return
        return math.sqrt(sum((r - mean) ** 2 for r in self.returns) / len(self.returns))

    @property
    def success_rate(self) -> float | None:
        """Fraction of successful episodes, or None when the task does not define success."""
        if self.successes is None:
            return None
        return sum(self.successes) / len(self.successes)


def evaluate_held_out(
    eval_env: BatchedEnv | None,
    actor: Actor,
    training_seed: int,
    gate: SequentialGate | None = None,
) -> EvalResult:
    """A runner's evaluation: the held-out initial states of `training_seed + EVAL_SEED_OFFSET`."""
    if eval_env is None:
        raise RuntimeError("no evaluation env was given to the runner")
    return evaluate(eval_env, actor, seed=training_seed + EVAL_SEED_OFFSET, gate=gate)


def targets_reached(
    evaluation: EvalResult,
    target_return: float | None,
    target_success_rate: float | None,
    max_cost: float | None = None,
) -> bool:
    """Whether `evaluation` meets every target that is set; False when none is set (train all iterations).

    A success target on a task that defines no success is never met. `max_cost` is a condition on the targets, not
    a target of its own: they count only where the mean cost per episode is at most it (never on a task that
    reports no cost).
    """
    if target_return is None and target_success_rate is None:
        return False
    if max_cost is not None and (evaluation.mean_cost is None or evaluation.mean_cost > max_cost):
        return False
    if target_return is not None and evaluation.mean_return < target_return:
        return False
    if target_success_rate is None:
        return True
    if evaluation.decision is not None and target_return is None:
        return evaluation.decision == "pass"
    rate = evaluation.success_rate
    return rate is not None and rate >= target_success_rate


def eval_metrics(evaluation: EvalResult | None) -> dict[str, float | None]:
    """The evaluation columns of a runner's metrics row (None where no evaluation ran this iteration)."""
    if evaluation is None:
        return {"eval_return": None, "eval_success_rate": None, "eval_tracking_rms": None, "eval_cost": None}
    gate = {} if evaluation.decision is None else {"eval_gate": float(evaluation.decision == "pass")}
    return {
        "eval_return": evaluation.mean_return,
        "eval_success_rate": evaluation.success_rate,
        "eval_tracking_rms": evaluation.tracking_rms,
        "eval_cost": evaluation.mean_cost,
    } | gate


class EpisodeTally:
    """One evaluation's running sums over `num_envs` envs, one episode each, and its step body (`step`): the eager
    `evaluate` and its captured form (`robo_rl.runners.captured_evaluation`) both step through it. Its tensors are
    changed in place only."""

    def __init__(self, num_envs: int, device: torch.device | str) -> None:
        self.returns = torch.zeros(num_envs, device=device)
        """Undiscounted return `(N,)` of each env's episode so far."""
        self.lengths = torch.zeros(num_envs, dtype=torch.long, device=device)
        self.running = torch.ones(num_envs, dtype=torch.bool, device=device)
        """`(N,)` whether each env's episode is still running."""
        self.succeeded = torch.zeros(num_envs, dtype=torch.bool, device=device)
        self.squared_error = torch.zeros((), device=device)
        """Sum of `info["tracking_error"]`² over every running step."""
        self.costs = torch.zeros(num_envs, device=device)
        """`(N,)` each env's episode cost so far (the sum of `info["cost"]`)."""
        self.defines_success = self.tracks = self.has_cost = False
        """Whether the env reports `info["success"]`, `info["tracking_error"]` and `info["cost"]`."""

    def restart(self) -> None:
        """Zero every sum: a new evaluation."""
        for tensor in (self.returns, self.lengths, self.succeeded, self.squared_error, self.costs):
            tensor.zero_()
        self.running.fill_(True)

    def step(
        self, policy: PolicyStepper, obs: Any, step_env: Callable[[torch.Tensor], StepResult]
    ) -> tuple[Any, torch.Tensor]:
        """One step of every env with `policy`'s actions at `obs` (`step_env`: the env's step); the next
        observations, and `(N,)` which episodes ended with this step."""
        obs, reward, terminated, truncated, info = step_env(policy(obs))
        policy.restart(terminated | truncated)
        self.returns += reward * self.running
        self.lengths += self.running.long()
        ended = self.running & (terminated | truncated)
        if INFO_SUCCESS in info:
            self.defines_success = True
            self.succeeded |= ended & info[INFO_SUCCESS]
        if INFO_TRACKING_ERROR in info:
            self.tracks = True
            self.squared_error += (info[INFO_TRACKING_ERROR].square() * self.running).sum()
        if INFO_COST in info:
            self.has_cost = True
            self.costs += info[INFO_COST] * self.running
        self.running &= ~ended
        return obs, ended

    def decided(self, gate: SequentialGate) -> EvalResult | None:
        """With the finished episodes so far: the result of the episodes that finished, where they make `gate`'s
        outcome certain; else None."""
        finished = ~self.running
        wins = int((self.succeeded & finished).sum())
        decision = gate.certain(wins, int(finished.sum()) - wins, finished.numel())
        if decision is None:
            return None
        keep = finished.nonzero().squeeze(-1)
        flags = tuple(self.succeeded[keep].tolist())
        return EvalResult(tuple(self.returns[keep].tolist()), tuple(self.lengths[keep].tolist()), flags, decision)

    def result(self, gate: SequentialGate | None = None) -> EvalResult:
        """Every episode's result (an episode still running counts as not successful), with `gate`'s decision on
        them where the task defines success."""
        successes = tuple(self.succeeded.tolist()) if self.defines_success else None
        rms = None
        if self.tracks:
            rms = math.sqrt(self.squared_error.item() / max(int(self.lengths.sum().item()), 1))
        decision = None
        if gate is not None and successes is not None:
            wins = sum(successes)
            decision = gate.certain(wins, len(successes) - wins, len(successes))
        costs = tuple(self.costs.tolist()) if self.has_cost else None
        returns, lengths = tuple(self.returns.tolist()), tuple(self.lengths.tolist())
        return EvalResult(returns, lengths, successes, decision, rms, costs)


@torch.no_grad()
def evaluate(
    env: BatchedEnv,
    actor: Actor,
    seed: int,
    gate: SequentialGate | None = None,
) -> EvalResult:
    """Run each of the env's `num_envs` copies for exactly one episode with `actor` `(N, obs) → (N, act)`.

    An actor with memory (`(obs, h) -> (action, h_next)`, robo_rl.runners.policy_stepper) has its state carried
    from step to step and set to its reset state at each env's episode start.

    The env is reset with `seed`, so the same seed evaluates the same initial states. Where the env reports
    `info["success"]`, each episode's value at its last step is collected; an episode still running after
    `max_episode_steps` (an env that never truncates) counts as not successful.
    With a `gate` (robo_rl.runners.gate_test) on a task that defines success, the evaluation stops at the step
    whose finished episodes make its outcome certain (`decision`, the same as without the gate); the result then
    holds the finished episodes only.
    """
    obs = env.reset(seed=seed)
    policy = PolicyStepper(actor, env.num_envs, env.device)
    tally = EpisodeTally(env.num_envs, env.device)
    for _ in range(env.max_episode_steps):
        obs, ended = tally.step(policy, obs, env.step)
        if not bool(tally.running.any()):
            break
        if gate is not None and tally.defines_success and bool(ended.any()):
            decided = tally.decided(gate)
            if decided is not None:
                return decided
    return tally.result(gate)
