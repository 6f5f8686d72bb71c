"""PX4 offboard rules (robo_rl.real.px4), from PX4's user guide "Offboard mode": OffboardControlMode above 2 Hz with
the flag of the setpoint being sent; the mode switch and arming are VehicleCommands (176 DO_SET_MODE with custom
main mode 6 = offboard; 400 COMPONENT_ARM_DISARM with param1 1 = arm) sent only after the setpoint stream runs,
answered by VehicleCommandAck (MAVLink MAV_RESULT: 0 accepted, 1 temporarily rejected, 2 denied, ...).

Time is stepped here (setpoint decisions at 100 Hz, heartbeats at 10 Hz); nothing waits on a clock.

The motor order is checked against PX4-Autopilot's quad-X geometry (CA_ROTOR0..3 positions PX, PY in FRD metres and
moment coefficients KM; src/modules/control_allocator/module.yaml: KM > 0 for a CCW rotor, < 0 for CW, default
0.05): ROMFS/px4fmu_common/init.d-posix/airframes/4001_gz_x500 (the X500 SITL airframe of v1.15 and v1.16; stored
version at commit 21d848457387baf8392b6cfc04f7f367fd58a868) and the generic quadcopter of PX4's "Adding a frame"
guide (the 4001_quad_x geometry: rotors at +-0.15 m, KM left at its 0.05 default for rotors 0 and 1).
"""

from __future__ import annotations

import itertools
import math

import pytest

from robo_rl.real import px4, px4_link
from robo_rl.real.profile import ProfileError, Px4Settings, load_profile
from robo_rl.sim.quadrotor import load_frame

RATES = "px4_msgs/msg/VehicleRatesSetpoint"
DT = 0.01


def test_the_heartbeat_flag_follows_the_setpoint_type() -> None:
    rates = px4.offboard_mode(RATES)
    assert rates["body_rate"] and sum(rates.values()) == 1
    assert px4.offboard_mode("px4_msgs/msg/ActuatorMotors")["direct_actuator"]
    with pytest.raises(ValueError, match="not a PX4 offboard setpoint"):
        px4.offboard_mode("px4_msgs/msg/VehicleOdometry")
    assert px4.HEARTBEAT_HZ > 2


def test_timestamps_are_microseconds() -> None:
    assert px4.timestamp_us(1_700_000_123_456_789) == 1_700_000_123_456


def test_the_vehicle_status_topic_follows_the_px4_version() -> None:
    assert px4.status_topic("1.16") == "fmu/out/vehicle_status_v1"  # VehicleStatus message version 1
    assert px4.status_topic("1.15") == ""  # v1.15's VehicleStatus (version 0) is not the bundled definition
    with pytest.raises(ValueError, match="px4_version"):
        px4.status_topic("1.14")


# ------------------------------------------------------------------------------------------ requests and acks


class StandIn:
    """PX4's answers: per command, the results of its successive acks (None: no answer)."""

    def __init__(self, answers: dict[int, list[int | None]]) -> None:
        self.answers = {command: list(results) for command, results in answers.items()}
        self.received: list[tuple[int, int, float]] = []

    def send(
        self, link: px4_link.OffboardLink, request: px4_link.VehicleRequest, confirmation: int, now: float
    ) -> None:
        self.received.append((request.command, confirmation, now))
        results = self.answers.get(request.command, [])
        result = results.pop(0) if results else 0
        if result is not None:
            link.on_ack(request.command, result)


def _stream(link: px4_link.OffboardLink, seconds: float, px4_: StandIn | None = None, start: float = 0.0) -> int:
    """Good setpoints at 100 Hz and heartbeats at 10 Hz for `seconds`; requests go to `px4_`: heartbeats sent."""
    beats = 0
    for step in range(round(seconds / DT)):
        now = start + step * DT
        link.on_command(True, False, now)
        if step % 10 == 0 and link.heartbeat_due(now):
            beats += 1
            for request, confirmation in link.requests(now):
                assert px4_ is not None, "a request went out unasked"
                px4_.send(link, request, confirmation, now)
    return beats


def test_nothing_arms_or_switches_mode_unless_asked() -> None:
    link = px4_link.OffboardLink(offboard=False, arm=False, staleness=0.05)
    assert _stream(link, 5.0) == 50
    assert link.diagnostics() == {}


def test_requests_follow_one_second_of_setpoints_and_go_once_when_accepted() -> None:
    link, stand_in = px4_link.OffboardLink(offboard=True, arm=True, staleness=0.05), StandIn({})
    assert _stream(link, 0.95, stand_in) == 10 and stand_in.received == []  # 0.9 s of stream: not yet
    _stream(link, 5.0, stand_in, start=0.96)
    assert [(c, n) for c, n, _ in stand_in.received] == [(176, 0), (400, 0)]  # offboard, then arm; once each
    assert link.diagnostics() == {
        "px4_request_offboard": "accepted after 1 send",
        "px4_request_arm": "accepted after 1 send",
    }
    fields = px4_link.OFFBOARD_REQUEST.fields(now_us=123, target_system=7, target_component=3, confirmation=1)
    assert (fields["param1"], fields["param2"], fields["target_system"], fields["target_component"]) == (1.0, 6.0, 7, 3)
    assert (fields["confirmation"], fields["from_external"], fields["timestamp"]) == (1, True, 123)
    assert px4_link.ARM_REQUEST.fields(now_us=0)["param1"] == 1.0
    assert (
        px4_link.ARM_REQUEST.fields(now_us=0)["target_system"],
        px4_link.ARM_REQUEST.fields(0)["target_component"],
    ) == (1, 1)


def test_a_refused_or_unanswered_request_is_sent_again_with_its_confirmation_counting() -> None:
    link = px4_link.OffboardLink(offboard=True, arm=True, staleness=0.05)
    stand_in = StandIn({176: [2, 0], 400: [None, 1, 0]})  # offboard: denied, accepted; arm: silence, busy, accepted
    _stream(link, 6.0, stand_in)
    sent = [(command, confirmation) for command, confirmation, _ in stand_in.received]
    assert sent == [(176, 0), (176, 1), (400, 0), (400, 1), (400, 2)]
    times = [t for *_, t in stand_in.received]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    # Again RETRY_AFTER_S after a refusal (gap 0) or an unanswered send (gap 2), at the next heartbeat (every 0.1 s);
    # the next request goes with the heartbeat after the acceptance.
    assert [round(gap, 6) for gap in gaps] == [0.5, 0.1, 0.5, 0.5]
    assert link.diagnostics() == {
        "px4_request_offboard": "accepted after 2 sends",
        "px4_request_arm": "accepted after 3 sends",
    }


def test_a_request_refused_every_time_gives_up_and_nothing_is_armed_after_it() -> None:
    link = px4_link.OffboardLink(offboard=True, arm=True, staleness=0.05)
    stand_in = StandIn({176: [2, 2, 2, 2, 2]})
    _stream(link, 8.0, stand_in)
    assert [(c, n) for c, n, _ in stand_in.received] == [(176, 0), (176, 1), (176, 2)]  # REQUEST_ATTEMPTS sends
    refused = link.gave_up()
    assert refused is not None and refused.request.name == "offboard"
    assert link.diagnostics()["px4_request_offboard"] == "gave up after 3 sends (last answer: denied)"
    assert link.diagnostics()["px4_request_arm"] == "waiting"


def test_an_ack_for_another_command_is_ignored() -> None:
    link = px4_link.OffboardLink(offboard=True, arm=False, staleness=0.05)
    _stream(link, 1.05, StandIn({176: [None]}))  # sent once, not answered yet
    assert link.on_ack(400, 0) == ""  # PX4 answering someone else's arm command
    assert link.diagnostics()["px4_request_offboard"] == "pending after 1 send"
    assert link.on_ack(176, 0) == "accepted"


def test_no_request_goes_out_during_a_fault() -> None:
    link = px4_link.OffboardLink(offboard=True, arm=False, staleness=0.05)
    _stream(link, 1.0)  # 10 heartbeats: none asks yet
    link.on_command(True, True, 1.0)  # the fault hold's setpoint: published, but a fault
    assert link.heartbeat_due(1.0) and link.requests(1.0) == []
    link.on_command(True, False, 1.01)
    assert link.heartbeat_due(1.01) and [r.name for r, _ in link.requests(1.01)] == ["offboard"]


# ------------------------------------------------------------------------------------------------ fault hold

GOOD = {"roll": 3.0, "pitch": -2.0, "yaw": 1.0, "thrust_body[2]": -0.6}


def _fly(hold: px4.FaultHold, link: px4_link.OffboardLink, faults: list[str], start: float = 0.0) -> list[tuple]:
    """One setpoint decision per 10 ms with the given faults; a heartbeat check every 100 ms: per step (time, the
    fields sent or None, heartbeat sent or None when not checked)."""
    out = []
    for step, fault in enumerate(faults):
        now = start + step * DT
        sent = hold.setpoint(GOOD, fault, now)
        link.on_command(sent is not None, bool(fault), now)
        beat = link.heartbeat_due(now) if step % 10 == 0 else None
        out.append((now, sent, beat))
    return out


def test_a_fault_sends_zero_rates_at_the_hover_thrust_for_the_hold_then_silence() -> None:
    hold, link = px4.FaultHold(0.2, 0.6, body_rates=True), px4_link.OffboardLink(False, False, staleness=0.05)
    steps = _fly(hold, link, [""] * 50 + ["stale observation: odom"] * 100)
    assert all(sent == GOOD for _, sent, _ in steps[:50])
    held = [sent for _, sent, _ in steps[50:70]]
    # The hold: 20 decisions (0.2 s at 100 Hz) of zero body rates at the hover thrust.
    expected = {"roll": 0.0, "pitch": 0.0, "yaw": 0.0, "thrust_body[0]": 0.0, "thrust_body[1]": 0.0}
    assert held == [{**expected, "thrust_body[2]": -0.6}] * 20
    assert all(sent is None for _, sent, _ in steps[70:])  # then silence: PX4's failsafe acts
    beats = [(t, beat) for t, _, beat in steps if beat is not None]
    assert [beat for t, beat in beats if 0.5 <= t < 0.7] == [True, True]  # the heartbeat goes on during the hold
    assert [beat for t, beat in beats if t >= 0.7] == [False] * 8  # and stops with the setpoints
    assert (hold.phase(0.55), hold.phase(0.75)) == ("hold", "silent")


def test_the_hold_restarts_after_good_setpoints_and_uses_the_hover_thrust_when_given() -> None:
    hold, link = px4.FaultHold(0.2, 0.45, body_rates=True), px4_link.OffboardLink(False, False, staleness=0.05)
    faults = [""] * 10 + ["e-stop"] * 30 + [""] * 10 + ["non-finite action"] * 30
    steps = _fly(hold, link, faults)
    held = [sent for _, sent, _ in steps if sent is not None and sent != GOOD]
    assert len(held) == 40 and {sent["thrust_body[2]"] for sent in held} == {-0.45}  # 2 holds of 20, at hover
    assert [sent is None for _, sent, _ in steps[30:40]] == [True] * 10


def test_without_a_known_thrust_or_for_other_setpoints_a_fault_is_silent_at_once() -> None:
    link = px4_link.OffboardLink(False, False, staleness=0.05)
    # No hover thrust: the last commanded thrust (here 0.6 up, but possibly 0 or full) is never reused.
    unknown = px4.FaultHold(0.2, 0.0, body_rates=True)
    assert all(sent is None for _, sent, _ in _fly(unknown, link, [""] * 5 + ["missing input: odom"] * 30)[5:])
    motors = px4.FaultHold(0.2, 0.5, body_rates=False)  # ActuatorMotors, thrust and torque, attitude
    assert [sent is None for _, sent, _ in _fly(motors, link, [""] * 5 + ["e-stop"] * 5)] == [False] * 5 + [True] * 5
    no_hold = px4.FaultHold(0.0, 0.5, body_rates=True)
    assert _fly(no_hold, link, ["e-stop"])[0][1] is None
    with pytest.raises(ValueError):
        px4.FaultHold(-0.1, 0.0, body_rates=True)


def test_the_profile_sets_the_hold() -> None:
    settings = load_profile("quadrotor_px4").px4
    assert settings is not None and (settings.fault_hold, settings.hover_thrust) == (0.3, 0.6)
    assert px4.DEFAULT_FAULT_HOLD == 0.2
    assert Px4Settings().motor_order == px4.PX4_QUAD_X_ORDER
    with pytest.raises(ProfileError, match="hover_thrust"):
        Px4Settings(hover_thrust=1.5)
    with pytest.raises(ProfileError, match="motor_order"):
        Px4Settings(motor_order=("front_right", "front_right", "back_left", "front_left"))


# ------------------------------------------------------------------------------------------------ motor order

# CA_ROTOR0..3 (PX, PY in m, FRD; KM), PX4 motors 1..4 = ActuatorMotors control[0..3].
PX4_GZ_X500 = ((0.13, 0.22, 0.05), (-0.13, -0.20, 0.05), (0.13, -0.22, -0.05), (-0.13, 0.20, -0.05))
PX4_GENERIC_QUAD_X = ((0.15, 0.15, 0.05), (-0.15, -0.15, 0.05), (0.15, -0.15, -0.05), (-0.15, 0.15, -0.05))


@pytest.mark.parametrize("geometry", [PX4_GZ_X500, PX4_GENERIC_QUAD_X], ids=["4001_gz_x500", "generic_quad_x"])
def test_the_motor_order_puts_each_rotor_where_px4_has_it(geometry: tuple) -> None:
    # Hand-worked: PX4 motor 1 at (+x, +y) FRD = front right, CCW (KM > 0); motor 2 (-x, -y) back left, CCW;
    # motor 3 (+x, -y) front left, CW; motor 4 (-x, +y) back right, CW.
    assert px4.PX4_QUAD_X_ORDER == ("front_right", "back_left", "front_left", "back_right")
    permutation = px4.motor_permutation(px4.PX4_QUAD_X_ORDER)
    assert permutation == (0, 2, 3, 1)
    frame = load_frame("px4_x500")  # robo_rl's rotors: FLU positions and spins (+1 ccw)
    for motor, (px, py, km) in enumerate(geometry):
        rotor = permutation[motor]
        x, y_left = frame.rotor_positions[rotor]
        assert (math.copysign(1, x), math.copysign(1, -y_left)) == (math.copysign(1, px), math.copysign(1, py))
        assert frame.spin_signs[rotor] == math.copysign(1, km)


def test_actuator_motors_fields_move_from_robo_rl_order_to_px4_order() -> None:
    permutation = px4.motor_permutation(px4.PX4_QUAD_X_ORDER)
    robo_rl = {"control[0]": 0.1, "control[1]": 0.2, "control[2]": 0.3, "control[3]": 0.4, "timestamp_sample": 5}
    # FR 0.1, BR 0.2, BL 0.3, FL 0.4 → PX4 motors FR, BL, FL, BR.
    assert px4.reorder_motors(robo_rl, permutation) == {
        "control[0]": 0.1,
        "control[1]": 0.3,
        "control[2]": 0.4,
        "control[3]": 0.2,
        "timestamp_sample": 5,
    }
    assert px4.reorder_motors({"control[4]": 1.0}, permutation) == {"control[4]": 1.0}
