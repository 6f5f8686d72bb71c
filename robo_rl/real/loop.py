"""Fixed-rate control loop with missed-deadline counting and observation → command latency statistics."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from robo_rl.real.latency import LATENCY_WINDOW, LatencyStats


@dataclass(frozen=True)
class LoopStats:
    """What a control loop did so far; latencies in seconds (nan before the first one)."""

    ticks: int
    """Steps run."""
    missed_deadlines: int
    """Tick start times that passed while a step was still running (those ticks were skipped)."""
    latency_count: int
    """Steps that reported an observation → command latency."""
    latency_mean: float
    """Mean latency over all reported steps."""
    latency_max: float
    """Largest latency reported."""
    latency_p99: float
    """99th percentile over the last `LATENCY_WINDOW` reported latencies."""


class ControlLoop:
    """Calls `step` every `period` seconds on a fixed grid `start + k × period`.

    A step that runs past the next tick makes the loop skip the ticks that passed (each counted as a missed
    deadline) rather than run late ones back to back. `step` returns its observation → command latency in
    seconds, or None when it has none (e.g. no observation yet). `clock` and `sleep` are injectable for tests;
    by default they are the monotonic clock and `time.sleep`.
    """

    def __init__(
        self,
        period: float,
        step: Callable[[], float | None],
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not period > 0:
            raise ValueError(f"period: must be > 0, got {period}")
        self.period = period
        self.step = step
        self.clock = clock
        self.sleep = sleep
        self.ticks = 0
        self.missed_deadlines = 0
        self.latency = LatencyStats(LATENCY_WINDOW)

    def run(self, ticks: int | None = None, should_stop: Callable[[], bool] = lambda: False) -> LoopStats:
        """Run `ticks` steps (forever when None) or until `should_stop()` is true before a tick."""
        deadline = self.clock()
        done = 0
        while (ticks is None or done < ticks) and not should_stop():
            self._wait_until(deadline)
            self._record(self.step())
            self.ticks += 1
            done += 1
            deadline = self._next_deadline(deadline + self.period)
        return self.stats()

    def _wait_until(self, deadline: float) -> None:
        remaining = deadline - self.clock()
        if remaining > 0:
            self.sleep(remaining)

    def _next_deadline(self, deadline: float) -> float:
        late = self.clock() - deadline
        if late <= 0:
            return deadline
        skipped = math.ceil(late / self.period)
        self.missed_deadlines += skipped
        return deadline + skipped * self.period

    def _record(self, latency: float | None) -> None:
        if latency is not None:
            self.latency.record(latency)

    def stats(self) -> LoopStats:
        return LoopStats(
            ticks=self.ticks,
            missed_deadlines=self.missed_deadlines,
            latency_count=self.latency.count,
            latency_mean=self.latency.mean,
            latency_max=self.latency.maximum(),
            latency_p99=self.latency.percentile(99),
        )
