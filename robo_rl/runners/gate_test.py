"""A sequential test for a success-rate gate (e.g. 95 %): decide from as few evaluation episodes as settle it.

`SequentialGate.decide(successes, failures, episodes)` after each finished episode of an evaluation of `episodes`:
1. *certain*: the gate is lost once more episodes failed than it allows (`failures > (1 − target) · episodes`), and
   won once enough succeeded (`successes ≥ target · episodes`): whatever the rest do, the evaluation's outcome is
   known, so stopping changes nothing;
2. *statistical*: Wald's sequential probability ratio test of p ≤ p0 = target − margin against p ≥ p1 = target +
   margin (p1 capped below 1): the log-likelihood ratio `s·ln(p1/p0) + f·ln((1 − p1)/(1 − p0))` decides "pass" at
   `ln((1 − β)/α)` and "fail" at `ln(β/(1 − α))`. Wald's bounds give P(pass | p ≤ p0) ≤ α/(1 − β) and
   P(fail | p ≥ p1) ≤ β/(1 − α) (about α and β); between p0 and p1 either answer is acceptable.
Undecided after every episode: the point estimate decides (the plain gate).

In a batched evaluation failures show first (a crash ends an episode early) and successes at the time limit, so
the finished episodes of a running batch are not a random sample: the SPRT on them fails good policies (measured:
a hover PPO seed whose plain gate passed at iteration 65 went on to 278). `evaluate` therefore stops a batch only
on `certain` outcomes (a failing policy after `(1 − target) · N + 1` crashes, instead of after whole episodes);
`decide` (certain, then the SPRT) is for outcomes counted in random order, e.g. batch after batch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

Decision = Literal["pass", "fail"]


@dataclass(frozen=True)
class SequentialGate:
    target: float = 0.95
    """The gate: success rate at least this."""
    margin: float = 0.03
    """Half-width of the indifference region around the target, in which either answer is acceptable."""
    alpha: float = 0.05
    """Bound on passing a policy whose success rate is at most target − margin."""
    beta: float = 0.05
    """Bound on failing a policy whose success rate is at least target + margin."""

    def __post_init__(self) -> None:
        if not 0.0 < self.target < 1.0:
            raise ValueError(f"target must be in (0, 1), got {self.target}")
        if not 0.0 < self.margin < self.target:
            raise ValueError(f"margin must be in (0, target), got {self.margin}")
        if not (0.0 < self.alpha < 0.5 and 0.0 < self.beta < 0.5):
            raise ValueError("alpha and beta must be in (0, 0.5)")

    @property
    def p0(self) -> float:
        return self.target - self.margin

    @property
    def p1(self) -> float:
        return min(self.target + self.margin, 1.0 - 1e-6)

    def log_likelihood_ratio(self, successes: int, failures: int) -> float:
        p0, p1 = self.p0, self.p1
        return successes * math.log(p1 / p0) + failures * math.log((1.0 - p1) / (1.0 - p0))

    def certain(self, successes: int, failures: int, episodes: int) -> Decision | None:
        """The evaluation's outcome when the episodes still running can no longer change it, else None. Exact, so
        valid in any order of finishing (in a batch, failures finish first)."""
        if successes + failures > episodes or min(successes, failures) < 0:
            raise ValueError(f"{successes} successes and {failures} failures of {episodes} episodes")
        if failures > math.floor((1.0 - self.target) * episodes + 1e-9):
            return "fail"
        if successes >= math.ceil(self.target * episodes - 1e-9):
            return "pass"
        if successes + failures == episodes:
            return "pass" if successes >= self.target * episodes else "fail"
        return None

    def decide(self, successes: int, failures: int, episodes: int) -> Decision | None:
        """`certain`, else the SPRT's decision (None: go on). The SPRT assumes the outcomes arrive in random
        order: count whole batches of finished episodes, never the episodes of a batch as they finish."""
        found = self.certain(successes, failures, episodes)
        if found is not None:
            return found
        llr = self.log_likelihood_ratio(successes, failures)
        if llr >= math.log((1.0 - self.beta) / self.alpha):
            return "pass"
        if llr <= math.log(self.beta / (1.0 - self.alpha)):
            return "fail"
        return None
