"""PX4's stand-in (`SimulatedPx4`; sim_bridge's in vehicle mode too) and its rehearsal rig (`Px4Rig`).

PX4's commander (`robo_rl.sim.rehearsal.px4_commander`: offboard only while the heartbeat is fresh, DO_SET_MODE
answered, Hold without sticks, the offboard-loss failsafe) flies the simulated X500 (`QuadrotorWorld` with the
profile's frame). The rig wires the node to it as policy_node's Px4Output does: the setpoints through the fault
hold, the OffboardControlMode heartbeat every 10th period with the offboard link's requests, the hand-back's mode
switch (`robo_rl.real.px4_link.Px4Vehicle`), acks one commander cycle later, VehicleStatus's nav_state every period.

PX4 takes off by itself (its take-off mode: the vehicle's own controller climbing to the hover point over
`takeoff_s`, then Hold) before the rehearsal's plan asks anything. In offboard it executes the last rates setpoint
it received (collective thrust and body rates back to the policy's actions through the profile's command map);
in Hold, Position mode or after the offboard-loss failsafe its own position controller holds where the mode began.

A rule of the vehicle is broken by a mode command PX4 rejects, a setpoint PX4 executes with the offboard signal
lost, and the offboard-loss failsafe acting (the node let its heartbeat stop while PX4 flew our setpoints)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from robo_rl.real import px4, px4_link
from robo_rl.real.command import command_actions, select_command
from robo_rl.real.derive import px4_odometry
from robo_rl.real.handover import VehicleLink
from robo_rl.real.profile import Px4Settings, RobotProfile
from robo_rl.sim.rehearsal.px4_commander import ACCEPTED, NAV_AUTO_TAKEOFF, Commander
from robo_rl.sim.rehearsal.quadrotor import QuadrotorWorld

HEARTBEAT_PERIODS = 10
"""The heartbeat's period in control periods (10 Hz at 100 Hz)."""


class SimulatedPx4:
    """PX4 flying the simulated vehicle (the module docstring): `receive` each rates setpoint, `heartbeat` each
    OffboardControlMode, `command` each VehicleCommand, then `step(now)` once per period: PX4's take-off, one commander
    cycle (its answers returned as (command, result)), one period of flight."""

    def __init__(
        self,
        profile: RobotProfile,
        target: Sequence[float],
        params: Sequence[str] = (),
        seed: int = 0,
        takeoff_s: float = 3.0,
        commander: Commander | None = None,
    ) -> None:
        self.profile = profile
        self.world = QuadrotorWorld(profile, target, params, seed)
        self.commander = commander or Commander(nav_state=NAV_AUTO_TAKEOFF)
        self.spec = select_command(profile, available=lambda _: False)
        self.target = np.asarray(target, dtype=np.float64)
        self.takeoff_s = takeoff_s
        self.violations: list[str] = []
        self.setpoint: dict[str, float] = {}
        self.fresh = False
        self.hold_at = self.target.copy()
        self.last_mode = self.commander.nav_state
        self.executed = np.zeros(4)
        self.thrust_off = False

    def receive(self, fields: dict[str, float], now: float) -> None:
        self.commander.setpoint(now, fields)
        self.setpoint, self.fresh = dict(fields), True

    def heartbeat(self, now: float, flags: dict[str, bool]) -> None:
        self.commander.heartbeat(now, flags)

    def command(self, fields: dict[str, Any], now: float) -> None:
        self.commander.command(now, fields)

    @property
    def offboard(self) -> bool:
        return self.commander.nav_state == px4.NAVIGATION_STATE_OFFBOARD

    def step(self, now: float) -> list[tuple[int, int]]:
        """One period: PX4's take-off, a commander cycle (its answers), the flight."""
        self._take_off(now)
        offboard = self.offboard
        answers = self.commander.step(now)
        for command, result in answers:
            if result != ACCEPTED:
                self.violations.append(f"{now:.2f} s: PX4 rejected command {command} (result {result})")
        if offboard and not self.offboard and self.commander.modes[-1][2] != "command":
            self.violations.append(f"{now:.2f} s: PX4's offboard-loss failsafe acted ({self.commander.modes[-1][2]})")
        self._fly(now)
        return answers

    def _take_off(self, now: float) -> None:
        """PX4's own take-off mode: done after `takeoff_s`, then Hold at the hover point."""
        if self.commander.nav_state == NAV_AUTO_TAKEOFF and now >= self.takeoff_s:
            self.commander.nav_state = px4.NAVIGATION_STATE_AUTO_LOITER
            self.commander.modes.append((now, px4.NAVIGATION_STATE_AUTO_LOITER, "take-off done"))

    def _fly(self, now: float) -> None:
        commander = self.commander
        if commander.nav_state != self.last_mode:
            self.last_mode = commander.nav_state
            self.hold_at = self.world.position().copy()
        if self.offboard:
            if self.fresh and not commander.offboard_signal(now):
                self.violations.append(f"{now:.2f} s: a setpoint executed with the offboard signal lost")
            actions = command_actions(self.spec, self.setpoint)
            action = np.array([actions.get(name, 0.0) for name in self.profile.action_names])
            self.thrust_off = float(self.setpoint.get("thrust_body[2]", 0.0)) >= 0.0
        elif commander.nav_state == NAV_AUTO_TAKEOFF:
            share = min(1.0, now / self.takeoff_s)
            smooth = share * share * (3.0 - 2.0 * share)
            goal = np.array([self.target[0], self.target[1], self.target[2] * smooth])
            rate = 6.0 * share * (1.0 - share) * self.target[2] / self.takeoff_s
            action, self.thrust_off = self.world.hold_action(goal, (0.0, 0.0, rate)), False
        else:
            action, self.thrust_off = self.world.hold_action(self.hold_at), False
        self.executed = action
        self.fresh = False
        self.world.step(action)

    def odometry(self) -> dict[str, float]:
        """PX4's VehicleOdometry fields (NED, FRD) of the simulated state."""
        return px4_odometry(self.world.state.tolist())

    def motors_off_in_the_air(self) -> bool:
        return self.thrust_off and self.world.airborne()


class Px4Rig:
    """`SimulatedPx4` (`px4`) with the node's side wired as Px4Output wires it (the module docstring)."""

    def __init__(self, px4_vehicle: SimulatedPx4) -> None:
        profile = px4_vehicle.profile
        self.profile = profile
        self.px4 = px4_vehicle
        settings = profile.px4 or Px4Settings()
        self.hold = px4.FaultHold(settings.fault_hold, settings.hover_thrust, body_rates=True)
        self.offboard = px4_link.OffboardLink(True, False, staleness=profile.staleness_timeout)
        handback = px4_link.Px4HandBack(settings.fault_hold, settings.hover_thrust)
        self.vehicle = px4_link.Px4Vehicle(handback, self.offboard, self._link_setpoint, self._request, self.clock)
        self.now = 0.0
        self.steps = 0
        self.from_policy = False

    @property
    def link(self) -> VehicleLink | None:
        return self.vehicle

    @property
    def commander(self) -> Commander:
        return self.px4.commander

    @property
    def world(self) -> QuadrotorWorld:
        return self.px4.world

    @property
    def violations(self) -> list[str]:
        return self.px4.violations

    def clock(self) -> float:
        return self.now

    # ------------------------------------------------------------------------------------------------ the node

    def inputs(self) -> dict[str, dict[str, float]]:
        return {"odom": {f"odom.{key}": value for key, value in self.px4.odometry().items()}}

    def command(self, fields: dict[str, float], fault: str) -> None:
        """policy_node's setpoint through the fault hold (Px4Output.send)."""
        sent = self.hold.setpoint(fields, fault, self.now)
        self.offboard.on_command(sent is not None, bool(fault), self.now)
        if sent is not None:
            self.px4.receive(sent, self.now)
            self.from_policy = not fault

    def _link_setpoint(self, fields: dict[str, float]) -> None:
        self.px4.receive(fields, self.now)
        self.from_policy = False

    def _request(self, request: px4_link.VehicleRequest, confirmation: int) -> None:
        self.px4.command(request.fields(0, confirmation=confirmation), self.now)

    # -------------------------------------------------------------------------------------------------- vehicle

    def advance(self) -> None:
        now = self.now
        if self.steps % HEARTBEAT_PERIODS == 0 and self.offboard.heartbeat_due(now):
            self.px4.heartbeat(now, px4.offboard_mode(px4.RATES_SETPOINT))
            for request, confirmation in self.offboard.requests(now):
                self.px4.command(request.fields(0, confirmation=confirmation), now)
        for command, result in self.px4.step(now):
            self.vehicle.on_ack(command, result)
        self.vehicle.handback.on_nav_state(self.commander.nav_state)
        self.steps += 1
        self.now += self.profile.dt

    def in_charge(self) -> str:
        return "policy" if self.px4.offboard and self.from_policy else "vehicle"

    def executed(self) -> np.ndarray:
        return self.px4.executed

    def pose(self) -> tuple[np.ndarray, float]:
        return self.world.position(), self.world.tilt()

    def motors_off_in_the_air(self) -> bool:
        return self.px4.motors_off_in_the_air()
