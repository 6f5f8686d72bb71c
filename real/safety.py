"""The last stage before the actuators: non-finite guard, clipping, rate limits and a latched e-stop."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from robo_rl.real.profile import ActionLimit


@dataclass(frozen=True)
class SafetyResult:
    """One filtered command and what the filter did to it."""

    command: np.ndarray
    """Command `(action_dim,)` in the policy's units, safe to send."""
    fault: str
    """Why the safe command was sent instead of the policy's ("" when it was not): non-finite, e-stop, stale."""
    clipped: bool
    """Some element was outside its bounds and was clipped."""
    rate_limited: bool
    """Some element changed faster than its rate limit and was held back."""


class SafetyFilter:
    """Filters each action `(action_dim,)` into a command safe to send at period `dt` seconds.

    Non-finite actions or observations give the safe command (and a fault); otherwise the action is clipped
    to its bounds and each element moves at most `rate_limit × dt` from the previous command, which starts at
    the safe command. The safe command itself is never rate limited. `estop()` latches the safe command until
    `reset()`.
    """

    def __init__(self, limits: Sequence[ActionLimit], dt: float) -> None:
        if not dt > 0:
            raise ValueError(f"dt: must be > 0, got {dt}")
        self.low = np.array([a.low for a in limits], dtype=np.float64)
        self.high = np.array([a.high for a in limits], dtype=np.float64)
        self.safe = np.array([a.safe for a in limits], dtype=np.float64)
        self.max_step = np.array([a.rate_limit for a in limits], dtype=np.float64) * dt
        self.previous = self.safe.copy()
        self.estopped = False
        self.estop_reason = "e-stop"
        self.fault_count = 0

    def estop(self, reason: str = "e-stop") -> None:
        """Latch the safe command, with `reason` (starting "e-stop") as its fault; only `reset()` clears it."""
        self.estopped = True
        self.estop_reason = reason

    def reset(self) -> None:
        """Clear the e-stop latch; rate limits restart from the safe command."""
        self.estopped = False
        self.previous = self.safe.copy()

    def safe_command(self, fault: str) -> SafetyResult:
        """The safe command, sent because of `fault` (e.g. "stale observation")."""
        self.fault_count += 1
        self.previous = self.safe.copy()
        return SafetyResult(self.safe.copy(), fault, clipped=False, rate_limited=False)

    def __call__(self, action: np.ndarray, observation: np.ndarray | None = None) -> SafetyResult:
        """Filter `action` `(action_dim,)`; a non-finite `observation` also gives the safe command."""
        action = np.asarray(action, dtype=np.float64)
        if action.shape != self.safe.shape:
            raise ValueError(f"action shape {action.shape}, expected {self.safe.shape}")
        if self.estopped:
            return self.safe_command(self.estop_reason)
        if not np.all(np.isfinite(action)):
            return self.safe_command("non-finite action")
        if observation is not None and not np.all(np.isfinite(observation)):
            return self.safe_command("non-finite observation")
        clipped = np.clip(action, self.low, self.high)
        limited = np.clip(clipped, self.previous - self.max_step, self.previous + self.max_step)
        self.previous = limited
        return SafetyResult(
            limited.copy(), "", clipped=bool(np.any(clipped != action)), rate_limited=bool(np.any(limited != clipped))
        )
