"""A robot profile's sections for learning on the robot: the workspace that ends an episode, tighter action bounds,
and how episodes end and the robot is reset (`robo_rl.real.safety_box`, `robo_rl.real.episode`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from robo_rl.real.profile.errors import require, require_unique
from robo_rl.real.profile.sources import FIELD_PATH, history_source

RESET_MODES = ("scripted", "human", "recovery")
"""How the robot gets back to a start state between episodes (see `EpisodeSettings.reset`)."""
SUCCESS_SOURCES = ("reward", "button", "classifier")
"""What decides an episode's success (see `EpisodeSettings.success`)."""


@dataclass(frozen=True)
class WorkspaceLimit:
    """A limit on observation sources while learning on the robot (`robo_rl.real.safety_box`): one source's value,
    or the Euclidean norm of several, must lie in [low, high]."""

    source: str = ""
    """The field limited (`track.lateral_offset`); give this or `norm`."""
    norm: tuple[str, ...] = ()
    """Fields whose Euclidean norm is limited (a distance from its x, y, z); give this or `source`."""
    low: float = -math.inf
    """Smallest value allowed (-inf: none)."""
    high: float = math.inf
    """Largest value allowed (inf: none)."""

    def __post_init__(self) -> None:
        require(bool(self.source) != bool(self.norm), "source", "give either source or norm")
        key = "source" if self.source else "norm"
        for source in self.sources:
            valid = bool(FIELD_PATH.match(source)) and history_source(source) is None
            require(valid, key, f"bad field {source!r}")
        require_unique(self.norm, "norm")
        require(not (math.isnan(self.low) or math.isnan(self.high)), "low", "bounds must not be nan")
        require(self.low <= self.high, "low", f"must be <= high, got low={self.low} high={self.high}")
        require(math.isfinite(self.low) or math.isfinite(self.high), "low", "give low, high or both")

    @property
    def sources(self) -> tuple[str, ...]:
        """The fields read."""
        return (self.source,) if self.source else self.norm

    @property
    def label(self) -> str:
        """The limited quantity as messages name it: the source, or `|a, b, c|` for a norm."""
        return self.source or f"|{', '.join(self.norm)}|"


@dataclass(frozen=True)
class ActionBound:
    """Tighter bounds on one action while learning on the robot (e.g. a car's top speed), in policy units."""

    action: str
    """Action name."""
    low: float
    """Lower bound, within the action's bounds and <= its safe value."""
    high: float
    """Upper bound, within the action's bounds and >= its safe value."""

    def __post_init__(self) -> None:
        require(math.isfinite(self.low) and math.isfinite(self.high), "low", "bounds must be finite")
        require(self.low <= self.high, "low", f"must be <= high, got low={self.low} high={self.high}")


@dataclass(frozen=True)
class ResetMove:
    """One segment of a scripted reset or a recovery: a command held for `steps` control periods."""

    steps: int
    """Control periods the command is sent for (>= 1)."""
    action: tuple[tuple[str, float], ...] = ()
    """Action name → value in policy units (YAML: a mapping); actions not named take their safe value."""

    def __post_init__(self) -> None:
        require(self.steps >= 1, "steps", f"must be >= 1, got {self.steps}")
        for name, value in self.action:
            require(math.isfinite(value), "action", f"{name}: must be finite, got {value}")


@dataclass(frozen=True)
class EpisodeSettings:
    """Episodes of learning on the robot (`robo_rl.real.episode`): their length and how the robot is reset."""

    reset: str = "human"
    """"scripted": `reset_actions` are sent (until `reset_done` holds, when given). "human": the safe command is
    sent until the operator presses reset. "recovery": `recovery_actions` are sent after a failure until the
    workspace holds again, at most `max_recoveries` times, then the operator resets."""
    max_steps: int = 0
    """Steps after which an episode is truncated (0: no limit)."""
    success: str = "reward"
    """What decides success: "reward" (the task's reward), "button" (the operator), "classifier" (a learned one)."""
    reset_actions: tuple[ResetMove, ...] = ()
    """The scripted reset's moves, in order (`reset: scripted` only)."""
    reset_done: tuple[WorkspaceLimit, ...] = ()
    """Limits that all hold when a scripted or recovery reset has reached the start state (e.g. joints within a
    tolerance of the home pose); empty: the script's end."""
    recovery_actions: tuple[ResetMove, ...] = ()
    """One recovery's moves, in order (`reset: recovery` only)."""
    max_recoveries: int = 3
    """Recoveries tried in a row before the operator is asked to reset."""
    prompt: str = "put the robot in its start state, then press reset"
    """What the operator is told when a reset needs them."""

    def __post_init__(self) -> None:
        require(self.reset in RESET_MODES, "reset", f"must be one of {RESET_MODES}, got {self.reset!r}")
        require(self.success in SUCCESS_SOURCES, "success", f"must be one of {SUCCESS_SOURCES}, got {self.success!r}")
        require(self.max_steps >= 0, "max_steps", f"must be >= 0, got {self.max_steps}")
        require(self.max_recoveries >= 1, "max_recoveries", f"must be >= 1, got {self.max_recoveries}")
        require(bool(self.prompt), "prompt", "must not be empty")
        scripted, recovery = self.reset == "scripted", self.reset == "recovery"
        require(bool(self.reset_actions) == scripted, "reset_actions", "needed by, and only by, reset: scripted")
        require(bool(self.recovery_actions) == recovery, "recovery_actions", "needed by, and only by, reset: recovery")
        require(not self.reset_done or self.reset != "human", "reset_done", "a human reset ends with the button")
