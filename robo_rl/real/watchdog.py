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

    def feed(self) -> None:
        """An observation arrived now."""
        self.last_feed = self.clock()

    def age(self) -> float:
        """Seconds since the last observation (inf before the first)."""
        return self.clock() - self.last_feed

    def stale(self) -> bool:
        return self.age() > self.timeout
