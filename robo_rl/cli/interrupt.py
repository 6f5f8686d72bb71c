"""Ctrl-C during `robo-rl train`: stop at the end of the current iteration, not wherever the signal lands.

A KeyboardInterrupt raised at an arbitrary point can leave a lock held (TensorBoard's event queue, a logging
handler) and hang the checkpoint save that follows; one run in a loaded test suite hung like that for over 60 s.
The first Ctrl-C therefore only asks to stop: the runner's per-iteration callback raises StopRequested once the
iteration's metrics are written, which is a point where the checkpoint matches the log. A second Ctrl-C raises
KeyboardInterrupt at once, as before.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from types import FrameType
from typing import Any

NOTICE = b"robo-rl train: stopping after this iteration (Ctrl-C again to stop at once)\n"


class StopRequested(Exception):
    """Ctrl-C was pressed; raised between two iterations."""


class IterationBoundaryInterrupt:
    """Installed by `stop_at_iteration_end`; `check` is the runner's per-iteration callback."""

    def __init__(self, previous: Any) -> None:
        self.requested = False
        self.previous = previous

    def handle(self, _signum: int, _frame: FrameType | None) -> None:
        if self.requested:
            signal.signal(signal.SIGINT, self.previous)
            raise KeyboardInterrupt
        self.requested = True
        os.write(2, NOTICE)  # async-signal-safe, unlike print

    def check(self, _metrics: dict[str, Any] | None = None) -> None:
        """StopRequested once Ctrl-C was pressed."""
        if self.requested:
            raise StopRequested


@contextlib.contextmanager
def stop_at_iteration_end() -> Iterator[IterationBoundaryInterrupt]:
    """SIGINT handled as described above while the block runs (main thread only); the previous handler after."""
    interrupt = IterationBoundaryInterrupt(signal.getsignal(signal.SIGINT))
    signal.signal(signal.SIGINT, interrupt.handle)
    try:
        yield interrupt
    finally:
        signal.signal(signal.SIGINT, interrupt.previous)
