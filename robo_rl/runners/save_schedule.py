"""When a runner refreshes checkpoints/latest.pt: on its iteration cadence, and by the clock, so that a crash
(SIGKILL, power cut) costs at most `every_s` seconds of training."""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

from robo_rl.distributed import Reducer, rank0_decides


class SaveSchedule:
    """The clock side of the checkpoint cadence, shared by the on- and off-policy runners.

    A save is due once waiting one more iteration (as long as the last one) and then writing a checkpoint (as long
    as the last write) would leave more than `every_s` seconds of training unsaved; so the time between the moment
    a checkpoint's state is taken and the moment the next one is on disk stays within `every_s`.

    Args:
        every_s: most seconds of training a crash may cost; 0 saves by iterations only.
        reducer: under several processes, rank 0's clock decides for every rank, and rank 0 writes its file
            last, so that its latest.pt implies every rank's (what `robo-rl train --resume` relies on).
    """

    def __init__(self, every_s: float, reducer: Reducer) -> None:
        self.every_s = every_s
        self.reducer = reducer
        self.write_s = 0.0
        """Seconds the last checkpoint write took."""
        self.start()

    def start(self) -> None:
        """Training (re)starts now: nothing before this moment is at risk."""
        self._taken = time.monotonic()

    def due(self, iteration_s: float) -> bool:
        """Whether the clock asks for a save after an iteration that took `iteration_s` seconds.

        Collective under several processes: every rank calls it after every iteration.
        """
        unsaved_at_next_chance = time.monotonic() - self._taken + iteration_s + self.write_s
        due = 0 < self.every_s < unsaved_at_next_chance
        return rank0_decides(due, self.reducer, collective=True)

    def save(self, write: Callable[[], None], device: torch.device) -> None:
        """Run `write` (this rank's latest.pt), ranks > 0 before rank 0, and time it."""
        started = time.monotonic()
        world = self.reducer.world
        if not world.is_main:
            write()
        if world.size > 1:
            self.reducer.mean(torch.zeros(1, device=device))  # a barrier: every rank's file is on disk
        if world.is_main:
            write()
        self._taken, self.write_s = started, time.monotonic() - started
