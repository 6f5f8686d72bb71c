"""Staleness of the observation stream, on an injectable clock."""

from __future__ import annotations

import math
import time
from collections.abc import Callable


class Watchdog:
    """Stale when no observation arrived for more than `timeout` seconds (or none arrived yet).

    The control loop asks `stale()` every period and sends the safe command when it is, so a stream that stops
    gets the safe command at the first tick after the timeout: within one control period of it.
    """

    def __init__(self, timeout: float, clock: Callable[[], float] = time.monotonic) -> None:
        if not timeout > 0:
            raise ValueError(f"timeout: must be > 0, got {timeout}")
        self.timeout = timeout
        self.clock = clock
        self.last_feed = -math.inf

    def feed(self, age: float = 0.0) -> None:
        """An observation arrived now, `age` s after it was taken (a camera frame's header stamp; 0: unknown or
        none): it counts as that much older, so a frame older than the timeout on arrival is stale at once."""
        self.last_feed = self.clock() - max(0.0, age)

    def age(self) -> float:
        """Seconds since the last observation (inf before the first)."""
        return self.clock() - self.last_feed

    def stale(self) -> bool:
        return self.age() > self.timeout
