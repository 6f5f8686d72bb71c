"""The RC car's speed command reaches the simulated ESC as sent: profile → sim_bridge → speed loop, no inverse map.

A real sim_bridge node (rclpy) on the rc_car profile receives the profile's own command messages; the simulator's
ESC setpoint must be the m/s in the message (not a throttle derived from it), and the car must then move as the
speed loop of `robo_rl.sim.rc_car` (f1tenth: 5 m/s^2 acceleration limit, 8 m/s^2 braking limit, 50 Hz steps).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

DT = 0.02
MAX_ACCELERATION, MAX_DECELERATION = 5.0, 8.0  # sim/rc_car/cars/f1tenth.yaml


@pytest.mark.parametrize(
    ("command_type", "topic"),
    [("ackermann_msgs/msg/AckermannDriveStamped", "drive"), ("geometry_msgs/msg/Twist", "cmd_vel")],
)
def test_a_commanded_speed_is_the_simulated_esc_setpoint_and_the_car_follows_it(
    ros_scenario: Callable[..., dict[str, Any]], command_type: str, topic: str
) -> None:
    result = ros_scenario("scenario_car_setpoint.py", command_type, "1.5", "-1.0")
    assert result["topic"] == topic and result["crashes"] == 0
    forward, reverse = result["cases"]
    # The setpoint is the message's m/s (float32 rounding aside): drive = 1.5 / 5 went in, 5 * drive came out.
    assert forward["setpoint"] == pytest.approx(1.5, rel=1e-6) and forward["drive"] == pytest.approx(0.3, rel=1e-6)
    assert reverse["setpoint"] == pytest.approx(-1.0, rel=1e-6)
    # From about 0.6 m/s toward 1.5 m/s: (1.5 - v) / tau is above the limit, so the speed grows at exactly 5 m/s^2
    # until the first-order approach takes over; it never overshoots.
    speeds = forward["vx"]
    steps = [b - a for a, b in itertools.pairwise(speeds)]
    assert steps[0] == pytest.approx(MAX_ACCELERATION * DT, abs=1e-4)
    assert all(0 < s <= MAX_ACCELERATION * DT + 1e-5 for s in steps) and max(speeds) < 1.5
    # -1 m/s while rolling forward: the ESC brakes at 8 m/s^2 down to 0, then reverses (no throttle model would).
    speeds = reverse["vx"]
    steps = [b - a for a, b in itertools.pairwise(speeds)]
    assert steps[0] == pytest.approx(-MAX_DECELERATION * DT, abs=1e-4)
    assert speeds[-1] < 0 and min(speeds) > -1.0
