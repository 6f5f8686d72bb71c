"""The rehearsal loop: a profile's policy node (`PolicyNodeCore`, the deploy core policy_node runs) against a
vehicle's stand-in (`Rig`) in stepped time, through the plan's requests and faults, measured."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Protocol

import numpy as np

from robo_rl.real.command import package_available
from robo_rl.real.controller import PolicyController
from robo_rl.real.handover import VehicleLink
from robo_rl.real.node_core import NodeSettings, PolicyNodeCore
from robo_rl.real.profile import RobotProfile
from robo_rl.real.runtime import PolicyRuntime
from robo_rl.sim.rehearsal.plan import Plan, Report, Transition

JUMP_PERIODS = 5
"""Periods after a transition over which the command's largest step is measured."""
JUMP_WINDOW = 1.0
"""Seconds after a transition over which the position and tilt excursions are measured."""


class Rig(Protocol):
    """A vehicle's stand-in: its simulator, its own controller and the rules its firmware or driver applies."""

    profile: RobotProfile

    @property
    def violations(self) -> list[str]:
        """Every command the vehicle's rules reject or alter, so far."""
        ...

    @property
    def link(self) -> VehicleLink | None:
        """The vehicle link the node drives (crazyswarm2's commander, PX4's modes); None: the setpoints only."""
        ...

    def inputs(self) -> dict[str, dict[str, float]]:
        """This period's message fields per profile input (the trigger input among them)."""
        ...

    def command(self, fields: dict[str, float], fault: str) -> None:
        """What the node publishes on the command topic."""
        ...

    def advance(self) -> None:
        """One control period of the vehicle: the last command or its own controller, then the physics."""
        ...

    def in_charge(self) -> str:
        """ "policy" while the node's commands drive the vehicle, "vehicle" while its own controller does."""
        ...

    def executed(self) -> np.ndarray:
        """The command the vehicle executed this period, in policy units."""
        ...

    def pose(self) -> tuple[np.ndarray, float]:
        """Position (m, `(3,)`) and tilt (rad) now."""
        ...

    def motors_off_in_the_air(self) -> bool:
        """The vehicle is airborne with no thrust (always False for ground vehicles)."""
        ...


@dataclass
class SteppedClock:
    now: float = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class _Tick:
    time: float
    who: str
    command: np.ndarray
    position: np.ndarray
    tilt: float


def rehearse(
    rig: Rig,
    policy: str,
    plan: Plan,
    settings: NodeSettings | None = None,
    available: Callable[[str], bool] = package_available,
) -> Report:
    """Run `plan` with the policy file `policy` on `rig`; the report of what happened."""
    profile = rig.profile
    clock = SteppedClock()
    controller = PolicyController(PolicyRuntime(policy, profile), profile, clock, available=available)
    statuses: list[tuple[int, str]] = []
    decoders = {spec.name: _fields for spec in profile.inputs if not spec.derive}
    trigger = next(iter(decoders))
    core = PolicyNodeCore(
        controller,
        settings or NodeSettings(),
        decoders,
        rig.command,
        lambda level, message: statuses.append((level, message)),
        now_monotonic=clock,
        now_ros_ns=lambda: round(clock.now * 1e9),
        vehicle=rig.link,
    )
    handover = profile.handover
    report = Report(profile.name, handover.ramp if handover else 0.0, profile.dt)
    ticks: list[_Tick] = []
    silent: dict[str, float] = {}
    fault_starts: list[float] = []
    core.activate()
    steps = round(plan.length / profile.dt)
    for k in range(steps):
        now = k * profile.dt
        clock.now = now
        for event in plan.due(now, now + profile.dt):
            if event.action == "fault":
                silent[event.input] = now + event.duration
                fault_starts.append(now)
                continue
            why = core.request(event.action)
            if why:
                report.refusals.append(f"{event.action} at {now:.2f} s: {why}")
        _feed(core, rig.inputs(), {name for name, until in silent.items() if until > now}, trigger)
        rig.advance()
        position, tilt = rig.pose()
        ticks.append(_Tick(now, rig.in_charge(), rig.executed().copy(), position.copy(), tilt))
        report.airborne_motor_off_periods += int(rig.motors_off_in_the_air())
    core.stop("rehearsal over")
    report.violations = list(rig.violations)
    report.transitions = _transitions(ticks, plan, fault_starts, profile)
    report.policy_periods = sum(tick.who == "policy" for tick in ticks)
    report.vehicle_periods = len(ticks) - report.policy_periods
    return report


def _fields(message: object) -> dict[str, float]:
    return dict(message.fields)  # type: ignore[attr-defined]


def _feed(core: PolicyNodeCore, inputs: Mapping[str, dict[str, float]], silent: set[str], trigger: str) -> None:
    """Every input's message but the silent ones, the trigger input last (it commands); the watchdog's period when
    the trigger input is silent."""
    for name, fields in inputs.items():
        if name != trigger and name not in silent:
            core.on_input(name, SimpleNamespace(fields=fields))
    if trigger in silent:
        core.on_watchdog()
    else:
        core.on_input(trigger, SimpleNamespace(fields=inputs[trigger]))


def _transitions(ticks: list[_Tick], plan: Plan, fault_starts: list[float], profile: RobotProfile) -> list[Transition]:
    found = []
    requests = [(e.time, e.action) for e in plan.events if e.action in ("policy", "vehicle")]
    for i in range(1, len(ticks)):
        before, tick = ticks[i - 1], ticks[i]
        if tick.who == before.who:
            continue
        cause = _cause(tick.time, tick.who, requests, fault_starts, profile)
        transition = Transition(tick.time, tick.who, cause)
        if cause == "fault":
            start = max(t for t in fault_starts if t <= tick.time + 1e-9)
            stale_at = start + profile.staleness_timeout
            transition.response_periods = max(0, math.ceil((tick.time - stale_at) / profile.dt - 1e-9))
        window = [t for t in ticks[i - 1 :] if t.time <= tick.time + JUMP_WINDOW]
        steps = [np.max(np.abs(b.command - a.command)) for a, b in itertools.pairwise(window[: JUMP_PERIODS + 1])]
        transition.command_jump = float(max(steps, default=0.0))
        transition.position_jump = float(max(np.linalg.norm(t.position - before.position) for t in window))
        transition.attitude_jump = float(max(abs(t.tilt - before.tilt) for t in window))
        found.append(transition)
    return found


def _cause(time: float, who: str, requests: list[tuple[float, str]], faults: list[float], profile: RobotProfile) -> str:
    """The plan's event a transition answers: the latest request or fault before it."""
    candidates = [(t, action) for t, action in requests if t <= time + 1e-9]
    if who == "vehicle":
        candidates += [(t, "fault") for t in faults if t <= time + 1e-9]
    if not candidates:
        return ""
    return max(candidates)[1]
