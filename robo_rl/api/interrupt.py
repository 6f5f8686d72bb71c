"""Ctrl-C or SIGTERM during `robo-rl train`: stop soon at a safe point, not wherever the signal lands.

A KeyboardInterrupt raised at an arbitrary point interrupts whatever runs (a metrics write, TensorBoard's event
queue, a replay chunk) before the checkpoint is saved. Once the run directory exists, the first SIGINT or SIGTERM
therefore only asks to stop: the runner checks `is_requested` before each iteration, and an on-policy rollout before
each of its steps, and ends there as at max_iterations (final checkpoint, learning curve, and the export that
`--export` asks for). A launcher (`ros2 launch`, `robo-rl launch`, systemd) sends SIGINT, then SIGTERM a few
seconds later, and SIGKILL after that: a SIGTERM after the first signal therefore changes nothing (the stop, and its
export, go on). A second Ctrl-C raises KeyboardInterrupt at once (the caller still saves the checkpoint), unless it
comes within `REPEAT_WINDOW_S` of the first: a terminal's Ctrl-C reaches every process of its foreground group, and a
launcher in that group that passes the signal on delivers the same Ctrl-C twice. During
set-up (building the simulator, waiting for a robot) a stop signal raises KeyboardInterrupt at once: there is nothing
to save yet. A process started with SIGINT ignored (an asynchronous command of a non-interactive shell) keeps
ignoring it, as Python's own handling does; SIGTERM is handled all the same.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from types import FrameType
from typing import Any

NOTICE = b"robo-rl train: stopping at the next safe point (Ctrl-C again to stop at once)\n"
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
REPEAT_WINDOW_S = 0.5
"""A stop signal this soon (s) after the first is the same request passed on by a launcher, not a second Ctrl-C."""


class IterationBoundaryInterrupt:
    """Installed by `stop_at_iteration_end`; `is_requested` is the runner's `stop_requested`.

    Attributes:
        immediate: while True (set-up: building the simulator, waiting for a robot), a stop signal raises
            KeyboardInterrupt at once: there is nothing to save yet, and a wait must not outlast the launcher.
        requested: a first stop signal arrived.
        signum: the number of the first stop signal (0 while none arrived; set in set-up mode too).
        previous: each handled signal's handler before this one, restored on exit.
    """

    def __init__(self, previous: dict[int, Any], immediate: bool = False) -> None:
        self.immediate = immediate
        self.requested = False
        self.signum = 0
        self.previous = previous
        self._first_at = 0.0

    def handle(self, signum: int, _frame: FrameType | None) -> None:
        if self.immediate:
            self.signum = signum
            raise KeyboardInterrupt
        if self.requested:
            if signum != signal.SIGINT or time.monotonic() - self._first_at < REPEAT_WINDOW_S:
                return  # a launcher's SIGTERM that follows its SIGINT, or the same Ctrl-C passed on: keep stopping
            self.restore()
            raise KeyboardInterrupt
        self.requested, self.signum, self._first_at = True, signum, time.monotonic()
        os.write(2, NOTICE)  # async-signal-safe, unlike print

    def is_requested(self) -> bool:
        return self.requested

    def restore(self) -> None:
        """Put back the handlers this one replaced."""
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def stop_at_iteration_end(immediate: bool = False) -> Iterator[IterationBoundaryInterrupt]:
    """SIGINT and SIGTERM handled as described above while the block runs (main thread only); the previous
    handlers after. An ignored SIGINT stays ignored. `immediate`: start in set-up mode (`immediate` attribute)."""
    handled = [s for s in STOP_SIGNALS if not (s == signal.SIGINT and signal.getsignal(s) is signal.SIG_IGN)]
    interrupt = IterationBoundaryInterrupt({signum: signal.getsignal(signum) for signum in handled}, immediate)
    for signum in handled:
        signal.signal(signum, interrupt.handle)
    try:
        yield interrupt
    finally:
        interrupt.restore()
