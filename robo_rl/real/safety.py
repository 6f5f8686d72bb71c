"""The last stage before the actuators: non-finite guard, clipping, rate limits and a latched e-stop."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from robo_rl.real.fault import NO_FAULT, Fault, FaultKind
from robo_rl.real.profile import ActionLimit

ESTOP = Fault(FaultKind.ESTOP)


@dataclass(frozen=True)
class SafetyResult:
    """One filtered command and what the filter did to it."""

    command: np.ndarray
    """Command `(action_dim,)` in the policy's units, safe to send (unless `withheld`)."""
    fault: Fault | str
    """Why the safe command was sent instead of the policy's (`NO_FAULT`, "", when it was not): a `Fault`."""
    clipped: bool
    """Some element was outside its bounds and was clipped."""
    rate_limited: bool
    """Some element changed faster than its rate limit and was held back."""
    duration: float = 0.0
    """Seconds the move to `command` should take (a JointTrajectory point's time_from_start): one period for the
    policy's and the operator's commands, longer for a held pose or the move home so that no joint outruns its rate
    limit (`SafetyFilter.travel_time`); 0 from a filter without rate-limited holds (the caller's period)."""
    withheld: bool = False
    """Nothing may be sent: the safe command holds the measured pose and none has been measured yet. `command`
    is then the actions' nominal safe values, for the record only."""


class SafetyFilter:
    """Filters each action `(action_dim,)` into a command safe to send at period `dt` seconds.

    Non-finite actions or observations give the safe command (and a fault); otherwise the action is clipped
    to its bounds and each element moves at most `rate_limit × dt` from the previous command. `estop()` latches
    the safe command until `reset()`.

    The safe command is, with `hold_measured` False, each action's `safe` value, never rate limited, and the rate
    limits start from it. With `hold_measured` True (a position-commanded arm), it is the last pose given to
    `measure` (clipped to the bounds), taken when a run of safe commands begins and held until it ends, sent with
    a duration that keeps every joint within its rate limit; it is withheld (nothing sent) while no pose has been
    measured since `reset()`. The rate limits then start from the measured pose: at the first command after
    `reset()` or after a safe command. `home_command` moves to the actions' `safe` values (the home pose) over
    the time the farthest joint needs at its rate limit.

    `relative` marks actions that are steps from the measured pose (a profile's `relative_to` command fields, e.g.
    mujoco/peg_insert's joint-angle steps; hold_measured only): what the arm moves to is the absolute target,
    measured + step, so the filter works on targets there. `measure` then takes, for those elements, the measured
    value itself (the target of a zero step, not clipped: the bounds are the step's); the step is clipped to its
    bounds, the target it gives is rate limited against the previous target, and then clipped again to within the
    step's bounds of the measured pose (the step bounds win: they bound the arm's push, and a target nearer to
    where the arm is cannot make it move faster). A held pose is an absolute target, so a held command's step is
    the held value minus the newest measured one (it may lie outside the step's bounds; it is never the policy's).
    The home pose of a relative element is the measured value plus its `safe` step (a zero step: stay). Results
    carry steps (policy units); `target` turns them back into absolute targets.
    """

    def __init__(
        self,
        limits: Sequence[ActionLimit],
        dt: float,
        hold_measured: bool = False,
        relative: Sequence[bool] = (),
    ) -> None:
        if not dt > 0:
            raise ValueError(f"dt: must be > 0, got {dt}")
        self.dt = dt
        self.low = np.array([a.low for a in limits], dtype=np.float64)
        self.high = np.array([a.high for a in limits], dtype=np.float64)
        self.safe = np.array([a.safe for a in limits], dtype=np.float64)
        self.rate_limit = np.array([a.rate_limit for a in limits], dtype=np.float64)
        self.max_step = self.rate_limit * dt
        self.hold_measured = hold_measured
        self.relative = np.zeros(len(limits), dtype=bool) if not relative else np.asarray(relative, dtype=bool)
        if self.relative.shape != self.safe.shape:
            raise ValueError(f"relative: {len(self.relative)} flags for {len(self.safe)} actions")
        if self.relative.any() and not hold_measured:
            raise ValueError("relative actions (steps from the measured pose) need hold_measured")
        self.previous = self.safe.copy()
        self.estopped = False
        self.estop_reason = ESTOP
        self.fault_count = 0
        self.measured: np.ndarray | None = None
        """The last measured pose `(action_dim,)`, clipped to the bounds (hold_measured only)."""
        self.held: np.ndarray | None = None
        """The pose held by the current run of safe commands (hold_measured only)."""
        self.restart_from_measured = hold_measured
        """The next filtered command's rate limits start from the measured pose."""
        self.sent: np.ndarray | None = None
        """The last command this filter gave since `reset()` (hold_measured only: a held pose's duration is timed
        from it)."""

    def estop(self, reason: Fault = ESTOP) -> None:
        """Latch the safe command, with `reason` (of kind ESTOP) as its fault; only `reset()` clears it."""
        self.estopped = True
        self.estop_reason = reason

    def reset(self) -> None:
        """Clear the e-stop latch; rate limits restart from the safe command (hold_measured: from the next measured
        pose, the earlier ones forgotten)."""
        self.estopped = False
        self.previous = self.safe.copy()
        if self.hold_measured:
            self.measured = self.held = self.sent = None
            self.restart_from_measured = True

    def measure(self, pose: Sequence[float] | np.ndarray) -> None:
        """A complete measured pose `(action_dim,)` in policy units (hold_measured): what a safe command holds and
        where the rate limits restart."""
        values = np.asarray(pose, dtype=np.float64)
        if values.shape != self.safe.shape:
            raise ValueError(f"measured pose shape {values.shape}, expected {self.safe.shape}")
        if np.all(np.isfinite(values)):
            self.measured = np.where(self.relative, values, np.clip(values, self.low, self.high))

    def step_of(self, target: np.ndarray) -> np.ndarray:
        """The command in policy units for absolute targets `target`: the relative elements as steps from the
        measured pose (their target minus it), the others as they are."""
        if not self.relative.any():
            return np.asarray(target, dtype=np.float64).copy()
        assert self.measured is not None, "relative steps need a measured pose"
        return np.where(self.relative, target - self.measured, target)

    def target(self, command: np.ndarray) -> np.ndarray:
        """The absolute targets of a command in policy units (`step_of` undone)."""
        if not self.relative.any():
            return np.asarray(command, dtype=np.float64).copy()
        assert self.measured is not None, "relative steps need a measured pose"
        return np.where(self.relative, self.measured + command, command)

    def travel_time(self, start: np.ndarray | None, end: np.ndarray) -> float:
        """Seconds a move from `start` to `end` takes with every element at most at its rate limit: the largest
        |end_i - start_i| / rate_limit_i, at least one period `dt` (one period when `start` is None)."""
        if start is None:
            return self.dt
        seconds = np.abs(end - start) / self.rate_limit
        return max(self.dt, float(np.max(seconds)))

    def safe_command(self, fault: Fault) -> SafetyResult:
        """The safe command, sent because of `fault` (e.g. "stale observation")."""
        self.fault_count += 1
        if not self.hold_measured:
            self.previous = self.safe.copy()
            return SafetyResult(self.safe.copy(), fault, clipped=False, rate_limited=False)
        self.restart_from_measured = True
        if self.held is None and self.measured is not None:
            self.held = self.measured.copy()
        if self.held is None:
            return SafetyResult(self.safe.copy(), fault, clipped=False, rate_limited=False, withheld=True)
        return self._sent(self.held, fault, self.travel_time(self.sent, self.held))

    def home_command(self, reason: Fault) -> SafetyResult:
        """The move home (the actions' `safe` values), timed from the measured pose (`travel_time`), with `reason`
        as its fault; withheld while no pose has been measured, held as `safe_command` while e-stopped."""
        if self.estopped:
            return self.safe_command(self.estop_reason)
        if self.measured is None:
            return self.safe_command(reason.with_detail(": no measured pose yet"))
        self.held = None
        self.restart_from_measured = True
        home = self.target(self.safe)
        return self._sent(home, reason, self.travel_time(self.measured, home))

    def __call__(self, action: np.ndarray, observation: np.ndarray | None = None) -> SafetyResult:
        """Filter `action` `(action_dim,)`; a non-finite `observation` also gives the safe command."""
        action = np.asarray(action, dtype=np.float64)
        if action.shape != self.safe.shape:
            raise ValueError(f"action shape {action.shape}, expected {self.safe.shape}")
        if self.estopped:
            return self.safe_command(self.estop_reason)
        if not np.all(np.isfinite(action)):
            return self.safe_command(Fault(FaultKind.NON_FINITE, message="non-finite action"))
        if observation is not None and not np.all(np.isfinite(observation)):
            return self.safe_command(Fault(FaultKind.NON_FINITE, message="non-finite observation"))
        if self.restart_from_measured:
            if self.measured is None:
                return self.safe_command(
                    Fault(FaultKind.NO_POSE, message="no measured pose to start the rate limits from")
                )
            self.previous, self.held, self.restart_from_measured = self.measured.copy(), None, False
        clipped = np.clip(action, self.low, self.high)
        wanted = self.target(clipped)
        limited = np.clip(wanted, self.previous - self.max_step, self.previous + self.max_step)
        if self.relative.any():
            assert self.measured is not None
            within = np.clip(limited, self.measured + self.low, self.measured + self.high)  # the step bounds win
            limited = np.where(self.relative, within, limited)
        self.previous = limited
        if self.hold_measured:
            self.sent = limited.copy()
        command = self.step_of(limited)
        return SafetyResult(
            command,
            NO_FAULT,
            clipped=bool(np.any(clipped != action)),
            rate_limited=bool(np.any(limited != wanted)),
            duration=self.dt if self.hold_measured else 0.0,
        )

    def _sent(self, target: np.ndarray, fault: Fault, duration: float) -> SafetyResult:
        """A held pose or the move home, `target` absolute, as the command in policy units."""
        self.previous, self.sent = target.copy(), target.copy()
        return SafetyResult(self.step_of(target), fault, clipped=False, rate_limited=False, duration=duration)
