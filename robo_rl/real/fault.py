"""Why a safe command went out instead of the policy's: a `Fault` is its text (what the status and the logs say)
with a `FaultKind` that decides the diagnostic level, so nothing picks a level by the text's prefix.

`Fault` is a `str` (its message) so that it reads, prints and compares as the text it always was; "" (`NO_FAULT`)
means the policy's own command went out."""

from __future__ import annotations

from enum import Enum, IntEnum
from typing import final


class Level(IntEnum):
    """diagnostic_msgs/DiagnosticStatus levels (OK 0, WARN 1, ERROR 2)."""

    OK = 0
    WARN = 1
    ERROR = 2


class FaultKind(Enum):
    """The kinds of safe command, each with the text it starts with and its diagnostic level."""

    STALE = ("stale observation", Level.WARN)
    MISSING_FIELDS = ("missing observation fields", Level.WARN)
    NON_FINITE = ("non-finite", Level.ERROR)
    ESTOP = ("e-stop", Level.ERROR)
    MISSED_DEADLINES = ("missed deadlines", Level.ERROR)
    NO_POSE = ("no measured pose", Level.WARN)
    CHUNK_SPENT = ("action chunk spent", Level.WARN)
    HOMING = ("going home", Level.WARN)
    VEHICLE = ("vehicle in control", Level.OK)
    """The vehicle's own controller holds it (`robo_rl.real.handover`): before a take-over request, or after a
    requested hand-back; a hand-back for a fault keeps that fault (its kind and level) while the vehicle holds."""
    STOPPED = ("stopped", Level.WARN)
    """Control stopped: the node deactivated or shut down, a robot episode resets or waits for the robot."""

    def __init__(self, text: str, level: Level) -> None:
        self.text = text
        self.level = level


@final
class Fault(str):
    """A safe command's reason: the message (this string) and its `kind`."""

    kind: FaultKind

    def __new__(cls, kind: FaultKind, detail: str = "", *, message: str | None = None) -> Fault:
        """`kind`'s text, then ": detail" when given; `message` replaces the whole text (a reason in its own
        words, e.g. "deactivated" of kind STOPPED)."""
        text = message if message is not None else (f"{kind.text}: {detail}" if detail else kind.text)
        fault = super().__new__(cls, text)
        fault.kind = kind
        return fault

    def with_detail(self, detail: str) -> Fault:
        """The same kind, with `detail` after the message."""
        return Fault(self.kind, message=f"{self}{detail}")


class InputError(ValueError):
    """A message the profile cannot read (e.g. a JointState without one of the profile's joints, published by
    another driver on the same topic): the node skips it instead of guessing; it feeds no watchdog."""


NO_FAULT = ""
"""The policy's own command went out."""


def fault_level(fault: str) -> Level:
    """OK without a fault; the kind's level for a `Fault`; WARN for any other text."""
    if not fault:
        return Level.OK
    return fault.kind.level if isinstance(fault, Fault) else Level.WARN
