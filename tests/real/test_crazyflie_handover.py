"""The Crazyflie hand-over through crazyswarm2 (issue 48, deliverable 2): the firmware's commander restated as a
stand-in (robo_rl.sim.quadrotor.crazyflie_commander), its rules checked one by one, then the whole flight in stepped
time: PolicyNodeCore with a real exported ctbr policy, the bundled quadrotor_crazyswarm2 profile, the Crazyflie link
(robo_rl.real.crazyflie_link) and the stand-in as the vehicle.

Upstream, read at these versions (the rules restated in our words; file and function named at each test):
- bitcraze/crazyflie-firmware, tag 2026.08-2-g2a18fc29 (commit 2a18fc299d7b48cf094d26c38a79f33dec64b5d7):
  src/modules/src/crtp_commander_rpyt.c (crtpCommanderRpytDecodeSetpoint, lines 121-139; MIN_THRUST, MAX_THRUST
  lines 38-39; `thrustLocked = true` line 77), src/modules/src/commander.c (commanderInit, commanderSetSetpoint,
  commanderRelaxPriority), src/modules/interface/commander.h (the priorities, lines 35-41),
  src/modules/src/crtp_commander.c (notifySetpointsStopDecoder), src/modules/src/stabilizer.c (line 334-336: the
  high-level setpoint offered at HIGHLEVEL every tick), src/modules/src/crtp_commander_high_level.c
  (crtpCommanderHighLevelGetSetpoint lines 345-372, takeoff line 495, land line 563, go_to line 641),
  src/modules/src/planner.c (plan_takeoff line 154: IDLE only; plan_land line 169; plan_current_goal line 111: a
  finished landing goes IDLE; plan_go_to_from line 184), src/modules/src/supervisor.c (lines 58-59 and 482-486:
  setpoint older than 500 ms warns, 2000 ms times out; supervisorOverrideSetpoint line 612).
- IMRCLab/crazyswarm2 at f6154e2d51791a41e6f320c1ee166f782be02a20: crazyflie/src/crazyflie_server.cpp
  (cmd_vel_legacy_changed; go_to passes goal, yaw, duration and `relative` to crazyflie_cpp's goTo),
  crazyflie_interfaces/srv/{Takeoff,Land,GoTo,NotifySetpointsStop}.srv.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pytest

from robo_rl.real.controller import PolicyController
from robo_rl.real.crazyflie_link import ZERO_TWIST, CrazyflieLink, Phase
from robo_rl.real.handover import Mode
from robo_rl.real.node_core import NodeSettings, PolicyNodeCore
from robo_rl.real.profile import RobotProfile, load_profile
from robo_rl.real.runtime import PolicyRuntime
from robo_rl.sim.quadrotor.crazyflie_commander import (
    PRIORITY_CRTP,
    PRIORITY_DISABLE,
    PRIORITY_HIGHLEVEL,
    ActiveSetpoint,
    CrazyflieCommander,
    PlanState,
    Source,
    VehicleState,
    legacy_packet,
)

from .conftest import FakeClock
from .test_crazyswarm2 import crazyswarm2_cpp

PROFILE = load_profile("quadrotor_crazyswarm2")
HOVER = VehicleState((0.3, -0.2, 0.5), (0.0, 0.0, 0.0), 0.4)
GROUND = VehicleState((0.3, -0.2, 0.0))


def _flying(cf: CrazyflieCommander, now: float = 0.0) -> None:
    """The stand-in after a proper take-off (unlocked on the ground), hovering at HOVER."""
    cf.setpoint(now, GROUND)
    cf.packet_rpyt(0.0, 0.0, 0.0, 0, now)
    cf.notify_setpoints_stop(now)
    cf.setpoint(now, GROUND)
    assert cf.takeoff(0.5, 2.0, now)
    cf.setpoint(now + 2.0, HOVER)


# ------------------------------------------------------------------------------------- the firmware's rules


def test_the_thrust_lock_is_set_at_boot_and_opens_only_on_a_zero_thrust_packet() -> None:
    """crtp_commander_rpyt.c, crtpCommanderRpytDecodeSetpoint lines 121-139 (`thrustLocked = true` at line 77):
    locked, or below MIN_THRUST 1000, the thrust is 0; a packet of thrust exactly 0 releases the lock; above
    MAX_THRUST 60000 it is capped."""
    cf = CrazyflieCommander()
    assert cf.packet_rpyt(0.0, 0.0, 0.0, 40000, 0.0).thrust == 0.0  # locked from boot
    assert cf.packet_rpyt(0.0, 0.0, 0.0, 1, 0.01).thrust == 0.0  # not exactly 0: still locked
    assert cf.thrust_locked
    assert cf.packet_rpyt(0.0, 0.0, 0.0, 0, 0.02).thrust == 0.0
    assert not cf.thrust_locked
    assert cf.packet_rpyt(0.0, 0.0, 0.0, 40000, 0.03).thrust == 40000.0
    assert cf.packet_rpyt(0.0, 0.0, 0.0, 999, 0.04).thrust == 0.0  # below MIN_THRUST
    assert cf.packet_rpyt(0.0, 0.0, 0.0, 65535, 0.05).thrust == 60000.0  # capped at MAX_THRUST
    with pytest.raises(ValueError, match="uint16"):
        cf.packet_rpyt(0.0, 0.0, 0.0, 70000, 0.06)


def test_the_lock_is_set_again_while_the_priority_is_disable() -> None:
    """crtp_commander_rpyt.c line 125: a packet arriving while the active priority is DISABLE (commander.c's
    commanderInit: the boot priority) sets the lock first; its own zero thrust then releases it (line 128)."""
    cf = CrazyflieCommander(can_fly=False)  # nothing raises the priority before the first packet
    cf.thrust_locked = False
    assert cf.priority == PRIORITY_DISABLE
    assert cf.packet_rpyt(0.0, 0.0, 0.0, 30000, 0.0).thrust == 0.0 and cf.thrust_locked
    assert cf.priority == PRIORITY_CRTP


def test_a_setpoint_is_accepted_only_at_the_active_priority_or_above() -> None:
    """commander.c, commanderSetSetpoint (priorities commander.h lines 35-41): while radio (CRTP) setpoints hold,
    the high-level commander's setpoint (offered at HIGHLEVEL every tick, stabilizer.c line 336) is refused; a
    CRTP setpoint stops the high-level plan (crtpCommanderHighLevelStop)."""
    cf = CrazyflieCommander()
    _flying(cf)
    assert cf.setpoint(2.01, HOVER).source is Source.HIGHLEVEL and cf.hl.state is PlanState.FLYING
    cf.packet_rpyt(1.0, 2.0, 3.0, 40000, 2.02)
    assert cf.hl.state is PlanState.IDLE  # the plan is stopped by the radio setpoint
    active = cf.setpoint(2.03, HOVER)
    assert active.source is Source.CRTP and active.setpoint.thrust == 40000.0 and active.priority == PRIORITY_CRTP


def test_notify_setpoints_stop_relaxes_the_priority_and_a_stopped_plan_turns_the_motors_off() -> None:
    """crtp_commander.c notifySetpointsStopDecoder → commander.c commanderRelaxPriority (priority LOWEST = HIGHLEVEL);
    crtp_commander_high_level.c lines 359-370: a stopped plan gives the null setpoint (motors off)."""
    cf = CrazyflieCommander()
    _flying(cf)
    cf.packet_rpyt(0.0, 0.0, 0.0, 40000, 2.02)
    cf.notify_setpoints_stop(2.03)
    assert cf.priority == PRIORITY_HIGHLEVEL
    active = cf.setpoint(2.04, HOVER)
    assert active.source is Source.HIGHLEVEL and active.motors_off  # in the air: it would fall


def test_take_off_only_from_a_stopped_plan_and_a_finished_landing_stops_the_motors() -> None:
    """planner.c plan_takeoff (line 154): refused unless IDLE; plan_land (line 169) from any state but LANDING;
    plan_current_goal (line 111): a landing whose piece has ended goes IDLE, whose setpoint is the null one."""
    cf = CrazyflieCommander()
    _flying(cf)
    assert not cf.takeoff(1.0, 1.0, 2.1)
    assert cf.land(0.0, 2.0, 3.0) and not cf.land(0.0, 2.0, 3.1)
    middle = cf.setpoint(4.0, HOVER)
    assert middle.setpoint.position is not None and 0.0 < middle.setpoint.position[2] < 0.5
    assert not middle.motors_off
    landed = cf.setpoint(5.01, GROUND)
    assert landed.plan is PlanState.IDLE and landed.motors_off


def test_go_to_from_a_stopped_plan_starts_at_the_current_state() -> None:
    """crtp_commander_high_level.c go_to (line 641): from a stopped or disabled plan it plans from the last setpoint,
    which a stopped plan keeps equal to the state (lines 359-362); relative adds it (planner.c plan_go_to_from,
    line 186). A relative (0, 0, 0) goal holds where the vehicle is, whatever it drifted to."""
    cf = CrazyflieCommander()
    _flying(cf)
    cf.packet_rpyt(0.0, 0.0, 0.0, 40000, 2.02)
    drifted = VehicleState((0.45, -0.1, 0.62), (0.2, 0.0, 0.0), 0.7)
    cf.setpoint(2.03, drifted)  # the stopped plan tracks the state
    assert cf.go_to(0.0, 0.0, 0.0, 0.0, 1.0, 2.035, relative=True)
    cf.notify_setpoints_stop(2.04)
    for now in (2.05, 2.5, 3.5):
        active = cf.setpoint(now, drifted)
        assert active.source is Source.HIGHLEVEL and active.setpoint.position == pytest.approx(drifted.position)
        assert active.setpoint.yaw == pytest.approx(0.7) and not active.motors_off


def test_the_supervisor_levels_out_after_half_a_second_and_stops_the_motors_after_two() -> None:
    """supervisor.c lines 58-59 and 482-486 (COMMANDER_WDT_TIMEOUT_STABILIZE 500 ms, _SHUTDOWN 2000 ms) with
    supervisorOverrideSetpoint (line 612): a stale radio setpoint is levelled, then cut."""
    cf = CrazyflieCommander()
    _flying(cf)
    cf.packet_rpyt(0.0, 0.0, 0.0, 40000, 2.0)
    assert not cf.setpoint(2.5, HOVER).level_out
    late = cf.setpoint(2.51, HOVER)
    assert late.level_out and not late.motors_off
    assert cf.setpoint(4.01, HOVER).motors_off


def test_after_a_takeoff_without_the_unlock_the_policys_first_packet_cuts_the_motors_in_the_air() -> None:
    """Consequence (a) of crtp_commander_rpyt.c's lock: a high-level take-off needs no radio packet, so the lock is
    still set from boot; the policy's first packet then takes the priority (commander.c) with thrust 0."""
    cf = CrazyflieCommander()
    cf.setpoint(0.0, GROUND)
    assert cf.takeoff(0.5, 2.0, 0.0)
    assert not cf.setpoint(2.0, HOVER).motors_off
    cf.packet_rpyt(0.0, 0.0, 0.0, 40985, 2.01)
    assert cf.setpoint(2.02, HOVER).motors_off


def test_notify_before_go_to_cuts_the_motors_go_to_first_holds() -> None:
    """Why the hand-back's order matters (commander.c commanderRelaxPriority; crtp_commander_high_level.c lines
    363-370: a stopped plan's null setpoint): notify first leaves the stopped plan in charge for at least a tick,
    motors off in the air; go_to first, then notify: the plan holds from the first tick."""
    wrong = CrazyflieCommander()
    _flying(wrong)
    wrong.packet_rpyt(0.0, 0.0, 0.0, 40985, 2.02)
    wrong.notify_setpoints_stop(2.03)
    assert wrong.setpoint(2.035, HOVER).motors_off
    right = CrazyflieCommander()
    _flying(right)
    right.packet_rpyt(0.0, 0.0, 0.0, 40985, 2.02)
    right.go_to(0.0, 0.0, 0.0, 0.0, 1.0, 2.03, relative=True)
    assert right.setpoint(2.031, HOVER).source is Source.CRTP  # accepted, but the radio priority still holds
    right.notify_setpoints_stop(2.032)
    active = right.setpoint(2.035, HOVER)
    assert active.source is Source.HIGHLEVEL and not active.motors_off
    assert active.setpoint.position == pytest.approx(HOVER.position)


def test_crazyswarm2s_twist_to_packet_mapping_matches_the_profile_tests() -> None:
    """crazyflie_server.cpp cmd_vel_legacy_changed, as tests/real/test_crazyswarm2.py restates it independently."""
    for twist in (
        {"linear.x": 12.0, "linear.y": -3.0, "linear.z": 40984.77, "angular.z": 7.0},
        {"linear.x": 0.0, "linear.y": 0.0, "linear.z": 0.4, "angular.z": 0.0},
        {"linear.x": 0.0, "linear.y": 0.0, "linear.z": 70000.0, "angular.z": 0.0},
    ):
        expected = crazyswarm2_cpp(twist)
        assert legacy_packet(twist) == (expected.roll, expected.pitch, expected.yaw, expected.thrust)
    assert legacy_packet(ZERO_TWIST)[3] == 0


# ------------------------------------------------------------------------------------------- the whole flight


@dataclass
class Flight:
    """PolicyNodeCore + link + stand-in, one period per `period()`: inputs (or the watchdog), then a stabilizer
    tick, then the vehicle moves: perfectly along the high-level position target, drifting at `drift` m/s in x
    under radio setpoints, falling when the motors are off in the air."""

    clock: FakeClock
    profile: RobotProfile
    cf: CrazyflieCommander = field(default_factory=CrazyflieCommander)
    state: VehicleState = field(default_factory=lambda: GROUND)
    drift: float = 0.2
    odom: bool = True
    core: PolicyNodeCore = field(init=False)
    link: CrazyflieLink = field(init=False)
    packets: list[tuple[float, int]] = field(default_factory=list)
    """(time, thrust value) of every packet the stand-in received."""
    ticks: list[tuple[float, ActiveSetpoint, VehicleState]] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)

    def twist(self, fields: dict[str, float]) -> None:
        roll, pitch, yawrate, thrust = legacy_packet(fields)
        self.packets.append((self.clock.now, thrust))
        self.cf.packet_rpyt(roll, pitch, yawrate, thrust, self.clock.now)

    def call(self, service: str, request: dict[str, object], then: Callable[[], None] | None) -> None:
        """crazyswarm2's services on the stand-in, answered at once."""
        self.calls.append(service)
        now, cf = self.clock.now, self.cf
        number = {key: value for key, value in request.items() if isinstance(value, (int, float))}
        if service == "takeoff":
            cf.takeoff(number["height"], number["duration"], now)
        elif service == "land":
            cf.land(number["height"], number["duration"], now)
        elif service == "go_to":
            goal = request["goal"]
            assert isinstance(goal, tuple)
            x, y, z = (float(value) for value in goal)
            cf.go_to(x, y, z, number["yaw"], number["duration"], now, relative=request["relative"] is True)
        elif service == "notify_setpoints_stop":
            cf.notify_setpoints_stop(now)
        else:
            raise AssertionError(f"unknown service {service}")
        if then is not None:
            then()

    def odom_fields(self) -> dict[str, float]:
        s = self.state
        half = s.yaw / 2
        return {
            **{f"odom.pose.pose.position.{a}": v for a, v in zip("xyz", s.position, strict=True)},
            **{
                f"odom.pose.pose.orientation.{a}": v
                for a, v in zip("wxyz", (math.cos(half), 0, 0, math.sin(half)), strict=True)
            },
            **{f"odom.twist.twist.linear.{a}": v for a, v in zip("xyz", s.velocity, strict=True)},
        }

    def period(self) -> ActiveSetpoint:
        self.clock.advance(self.profile.dt)
        self.core.on_input("gyro", SimpleNamespace(fields={f"gyro.values[{i}]": 0.0 for i in range(3)}))
        if self.odom:
            self.core.on_input("odom", SimpleNamespace(fields=self.odom_fields()))
        else:
            self.core.on_watchdog()
        active = self.cf.setpoint(self.clock.now, self.state)
        self.ticks.append((self.clock.now, active, self.state))
        self._move(active)
        return active

    def run(self, seconds: float) -> ActiveSetpoint:
        active = self.period()
        for _ in range(round(seconds / self.profile.dt) - 1):
            active = self.period()
        return active

    def _move(self, active: ActiveSetpoint) -> None:
        s, dt = self.state, self.profile.dt
        if active.source is Source.HIGHLEVEL and active.setpoint.position is not None:
            self.state = VehicleState(active.setpoint.position, (0.0, 0.0, 0.0), active.setpoint.yaw)
        elif active.motors_off:
            x, y, z = s.position
            self.state = VehicleState((x, y, max(0.0, z - 9.81 * dt * dt)), s.velocity, s.yaw)
        else:
            x, y, z = s.position
            self.state = VehicleState((x + self.drift * dt, y, z), (self.drift, 0.0, 0.0), s.yaw)

    def airborne_cuts(self) -> list[float]:
        """Ticks at which the motors were off with the vehicle in the air."""
        return [t for t, active, state in self.ticks if state.position[2] > 0.02 and active.motors_off]


def _flight(policy: Path, clock: FakeClock) -> Flight:
    flight = Flight(clock, PROFILE)
    controller = PolicyController(PolicyRuntime(policy), PROFILE, clock, available=lambda _: False)
    assert PROFILE.crazyswarm2 is not None
    flight.link = CrazyflieLink(PROFILE.crazyswarm2, flight.twist, flight.call, clock)
    flight.core = PolicyNodeCore(
        controller,
        NodeSettings(target=(0.3, -0.2, 0.5)),
        {"odom": lambda m: dict(m.fields), "gyro": lambda m: dict(m.fields)},
        lambda fields, fault: flight.twist(fields),
        lambda level, message: None,
        now_monotonic=clock,
        now_ros_ns=lambda: round(clock.now * 1e9),
        vehicle=flight.link,
    )
    flight.core.activate()
    return flight


HOVER_VALUE = 31034.681 + 29109.448 * 0.341816
"""The profile's hold command's thrust value (its handover.hold comment)."""


def test_take_off_hand_over_fault_hand_back_hand_over_again_and_land(
    policy_file: Callable[[str], Path], clock: FakeClock
) -> None:
    flight = _flight(policy_file("quadrotor_crazyswarm2"), clock)
    core, link, cf = flight.core, flight.link, flight.cf
    flight.run(0.1)
    assert flight.packets == [] and cf.thrust_locked  # the vehicle holds: nothing on cmd_vel_legacy
    assert "not taken off by this node" in core.request("policy")
    assert core.request("land") == "the vehicle is ground"

    # Take-off: the unlock on the ground, notify, the high-level take-off.
    assert core.request("takeoff") == ""
    flight.run(0.1)
    assert flight.packets == [(pytest.approx(t), 0) for t, _ in flight.packets] and len(flight.packets) == 10
    assert not cf.thrust_locked and flight.calls == []
    flight.period()
    assert flight.calls == ["notify_setpoints_stop", "takeoff"] and link.phase is Phase.CLIMBING
    assert "climbs" in core.request("policy") and core.request("takeoff").startswith("the vehicle is climbing")
    flight.run(2.0)
    assert flight.state.position[2] == pytest.approx(0.5) and flight.ticks[-1][1].source is Source.HIGHLEVEL
    assert len(flight.packets) == 10

    # Hand-over: the first packet has thrust (the lock is open), ramped from the hover command.
    assert core.request("policy") == ""
    first = flight.period()
    assert first.source is Source.CRTP and cf.hl.state is PlanState.IDLE
    assert first.setpoint.thrust > 0 and abs(flight.packets[-1][1] - HOVER_VALUE) <= PROFILE.dt / 0.5 * 2 * 29109.45
    assert core.request("land") == "the policy is in control: request 'vehicle' first"
    flight.run(0.7)
    assert core.controller.handover is not None and core.controller.handover.mode is Mode.POLICY
    assert all(thrust > 0 for _, thrust in flight.packets[10:])

    # The fault: odometry stops. Within the period it is found stale, the high-level commander holds where the
    # vehicle is (it drifted since the last odometry), never motors off.
    flight.odom = False
    last_odom_x = flight.state.position[0]
    sent = len(flight.packets)
    stale_after = PROFILE.staleness_timeout / PROFILE.dt
    periods = 0
    while periods < 20:
        periods += 1
        active = flight.period()
        if active.source is Source.HIGHLEVEL:
            break
    assert periods <= round(stale_after) + 1  # the period the watchdog finds the input stale
    assert flight.calls[-2:] == ["go_to", "notify_setpoints_stop"]
    assert len(flight.packets) == sent  # cmd_vel_legacy went silent
    assert active.setpoint.position is not None and active.setpoint.position[0] > last_odom_x
    held = flight.run(1.5)
    assert held.source is Source.HIGHLEVEL and held.setpoint.position == pytest.approx(active.setpoint.position)
    assert len(flight.packets) == sent

    # Odometry back: the policy takes over again on request; then hands back on request and the vehicle lands.
    flight.odom = True
    flight.period()
    assert core.request("policy") == ""
    again = flight.period()
    assert again.source is Source.CRTP and again.setpoint.thrust > 0
    flight.run(0.3)
    assert core.request("vehicle") == ""
    flight.period()
    assert flight.calls[-2:] == ["go_to", "notify_setpoints_stop"] and flight.ticks[-1][1].source is Source.HIGHLEVEL
    assert core.request("land") == ""
    flight.run(2.1)
    assert flight.state.position[2] == pytest.approx(0.0, abs=1e-9) and flight.ticks[-1][1].motors_off
    assert link.phase is Phase.GROUND and link.handbacks == 2
    assert flight.airborne_cuts() == []  # never motors off in the air, at any tick
    assert core.diagnostics()["crazyflie_phase"] == "ground"


def test_a_vehicle_this_node_did_not_take_off_is_refused(policy_file: Callable[[str], Path], clock: FakeClock) -> None:
    """Taken off by the high-level commander without the unlock (e.g. from another node): the link cannot know the
    lock is open, so it refuses the take-over (the stand-in shows what would happen), and refuses a take-off in
    the air (its zero-thrust packets would cut the motors)."""
    flight = _flight(policy_file("quadrotor_crazyswarm2"), clock)
    flight.cf.setpoint(clock.now, flight.state)
    flight.cf.takeoff(0.5, 2.0, clock.now)
    flight.run(2.1)
    assert flight.state.position[2] == pytest.approx(0.5)
    assert "thrust lock may still be set" in flight.core.request("policy")
    assert "would cut the motors in the air" in flight.core.request("takeoff")
    flight.run(0.1)
    assert flight.packets == [] and flight.airborne_cuts() == []
    flight.twist({"linear.z": HOVER_VALUE})  # what the policy's first packet would do
    assert flight.cf.setpoint(clock.now, flight.state).motors_off


def test_the_stop_of_the_node_in_flight_hands_back(policy_file: Callable[[str], Path], clock: FakeClock) -> None:
    """Deactivation while the policy flies: the hand-back, never the zero-thrust safe command."""
    flight = _flight(policy_file("quadrotor_crazyswarm2"), clock)
    assert "odometry z nan m is not below" in flight.core.request("takeoff")  # no odometry yet
    flight.period()
    assert flight.core.request("takeoff") == ""
    flight.run(2.2)
    assert flight.core.request("policy") == ""
    flight.run(0.2)
    sent = len(flight.packets)
    assert flight.core.stop("deactivated")
    assert len(flight.packets) == sent and flight.calls[-2:] == ["go_to", "notify_setpoints_stop"]
    flight.cf.setpoint(clock.now, flight.state)
    assert flight.cf.setpoint(clock.now + 0.01, flight.state).source is Source.HIGHLEVEL
    assert flight.airborne_cuts() == []
