"""The sequential gate test: its decisions, its error rates by simulation, and an evaluation that stops early."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from robo_rl.runners.evaluate import evaluate, targets_reached
from robo_rl.runners.gate_test import SequentialGate
from robo_rl.sim import make

GATE = SequentialGate(target=0.95, margin=0.03, alpha=0.05, beta=0.05)


def test_certain_outcomes_stop_at_once() -> None:
    assert GATE.decide(0, 6, 100) == "fail"  # 6 failures: 95 of 100 can no longer succeed
    assert GATE.decide(95, 0, 100) == "pass"
    # statistical: 3 failures before any success, or 47 successes before any failure, settle it (Wald's bounds at
    # p0 = 0.92, p1 = 0.98, alpha = beta = 0.05)
    assert GATE.decide(0, 2, 100) is None and GATE.decide(0, 3, 100) == "fail"
    assert GATE.decide(46, 0, 100) is None and GATE.decide(47, 0, 100) == "pass"


def test_every_episode_finished_gives_the_plain_gate() -> None:
    for wins in range(90, 101):
        assert GATE.decide(wins, 100 - wins, 100) == ("pass" if wins >= 95 else "fail")
        assert GATE.certain(wins, 100 - wins, 100) == ("pass" if wins >= 95 else "fail")
    assert GATE.certain(0, 3, 100) is None and GATE.certain(94, 0, 100) is None  # the rest can still decide


def test_the_stopped_evaluation_gives_the_same_outcome_as_the_whole_one() -> None:
    env = make("rc_car/race", num_envs=40, seed=0)
    weave = lambda obs: torch.stack((torch.sin(obs[:, 0]), torch.full_like(obs[:, 0], 0.3)), dim=-1)  # noqa: E731
    for seed in range(3):
        plain, gated = evaluate(env, weave, seed=seed), evaluate(env, weave, seed=seed, gate=GATE)
        assert gated.decision == ("pass" if targets_reached(plain, None, 0.95) else "fail")


def _run(p: float, rng: np.random.Generator, episodes: int = 400) -> tuple[str, int]:
    wins = losses = 0
    while True:
        if rng.random() < p:
            wins += 1
        else:
            losses += 1
        decision = GATE.decide(wins, losses, episodes)
        if decision is not None:
            return decision, wins + losses


@pytest.mark.parametrize(("p", "wrong", "bound"), [(0.92, "pass", 0.06), (0.98, "fail", 0.06), (0.80, "pass", 0.001)])
def test_stated_error_rates_hold_by_simulation(p: float, wrong: str, bound: float) -> None:
    rng = np.random.default_rng(0)
    runs = [_run(p, rng) for _ in range(3000)]
    errors = sum(decision == wrong for decision, _ in runs) / len(runs)
    assert errors <= bound  # Wald: at most alpha/(1-beta) = 0.053 at p0, beta/(1-alpha) at p1
    if p == 0.80:  # a clearly failing policy is told apart after a handful of episodes
        assert np.median([n for _, n in runs]) <= 15


def test_a_failing_policy_s_evaluation_stops_early_and_fails_the_gate() -> None:
    env = make("rc_car/race", num_envs=32, seed=0)  # leaving the track ends an episode at once (a failure)

    def full_throttle_straight(obs: torch.Tensor) -> torch.Tensor:
        return torch.tensor([[0.0, 1.0]]).expand(obs.shape[0], 2)

    plain = evaluate(env, full_throttle_straight, seed=3)
    gated = evaluate(env, full_throttle_straight, seed=3, gate=GATE)
    assert plain.success_rate is not None and plain.success_rate < 0.95 and not targets_reached(plain, None, 0.95)
    assert gated.decision == "fail" and not targets_reached(gated, None, 0.95)
    # decided after the first crashes (2 of 32 already lose the gate), long before the 30 s time limit
    assert len(gated.returns) < 32 and max(gated.lengths) < 0.2 * env.max_episode_steps
