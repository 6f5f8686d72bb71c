"""What a rehearsal does and what it measured: a timed plan of the operator's requests and injected faults, and
the report of a run (`robo_rl.sim.rehearsal`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Event:
    """At `time` s: a request (`policy`, `vehicle`, or a vehicle link's own: `takeoff`, `land`) or a fault: `fault`
    silences the input `input` for `duration` s (the node's watchdog must hand back within one period)."""

    time: float
    action: str
    duration: float = 0.0
    input: str = ""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.time) and self.time >= 0):
            raise ValueError(f"event time must be finite and >= 0 s, got {self.time}")
        if self.action == "fault" and not self.duration > 0:
            raise ValueError("a fault event needs a duration > 0 s")


@dataclass(frozen=True)
class Plan:
    """A rehearsal: its events in time order and its length (s)."""

    events: tuple[Event, ...]
    length: float

    def due(self, start: float, end: float) -> list[Event]:
        """The events at times in [start, end)."""
        return [event for event in self.events if start - 1e-9 <= event.time < end - 1e-9]


def standard_plan(takeoff: bool, faulted_input: str, settle: float = 4.0, fly: float = 3.0) -> Plan:
    """The standard rehearsal: the vehicle's controller takes off (when it flies) and holds; the policy takes
    over; a fault (the `faulted_input` silent for 0.3 s) hands back; the vehicle holds; the policy takes over again;
    a requested hand-back; the vehicle lands (when it flies)."""
    events = [Event(0.2, "takeoff")] if takeoff else []  # after the first odometry
    t = settle
    events.append(Event(t, "policy"))
    t += fly
    events.append(Event(t, "fault", duration=0.3, input=faulted_input))
    t += 1.5
    events.append(Event(t, "policy"))
    t += fly
    events.append(Event(t, "vehicle"))
    t += 1.5
    if takeoff:
        events.append(Event(t, "land"))
        t += 3.0
    return Plan(tuple(events), t + 0.5)


@dataclass
class Transition:
    """One change of who controls the vehicle, as the vehicle saw it."""

    time: float
    to: str
    """"policy" or "vehicle"."""
    cause: str
    """The plan's event that caused it ("policy", "vehicle", "fault") or "" (e.g. the ramp's end)."""
    response_periods: int = -1
    """For a fault: control periods from the input falling silent (its staleness timeout) to the vehicle's
    controller in charge; -1 otherwise."""
    command_jump: float = 0.0
    """Largest change of the executed command between two periods in the 5 periods after the transition, in
    policy units (a fraction of each action's range)."""
    position_jump: float = 0.0
    """Largest distance (m) from where the vehicle was at the transition, in the 1 s after it."""
    attitude_jump: float = 0.0
    """Largest tilt change (rad) from the transition's, in the 1 s after it (quadrotors; 0 otherwise)."""


@dataclass
class Report:
    """What a rehearsal measured."""

    vehicle: str
    ramp: float
    dt: float
    violations: list[str] = field(default_factory=list)
    """Every command the vehicle's own rules reject or alter (thrust lock, servo or ESC limits, stamps)."""
    transitions: list[Transition] = field(default_factory=list)
    airborne_motor_off_periods: int = 0
    """Periods in the air with the motors off (quadrotors): must be 0."""
    refusals: list[str] = field(default_factory=list)
    """Requests the node refused (with why)."""
    policy_periods: int = 0
    vehicle_periods: int = 0

    @property
    def ramp_bound(self) -> float:
        """The largest first step of a take-over the ramp allows, as a fraction of the distance between the hold
        command and the policy's: dt / ramp (1 without a ramp)."""
        return min(1.0, self.dt / self.ramp) if self.ramp > 0 else 1.0

    def summary(self) -> dict[str, object]:
        faults = [t.response_periods for t in self.transitions if t.response_periods >= 0]
        return {
            "vehicle": self.vehicle,
            "violations": len(self.violations),
            "first_violations": self.violations[:3],
            "transitions": len(self.transitions),
            "fault_response_periods_max": max(faults) if faults else None,
            "airborne_motor_off_periods": self.airborne_motor_off_periods,
            "max_command_jump": max((t.command_jump for t in self.transitions), default=0.0),
            "max_position_jump_m": max((t.position_jump for t in self.transitions), default=0.0),
            "max_attitude_jump_rad": max((t.attitude_jump for t in self.transitions), default=0.0),
            "ramp_bound": self.ramp_bound,
            "refusals": self.refusals,
            "policy_periods": self.policy_periods,
            "vehicle_periods": self.vehicle_periods,
        }
