"""PX4 offboard rules (robo_rl.real.px4), from PX4's user guide "Offboard mode": OffboardControlMode above 2 Hz with
the flag of the setpoint being sent; the mode switch and arming are VehicleCommands (176 DO_SET_MODE with custom
main mode 6 = offboard; 400 COMPONENT_ARM_DISARM with param1 1 = arm) sent only after the setpoint stream runs."""

from __future__ import annotations

import pytest

from robo_rl.real import px4


def test_the_heartbeat_flag_follows_the_setpoint_type() -> None:
    rates = px4.offboard_mode("px4_msgs/msg/VehicleRatesSetpoint")
    assert rates["body_rate"] and sum(rates.values()) == 1
    assert px4.offboard_mode("px4_msgs/msg/ActuatorMotors")["direct_actuator"]
    with pytest.raises(ValueError, match="not a PX4 offboard setpoint"):
        px4.offboard_mode("px4_msgs/msg/VehicleOdometry")
    assert px4.HEARTBEAT_HZ > 2


def test_timestamps_are_microseconds() -> None:
    assert px4.timestamp_us(1_700_000_123_456_789) == 1_700_000_123_456


def _stream(link: px4.OffboardLink, seconds: float, fault: str = "", start: float = 0.0) -> tuple[int, list]:
    """Setpoint decisions at 100 Hz and heartbeats at 10 Hz for `seconds`: (heartbeats sent, requests sent)."""
    beats, requests = 0, []
    for step in range(round(seconds * 100)):
        now = start + step * 0.01
        link.on_command(fault, now)
        if step % 10 == 0 and link.heartbeat_due(now):
            beats += 1
            requests += link.requests()
    return beats, requests


def test_nothing_arms_or_switches_mode_unless_asked() -> None:
    link = px4.OffboardLink(offboard=False, arm=False, staleness=0.05)
    beats, requests = _stream(link, 5.0)
    assert beats == 50 and requests == []


def test_requests_follow_one_second_of_setpoints_and_go_once() -> None:
    link = px4.OffboardLink(offboard=True, arm=True, staleness=0.05)
    beats, requests = _stream(link, 0.95)
    assert beats == 10 and requests == []  # 10 heartbeats: 0.9 s of stream, not yet enough
    beats, requests = _stream(link, 5.0, start=0.96)
    assert [r.command for r in requests] == [px4.VEHICLE_CMD_DO_SET_MODE, px4.VEHICLE_CMD_COMPONENT_ARM_DISARM]
    fields = requests[0].fields(now_us=123)
    assert (fields["param1"], fields["param2"], fields["target_system"], fields["from_external"]) == (1.0, 6.0, 1, True)
    assert requests[1].fields(now_us=123)["param1"] == 1.0 and fields["timestamp"] == 123


def test_a_fault_stops_setpoints_and_the_heartbeat() -> None:
    link = px4.OffboardLink(offboard=False, arm=False, staleness=0.05)
    assert link.on_command("", 0.0) and link.heartbeat_due(0.01)
    assert not link.on_command("stale observation: odom", 0.02)  # the setpoint is not published
    assert not link.heartbeat_due(0.03)  # nor the heartbeat: PX4's offboard-loss failsafe takes over
    assert link.on_command("", 0.04) and link.heartbeat_due(0.05)
    assert not link.heartbeat_due(0.2)  # no setpoint decision for longer than the staleness: silent too
