"""Changes in flight (robo_rl.sim.quadrotor.events): a payload and a weakened motor, against Newton-Euler worked by
hand from the frame file (crazyflie_2_1, L2F's identified Crazyflie: rotor 0 front-right at (+d, -d), d = arm / sqrt 2,
spinning ccw seen from above, so its reaction torque is clockwise, -k f; params.py states the layout)."""

from __future__ import annotations

import math

import pytest
import torch

from robo_rl.sim.quadrotor.events import FlightEvent
from robo_rl.sim.quadrotor.hover import QuadrotorHover
from robo_rl.sim.quadrotor.hover_config import HoverConfig
from robo_rl.sim.quadrotor.params import load_frame

STILL = {"init_position_range": 0.0, "init_attitude_range": 0.0, "init_velocity_range": 0.0}
STILL |= {"init_angular_velocity_range": 0.0}
DT = 0.01


def _hover_env(event: FlightEvent) -> QuadrotorHover:
    env = QuadrotorHover(1, config=HoverConfig(event=event, **STILL), seed=0)
    env.reset(seed=0)
    return env


def _step(env: QuadrotorHover) -> torch.Tensor:
    before = env.state[0].clone()
    env.step(torch.tensor([env.nominal_action]))
    return (env.state[0] - before) / DT  # the mean rate of change over the step


def test_a_payload_of_30_percent_makes_the_hover_thrust_sink_at_g_over_13_tenths_minus_g() -> None:
    env = _hover_env(FlightEvent(time=0.05, mass_scale=1.3))
    for _ in range(5):  # t = 0 .. 0.04 s: before the event, the hover command holds the height
        assert abs(float(_step(env)[9])) < 1e-3
    g = load_frame("crazyflie_2_1").gravity
    assert float(_step(env)[9]) == pytest.approx(g * (1 / 1.3 - 1), rel=2e-3)  # thrust = weight before the payload


def test_a_front_right_motor_at_80_percent_rolls_right_pitches_nose_down_and_yaws_left() -> None:
    frame = load_frame("crazyflie_2_1")
    env = _hover_env(FlightEvent(time=0.0, motor=0, motor_scale=0.8))
    rate = _step(env)
    f = frame.weight / 4  # each rotor's thrust at the hover command
    lost = -0.2 * f
    d = frame.arm_length / math.sqrt(2)
    ixx, iyy, izz = frame.inertia
    # roll = y_0 dF / Ixx with y_0 = -d; pitch = -x_0 dF / Iyy with x_0 = +d; yaw: ccw rotor -> -k dF / Izz
    expected = (-d * lost / ixx, -d * lost / iyy, -frame.torque_to_thrust * lost / izz)
    for axis, value in enumerate(expected):
        assert float(rate[10 + axis]) == pytest.approx(value, rel=2e-2)
    assert float(rate[10]) > 0 and float(rate[11]) > 0 and float(rate[12]) > 0  # the signs, stated physically
    assert float(rate[9]) == pytest.approx(lost / frame.mass, rel=2e-2)  # a quarter of 20 % of the lift lost


def test_nothing_changes_before_the_event_or_without_one() -> None:
    late = _hover_env(FlightEvent(time=1.0, mass_scale=1.3, motor=2, motor_scale=0.8))
    none = QuadrotorHover(1, config=HoverConfig(**STILL), seed=0)
    none.reset(seed=0)
    for _ in range(20):
        late_rate, none_rate = _step(late), _step(none)
        torch.testing.assert_close(late_rate, none_rate)


def test_the_numba_step_refuses_an_event() -> None:
    with pytest.raises(ValueError, match="no flight event"):
        HoverConfig(event=FlightEvent(mass_scale=1.3), backend="numba")
