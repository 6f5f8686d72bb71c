"""The Crazyflie firmware's commander without the firmware: which setpoint the stabilizer executes, tick by tick.

A stand-in for the vehicle side of the crazyswarm2 hand-over (robo_rl.real.crazyflie_link): it restates, in plain
Python and in our own words, the rules of bitcraze/crazyflie-firmware at tag 2026.08-2-g2a18fc29 (commit
2a18fc299d7b48cf094d26c38a79f33dec64b5d7) that decide whether the motors run:

- the legacy RPYT packet's thrust lock (src/modules/src/crtp_commander_rpyt.c, `crtpCommanderRpytDecodeSetpoint`);
- the setpoint priorities and their relaxation (src/modules/src/commander.c, src/modules/interface/commander.h,
  src/modules/src/crtp_commander.c's notifySetpointsStop decoder);
- the high-level commander's planner states and commands (src/modules/src/crtp_commander_high_level.c,
  src/modules/src/planner.c) and the stabilizer offering its setpoint every tick (src/modules/src/stabilizer.c);
- the supervisor's setpoint watchdog (src/modules/src/supervisor.c).

Simplifications, none of which decides thrust or who is in charge: a plan's position follows a 7th-order
smoothstep from its start to its goal (the firmware's 7th-order polynomial also matches the start velocity and
acceleration); group masks, trajectories, spirals, take-off/land with velocity and yaw are left out; the
high-level commander runs at every tick; the supervisor's states are reduced to its two setpoint-age levels.
Time is the caller's (seconds), so tests step it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum

PRIORITY_DISABLE = 0
PRIORITY_HIGHLEVEL = 1
PRIORITY_LOWEST = 1
PRIORITY_CRTP = 2
"""commander.h: a setpoint is accepted only at a priority at least the active one; boot starts at DISABLE, the
high-level commander offers its setpoints at HIGHLEVEL (= LOWEST), radio setpoints (CRTP) come at CRTP."""
MIN_THRUST = 1000
MAX_THRUST = 60000
"""crtp_commander_rpyt.c: a legacy thrust below MIN_THRUST gives 0, one above MAX_THRUST is capped."""
WDT_LEVEL_OUT = 0.5
WDT_SHUTDOWN = 2.0
"""supervisor.c (COMMANDER_WDT_TIMEOUT_STABILIZE, _SHUTDOWN): a setpoint older than 0.5 s levels the vehicle out
(keeping its thrust), one older than 2 s stops the motors."""


class PlanState(str, Enum):
    """planner.c's TRAJECTORY_STATE_*: IDLE is the "stopped" plan (plan_is_stopped)."""

    DISABLED = "disabled"
    IDLE = "idle"
    FLYING = "flying"
    LANDING = "landing"


class Source(str, Enum):
    """Who made the setpoint the stabilizer executes."""

    NONE = "none"
    CRTP = "crtp"
    HIGHLEVEL = "highlevel"


@dataclass(frozen=True)
class VehicleState:
    """The estimator's state the commander reads: world position (m), velocity (m/s), yaw (rad)."""

    position: tuple[float, float, float] = (0.0, 0.0, 0.0)
    velocity: tuple[float, float, float] = (0.0, 0.0, 0.0)
    yaw: float = 0.0


@dataclass(frozen=True)
class Setpoint:
    """One entry of the commander's setpoint queue (setpoint_t, reduced)."""

    source: Source
    timestamp: float
    """When the commander accepted it (s)."""
    thrust: float = 0.0
    """A legacy packet's thrust after the lock (0: motors off)."""
    rates: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """A legacy packet's roll, pitch, yaw rate (deg/s, the packet's values)."""
    position: tuple[float, float, float] | None = None
    """A high-level setpoint's position target (m); None for the null setpoint (motors off)."""
    yaw: float = 0.0
    """A high-level setpoint's yaw (rad)."""

    @property
    def motors_off(self) -> bool:
        """The null setpoint, or a legacy packet with thrust 0."""
        if self.source is Source.HIGHLEVEL:
            return self.position is None
        return self.source is Source.NONE or self.thrust == 0.0


@dataclass(frozen=True)
class ActiveSetpoint:
    """What the stabilizer executes at one tick."""

    setpoint: Setpoint
    age: float
    """Seconds since the commander accepted it."""
    priority: int
    """The commander's active priority after this tick."""
    plan: PlanState

    @property
    def source(self) -> Source:
        return self.setpoint.source

    @property
    def level_out(self) -> bool:
        """supervisor.c: the setpoint is older than 0.5 s: roll and pitch forced level, thrust kept."""
        return self.age > WDT_LEVEL_OUT

    @property
    def motors_off(self) -> bool:
        """No thrust: the setpoint says so, or the supervisor's 2 s watchdog stopped the motors."""
        return self.setpoint.motors_off or self.age > WDT_SHUTDOWN


@dataclass
class Plan:
    """The high-level commander's planner (planner.c) with its last setpoint (`pos`, `yaw`: its "last setpoint"
    variables in crtp_commander_high_level.c, from which take-off, land and go_to plan)."""

    state: PlanState = PlanState.IDLE
    start: tuple[float, float, float] = (0.0, 0.0, 0.0)
    goal: tuple[float, float, float] = (0.0, 0.0, 0.0)
    yaw_start: float = 0.0
    yaw_goal: float = 0.0
    begin: float = 0.0
    duration: float = 0.0
    pos: tuple[float, float, float] = (0.0, 0.0, 0.0)
    yaw: float = 0.0

    def plan(self, state: PlanState, goal: tuple[float, float, float], yaw: float, duration: float, now: float) -> None:
        """A new piece from the last setpoint to `goal` (planner.c's plan_takeoff_or_landing, plan_go_to_from)."""
        self.state = state
        self.start, self.yaw_start = self.pos, self.yaw
        self.goal, self.yaw_goal = goal, yaw
        self.begin, self.duration = now, max(duration, 1e-6)

    def eval(self, now: float) -> tuple[tuple[float, float, float], float]:
        """Position and yaw of the piece at `now` (held at its goal after its end)."""
        s = min(max((now - self.begin) / self.duration, 0.0), 1.0)
        blend = s**4 * (35 - 84 * s + 70 * s**2 - 20 * s**3)  # 7th-order smoothstep: zero vel/acc/jerk at the ends
        position = tuple(a + blend * (b - a) for a, b in zip(self.start, self.goal, strict=True))
        return (position[0], position[1], position[2]), self.yaw_start + blend * (self.yaw_goal - self.yaw_start)


@dataclass
class CrazyflieCommander:
    """The commander, the high-level planner and the supervisor's watchdog of one Crazyflie, from boot.

    Radio traffic: `packet_rpyt` (crazyswarm2's cmd_vel_legacy), `notify_setpoints_stop`, `takeoff`, `land`,
    `go_to`, `stop`. The stabilizer: `setpoint(now, state)` once per tick, which returns what it executes.
    """

    can_fly: bool = True
    """supervisor.c's supervisorCanFly (armed, not crashed); while False the high-level commander offers nothing."""
    thrust_locked: bool = True
    """crtp_commander_rpyt.c: `thrustLocked` starts true at boot."""
    priority: int = PRIORITY_DISABLE
    """commander.c's priority queue: DISABLE at boot (commanderInit)."""
    queued: Setpoint = field(default_factory=lambda: Setpoint(Source.NONE, 0.0))
    """commander.c's setpoint queue: the null setpoint at boot."""
    hl: Plan = field(default_factory=Plan)
    """planner.c's plan_init: IDLE (stopped)."""
    last_state: VehicleState = field(default_factory=VehicleState)
    """The state of the last tick (commander.c's `lastState`, kept by commanderGetSetpoint)."""
    log: list[str] = field(default_factory=list)
    """Every radio command received, in order (for tests to read)."""

    # ------------------------------------------------------------------------------------------------ radio

    def packet_rpyt(self, roll: float, pitch: float, yawrate: float, thrust: int, now: float) -> Setpoint:
        """A legacy RPYT setpoint packet (CRTP port 3 channel 0), decoded as crtp_commander_rpyt.c's
        crtpCommanderRpytDecodeSetpoint does and offered at priority CRTP (crtp_commander.c's commanderCrtpCB).

        The lock is set again whenever the active priority is DISABLE, and released by a packet whose thrust is
        exactly 0; while it is set, or below MIN_THRUST, the thrust is 0, else min(thrust, MAX_THRUST)."""
        if not (isinstance(thrust, int) and 0 <= thrust <= 0xFFFF):
            raise ValueError(f"thrust: a legacy packet carries a uint16, got {thrust!r}")
        self.log.append(f"rpyt thrust={thrust}")
        if self.priority == PRIORITY_DISABLE:
            self.thrust_locked = True
        if thrust == 0:
            self.thrust_locked = False
        value = 0.0 if self.thrust_locked or thrust < MIN_THRUST else float(min(thrust, MAX_THRUST))
        setpoint = Setpoint(Source.CRTP, now, thrust=value, rates=(roll, pitch, yawrate))
        self._offer(setpoint, PRIORITY_CRTP)
        return setpoint

    def notify_setpoints_stop(self, now: float) -> None:
        """crtp_commander.c's notifySetpointsStopDecoder → commander.c's commanderRelaxPriority: the high-level
        commander is told the last state (crtpCommanderHighLevelTellState) and the priority drops to LOWEST,
        so its next setpoint (HIGHLEVEL) is accepted. The packet's remain-valid time is ignored by the firmware."""
        self.log.append("notify_setpoints_stop")
        self.hl.pos, self.hl.yaw = self.last_state.position, self.last_state.yaw
        self.priority = PRIORITY_LOWEST

    def takeoff(self, height: float, duration: float, now: float) -> bool:
        """crtp_commander_high_level.c's takeoff → planner.c's plan_takeoff: only a stopped (IDLE) plan takes off,
        from its last setpoint to `height` at the same x, y; True when accepted."""
        self.log.append(f"takeoff height={height:g} duration={duration:g}")
        if self.hl.state is not PlanState.IDLE:
            return False
        x, y, _ = self.hl.pos
        self.hl.plan(PlanState.FLYING, (x, y, height), self.hl.yaw, duration, now)
        return True

    def land(self, height: float, duration: float, now: float) -> bool:
        """planner.c's plan_land: refused only while already landing; the plan lands from its last setpoint and
        becomes IDLE (motors off) once the piece ends (plan_current_goal)."""
        self.log.append(f"land height={height:g} duration={duration:g}")
        if self.hl.state is PlanState.LANDING:
            return False
        x, y, _ = self.hl.pos
        self.hl.plan(PlanState.LANDING, (x, y, height), self.hl.yaw, duration, now)
        return True

    def go_to(
        self, x: float, y: float, z: float, yaw: float, duration: float, now: float, relative: bool = False
    ) -> bool:
        """crtp_commander_high_level.c's go_to (~line 641) → planner.c's plan_go_to_from: accepted in every plan
        state; from a stopped or disabled plan it starts at the last setpoint, which a stopped plan keeps equal
        to the current state (crtpCommanderHighLevelGetSetpoint); `relative` adds the start position and yaw."""
        self.log.append(f"go_to ({x:g}, {y:g}, {z:g}) yaw={yaw:g} relative={relative}")
        if self.hl.state not in (PlanState.DISABLED, PlanState.IDLE):
            self.hl.pos, self.hl.yaw = self.hl.eval(now)
        goal = (x, y, z)
        if relative:
            goal = (x + self.hl.pos[0], y + self.hl.pos[1], z + self.hl.pos[2])
            yaw += self.hl.yaw
        self.hl.plan(PlanState.FLYING, goal, yaw, duration, now)
        return True

    def stop(self) -> None:
        """crtpCommanderHighLevelStop → planner.c's plan_stop: the plan becomes IDLE (stopped)."""
        self.hl.state = PlanState.IDLE

    # ----------------------------------------------------------------------------------------------- stabilizer

    def setpoint(self, now: float, state: VehicleState) -> ActiveSetpoint:
        """One stabilizer tick (stabilizer.c ~line 334): the high-level commander's setpoint, when it gives one,
        is offered at priority HIGHLEVEL; then the queued setpoint is what the controller executes."""
        offered = self._highlevel_setpoint(now, state) if self.can_fly else None
        if offered is not None:
            self._offer(offered, PRIORITY_HIGHLEVEL)
        self.last_state = state
        return ActiveSetpoint(self.queued, now - self.queued.timestamp, self.priority, self.hl.state)

    def _highlevel_setpoint(self, now: float, state: VehicleState) -> Setpoint | None:
        """crtp_commander_high_level.c's crtpCommanderHighLevelGetSetpoint (~lines 353-372): a disabled or stopped
        plan copies the state into its last setpoint; a stopped one gives the null setpoint (motors off), a
        disabled one none; a flying or landing plan gives its position (a landing one stops at its end)."""
        hl = self.hl
        if hl.state is PlanState.LANDING and now >= hl.begin + hl.duration:
            hl.state = PlanState.IDLE  # planner.c's plan_current_goal: a finished landing stops the plan
        if hl.state in (PlanState.DISABLED, PlanState.IDLE):
            hl.pos, hl.yaw = state.position, state.yaw
            return Setpoint(Source.HIGHLEVEL, now) if hl.state is PlanState.IDLE else None
        hl.pos, hl.yaw = hl.eval(now)
        return Setpoint(Source.HIGHLEVEL, now, position=hl.pos, yaw=hl.yaw)

    def _offer(self, setpoint: Setpoint, priority: int) -> None:
        """commander.c's commanderSetSetpoint: accepted when `priority` is at least the active one; one above
        HIGHLEVEL stops the high-level planner (it forgets its plan)."""
        if priority < self.priority:
            return
        self.queued = setpoint
        self.priority = priority
        if priority > PRIORITY_HIGHLEVEL:
            self.stop()


def legacy_packet(twist: dict[str, float]) -> tuple[float, float, float, int]:
    """crazyswarm2's C++ server on cmd_vel_legacy (IMRCLab/crazyswarm2 f6154e2, crazyflie/src/crazyflie_server.cpp,
    cmd_vel_legacy_changed): roll = linear.y, pitch = -linear.x, yaw rate = angular.z, thrust = linear.z clamped to
    [0, 60000] and cast to uint16 (a fraction below 1 becomes 0)."""
    if not math.isfinite(twist.get("linear.z", 0.0)):
        raise ValueError("linear.z: not finite")
    thrust = int(min(max(twist.get("linear.z", 0.0), 0.0), float(MAX_THRUST)))
    return twist.get("linear.y", 0.0), -twist.get("linear.x", 0.0), twist.get("angular.z", 0.0), thrust
