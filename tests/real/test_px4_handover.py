"""The hand-back to PX4's own Hold mode (robo_rl.real.px4_link: Px4HandBack, Px4Vehicle) through the deploy core
(PolicyNodeCore with the bundled quadrotor_px4 profile and its handover section), against a stand-in for PX4's
commander, in stepped time.

The stand-in (`Commander`, robo_rl/sim/rehearsal/px4_commander.py) restates the rules of PX4-Autopilot's commander
(its module docstring names each rule's file and commit).
The hover thrust: ROMFS/px4fmu_common/init.d-posix/airframes/4001_gz_x500 (21d84845) sets MPC_THR_HOVER 0.60 for the
X500; src/modules/uxrce_dds_client/dds_topics.yaml (00743c63) exports no hover_thrust_estimate topic, so the profile
states it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from robo_rl.real import px4, px4_link
from robo_rl.real.controller import PolicyController
from robo_rl.real.derive import px4_odometry
from robo_rl.real.handover import HandoverStep, Mode
from robo_rl.real.node_core import NodeSettings, PolicyNodeCore
from robo_rl.real.profile import ProfileError, Px4Settings, load_profile
from robo_rl.real.runtime import PolicyRuntime
from robo_rl.sim.rehearsal.px4_commander import ACCEPTED, NAV_AUTO_LAND, TEMPORARILY_REJECTED, Commander

from .conftest import FakeClock

PX4 = load_profile("quadrotor_px4")
DT = PX4.dt
HOVERING = [0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
"""A quadrotor state (position ENU, quaternion w x y z, velocity, body rates, ...) hovering level at 1 m."""


class Flight:
    """PolicyNodeCore on the bundled profile with the PX4 vehicle link, wired as Px4Output wires it (the setpoint
    through the fault hold and the offboard link; the heartbeat each 10th period; acks one commander cycle later)."""

    def __init__(self, policy: Path, commander: Commander, offboard: bool = True) -> None:
        self.clock = FakeClock()
        self.commander = commander
        self.odometry = True
        settings = PX4.px4 or Px4Settings()
        controller = PolicyController(PolicyRuntime(policy, PX4), PX4, self.clock, available=lambda _: False)
        self.hold = px4.FaultHold(settings.fault_hold, settings.hover_thrust, body_rates=True)
        self.link = px4_link.OffboardLink(offboard, False, staleness=PX4.staleness_timeout)
        handback = px4_link.Px4HandBack(settings.fault_hold, settings.hover_thrust)
        self.vehicle = px4_link.Px4Vehicle(handback, self.link, self._setpoint, self._request, self.clock)
        self.core = PolicyNodeCore(
            controller, NodeSettings(trigger="timer"), {"odom": dict}, self._publish, lambda *_: None,
            now_monotonic=self.clock, now_ros_ns=lambda: round(self.clock.now * 1e9), vehicle=self.vehicle,
        )  # fmt: skip
        self.steps = 0
        self.modes: list[tuple[float, Mode]] = []

    def _publish(self, fields: dict[str, float], fault: str) -> None:
        now = self.clock()
        sent = self.hold.setpoint(fields, fault, now)
        self.link.on_command(sent is not None, bool(fault), now)
        if sent is not None:
            self.commander.setpoint(now, sent)

    def _setpoint(self, fields: dict[str, float]) -> None:
        self.commander.setpoint(self.clock(), fields)

    def _request(self, request: px4_link.VehicleRequest, confirmation: int) -> None:
        self.commander.command(self.clock(), request.fields(0, confirmation=confirmation))

    def run(self, seconds: float) -> None:
        for _ in range(round(seconds / DT)):
            now = self.clock()
            if self.odometry:
                self.core.on_input("odom", {f"odom.{k}": v for k, v in px4_odometry(HOVERING).items()})
            self.core.tick()
            handover = self.core.controller.handover
            assert handover is not None
            if not self.modes or self.modes[-1][1] is not handover.mode:
                self.modes.append((now, handover.mode))
            if self.steps % 10 == 0 and self.link.heartbeat_due(now):
                self.commander.heartbeat(now, px4.offboard_mode(px4.RATES_SETPOINT))
                for request, confirmation in self.link.requests(now):
                    self.commander.command(now, request.fields(0, confirmation=confirmation))
            for command, result in self.commander.step(now):
                self.vehicle.on_ack(command, result)
            self.vehicle.handback.on_nav_state(self.commander.nav_state)
            self.steps += 1
            self.clock.advance(DT)


@pytest.fixture(scope="module")
def probe(linear_policy: Callable[..., Path]) -> Path:
    """Thrust action 0.8 (0.9 up) and roll rate 0.3 (3 rad/s): far from the hold command (0.2, 0, 0, 0)."""
    return linear_policy("quadrotor_px4", {}, {"collective_thrust": 0.8, "roll_rate": 0.3})


def _is_hold(fields: dict[str, float]) -> bool:
    return fields == px4.hold_setpoint((0.0, 0.0, -0.6))


def test_the_vehicle_holds_until_asked_then_a_fault_hands_back_to_px4_hold_acknowledged(probe: Path) -> None:
    commander = Commander()
    flight = Flight(probe, commander)
    flight.core.activate()
    flight.run(0.5)
    assert commander.received == [] and commander.commands == []  # PX4 holds: nothing sent, no zero thrust
    assert flight.core.request("policy") == ""
    flight.run(2.5)
    # 1 s of the hold setpoint (10 heartbeats; PX4 ignores it in Hold), then the offboard switch, accepted at once,
    # and only then the take-over: PX4 executes the policy's ramp from its first command.
    assert [(mode, why) for _, mode, why in commander.modes] == [(px4.NAVIGATION_STATE_OFFBOARD, "command")]
    assert commander.executed[-1][1]["roll"] == pytest.approx(3.0) and commander.executed[-1][1]["thrust_body[2]"]
    offboard_at = commander.modes[0][0]
    streamed = [fields for t, fields in commander.received if t <= offboard_at]
    assert len(streamed) >= 100 and all(_is_hold(fields) for fields in streamed)
    first = commander.executed[0][1]  # the ramp's first command: 1/100 of the way from the hold command
    assert first["thrust_body[2]"] == pytest.approx(-(0.6 + 0.01 * 0.3)) and first["roll"] == pytest.approx(0.03)
    received = len(commander.received)
    flight.core.estop()
    fault_at = flight.clock()
    flight.run(1.0)
    # The fault's period: the hold setpoint and the mode switch to Hold (AUTO 4, LOITER 3), acknowledged by the
    # next commander cycle; PX4 holds within one control period, and the policy's setpoints stop.
    (sent_at, command), *more = [c for c in commander.commands if c[0] >= fault_at]
    assert more == [] and sent_at == fault_at
    assert (command["command"], command["param1"], command["param2"], command["param3"]) == (176, 1.0, 4.0, 3.0)
    assert commander.modes[-1] == (fault_at, px4.NAVIGATION_STATE_AUTO_LOITER, "command")
    after = commander.received[received:]
    assert [t for t, _ in after] == [fault_at] and _is_hold(after[0][1])
    assert _is_hold(commander.executed[-1][1])  # the last setpoint PX4 executed in offboard: zero rates at hover
    assert all(fields["thrust_body[2]"] < -0.5 for _, fields in commander.received)  # never a thrust cut
    assert flight.vehicle.diagnostics() == {"px4_handback": "PX4 holds (acknowledged after 1 send)"}
    assert not flight.link.heartbeat_due(flight.clock())  # silent: PX4 flies its Hold mode
    # A new hand-over after the e-stop clears (activation): the offboard switch is asked again.
    flight.core.activate()
    assert flight.core.request("policy") == ""
    flight.run(1.5)
    assert commander.nav_state == px4.NAVIGATION_STATE_OFFBOARD


def test_a_refused_hand_back_sends_three_times_then_silence_leaves_it_to_the_offboard_loss_failsafe(
    probe: Path,
) -> None:
    commander = Commander(offboard_loss_mode=NAV_AUTO_LAND)
    flight = Flight(probe, commander)
    flight.core.activate()
    flight.core.request("policy")
    flight.run(2.0)
    assert commander.nav_state == px4.NAVIGATION_STATE_OFFBOARD
    commander.position_valid = False  # the position estimate is lost: Hold cannot run
    flight.odometry = False
    stale_from = flight.clock()
    flight.run(2.0)
    sends = [(t, c["confirmation"]) for t, c in commander.commands if c["param2"] == px4.PX4_CUSTOM_MAIN_MODE_AUTO]
    handback_at = sends[0][0]
    # Stale odometry (the last at stale_from - DT) faults once older than staleness_timeout (0.05 s), within a
    # period; the mode switch goes out in that period, then 0.1 s apart, 3 sends.
    age = handback_at - (stale_from - DT)
    assert PX4.staleness_timeout - 1e-9 <= age <= PX4.staleness_timeout + DT + 1e-9
    assert [c for _, c in sends] == [0, 1, 2]
    assert [t - handback_at for t, _ in sends] == pytest.approx([0.0, 0.1, 0.2])
    holds = [(t, f) for t, f in commander.received if t >= handback_at]
    assert all(_is_hold(f) for _, f in holds)
    assert holds[-1][0] - handback_at == pytest.approx(0.3 - DT)  # px4.fault_hold 0.3 s of hold setpoints, then none
    # PX4 kept executing the hold setpoint until the offboard signal was lost (COM_OF_LOSS_T after the last
    # heartbeat), then its failsafe took the vehicle (here COM_OBL_RC_ACT = Land).
    loss_at, mode, why = commander.modes[-1]
    assert (mode, why) == (NAV_AUTO_LAND, "offboard loss")
    assert loss_at - commander.heartbeat_at == pytest.approx(commander.of_loss_t, abs=DT + 1e-9)
    assert _is_hold(commander.executed[-1][1])
    assert all(fields["thrust_body[2]"] < -0.5 for _, fields in commander.received)
    report = flight.vehicle.diagnostics()["px4_handback"]
    assert report == "gave up after 3 sends, last answer: temporarily rejected: PX4's offboard-loss failsafe acts"


def test_position_mode_needs_sticks_hold_does_not() -> None:
    """Why the hand-back asks for Hold (AUTO_LOITER), not Position mode: without a manual control signal PX4's
    commander refuses POSCTL (mode_requirements.cpp, modeCheck.cpp), Hold needs only a position estimate."""
    commander = Commander(nav_state=px4.NAVIGATION_STATE_OFFBOARD)
    position = px4_link.VehicleRequest("position", px4.VEHICLE_CMD_DO_SET_MODE, 1.0, px4.PX4_CUSTOM_MAIN_MODE_POSCTL)
    commander.command(0.0, position.fields(0))
    commander.command(0.0, px4_link.HOLD_REQUEST.fields(0))
    assert commander.step(0.0) == [(176, TEMPORARILY_REJECTED), (176, ACCEPTED)]
    assert commander.nav_state == px4.NAVIGATION_STATE_AUTO_LOITER


def test_px4_leaving_offboard_by_itself_counts_as_taken_and_a_take_over_waits_for_the_hand_back() -> None:
    handback = px4_link.Px4HandBack(0.3, 0.6)
    link = px4_link.OffboardLink(False, False, staleness=0.05)
    sent: list[Any] = []
    clock = FakeClock()
    vehicle = px4_link.Px4Vehicle(handback, link, sent.append, lambda r, c: sent.append((r.name, c)), clock)
    assert vehicle.on_step(HandoverStep(Mode.VEHICLE, None, 0.0, handed_back=True), {}, {})
    assert vehicle.ready() == "PX4 has not taken the last hand-back yet"
    assert sent == [px4.hold_setpoint((0.0, 0.0, -0.6)), ("hold", 0)]
    handback.on_nav_state(px4.NAVIGATION_STATE_OFFBOARD)
    assert handback.phase == "switching"
    handback.on_nav_state(px4.NAVIGATION_STATE_POSCTL)  # the pilot's switch or PX4's own failsafe
    assert vehicle.ready() == "" and handback.report() == "PX4 holds (nav_state 2 after 1 send)"
    assert vehicle.on_step(HandoverStep(Mode.VEHICLE, None, 0.0), {}, {}) and len(sent) == 2  # silent now
    assert not vehicle.on_step(HandoverStep(Mode.RAMP, None, 0.1, took_over=True), {}, {})
    assert handback.phase == ""
    # PX4 not in offboard at the hand-back (a pilot's Position mode, our offboard request never accepted): it is
    # not flying our setpoints, so nothing is sent and its mode is left alone.
    assert vehicle.on_step(HandoverStep(Mode.VEHICLE, None, 0.0, handed_back=True), {}, {}) and len(sent) == 2
    assert handback.report() == "PX4 holds (not in offboard: nav_state 2)"


def test_px4_leaving_offboard_while_the_policy_flies_hands_back_at_once(probe: Path) -> None:
    """A pilot switching PX4 to Position mode (or a failsafe acting) mid-flight: PX4 no longer executes our
    setpoints, so the node hands back in the period it reads the nav_state (Px4Vehicle.control_lost), sends nothing
    more (PX4 is not in offboard: its mode is left alone) and needs a new request."""
    commander = Commander()
    flight = Flight(probe, commander)
    flight.core.activate()
    assert flight.core.request("policy") == ""
    flight.run(2.5)
    assert commander.nav_state == px4.NAVIGATION_STATE_OFFBOARD and flight.modes[-1][1] is Mode.POLICY
    commander.nav_state = px4.NAVIGATION_STATE_POSCTL  # the pilot's switch
    switched_at = flight.clock()
    received, commands = len(commander.received), len(commander.commands)
    flight.run(1.0)
    handed_at, mode = flight.modes[-1]
    assert mode is Mode.VEHICLE and handed_at == pytest.approx(switched_at + DT)  # the next period
    handover = flight.core.controller.handover
    assert handover is not None and handover.transitions[-1].reason == "PX4 left offboard (nav_state 2)"
    assert len(commander.received) == received + 1 and len(commander.commands) == commands
    assert flight.vehicle.diagnostics() == {"px4_handback": "PX4 holds (not in offboard: nav_state 2)"}


def test_the_hover_thrust_is_stated_and_the_constants_are_px4s() -> None:
    settings = PX4.px4
    assert settings is not None and settings.hover_thrust == 0.6  # 4001_gz_x500: MPC_THR_HOVER 0.60
    assert PX4.handover is not None and PX4.handover.hold == pytest.approx((2 * 0.6 - 1, 0.0, 0.0, 0.0))
    assert (PX4.handover.vehicle, PX4.handover.start) == ("px4", "request")
    fields = px4_link.HOLD_REQUEST.fields(5, confirmation=1)
    assert {k: fields[k] for k in ("command", "param1", "param2", "param3", "confirmation", "from_external")} == {
        "command": 176, "param1": 1.0, "param2": 4.0, "param3": 3.0, "confirmation": 1, "from_external": True,
    }  # fmt: skip
    unknown = replace(settings, hover_thrust=0.0)
    with pytest.raises(ProfileError) as refused:
        replace(PX4, px4=unknown)
    message = str(refused.value)
    assert "\n" not in message and message.startswith("px4.hover_thrust: unknown (0)") and "MPC_THR_HOVER" in message
    with pytest.raises(ProfileError, match=r"fault_hold 0\.3 s"):  # no hand-over, but the fault hold on rates
        replace(PX4, px4=unknown, handover=None)
    replace(PX4, px4=replace(unknown, fault_hold=0.0), handover=None)  # neither: nothing held, nothing to know
    with pytest.raises(ValueError):
        px4_link.Px4HandBack(0.3, 0.0)
