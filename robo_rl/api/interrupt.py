"""Ctrl-C during `robo-rl train`: stop at the end of the current iteration, not wherever the signal lands.

A KeyboardInterrupt raised at an arbitrary point interrupts whatever runs (a metrics write, TensorBoard's event
queue, a replay chunk) before the checkpoint is saved. The first Ctrl-C therefore only asks to stop: the runner
checks `is_requested` before each iteration and ends there as at max_iterations (final checkpoint and learning
curve). A second Ctrl-C raises KeyboardInterrupt at once. A process started with SIGINT ignored (an
asynchronous command of a non-interactive shell) keeps ignoring it, as Python's own handling does.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from types import FrameType
from typing import Any

NOTICE = b"robo-rl train: stopping after this iteration (Ctrl-C again to stop at once)\n"


class IterationBoundaryInterrupt:
    """Installed by `stop_at_iteration_end`; `is_requested` is the runner's `stop_requested`."""

    def __init__(self, previous: Any) -> None:
        self.requested = False
        self.previous = previous

    def handle(self, _signum: int, _frame: FrameType | None) -> None:
        if self.requested:
            signal.signal(signal.SIGINT, self.previous)
            raise KeyboardInterrupt
        self.requested = True
        os.write(2, NOTICE)  # async-signal-safe, unlike print

    def is_requested(self) -> bool:
        return self.requested


@contextlib.contextmanager
def stop_at_iteration_end() -> Iterator[IterationBoundaryInterrupt]:
    """SIGINT handled as described above while the block runs (main thread only); the previous handler after."""
    interrupt = IterationBoundaryInterrupt(signal.getsignal(signal.SIGINT))
    if interrupt.previous is signal.SIG_IGN:  # whoever started us asked for SIGINT to be ignored
        yield interrupt
        return
    signal.signal(signal.SIGINT, interrupt.handle)
    try:
        yield interrupt
    finally:
        signal.signal(signal.SIGINT, interrupt.previous)
