"""The car's ESC speed loop (`command_mode: speed`, the default) against hand-computed responses.

The model (robo_rl.sim.rc_car.equations.esc_acceleration): setpoint = clip(drive * speed_scale, -max_reverse_speed,
speed_scale); over each substep h the speed moves as the exact first-order step v_set + (v - v_set) exp(-h / tau),
its change limited to max_acceleration * h while |v| grows and max_deceleration * h while braking. The bundled
f1tenth car: speed_scale 5 m/s, max_reverse_speed 2 m/s, tau 0.15 s, 5 m/s^2 and 8 m/s^2, 20 ms latency plus 20 ms
of the loop's dead time. The numbers below are worked by hand from those.

The qualitative behaviour follows the VESC firmware (vedderb/bldc, motor/mcpwm_foc.c `run_pid_control_speed`, as
indexed in 2026): the speed PID's output, clipped to [-1, 1], is the motor current as a fraction of the current
limit, so the acceleration is bounded; with `s_pid_allow_braking` (true by default, MCCONF_S_PID_ALLOW_BRAKING in
mcconf_default.h) a setpoint below the speed gives a negative current, braking the car and then driving it in
reverse. A setpoint 0 is modelled as an active stop; the firmware's `s_pid_min_erpm` dead band (setpoints below it
reset the PID and skip its update) is not modelled.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import pytest
import torch

from robo_rl.sim.rc_car import RaceConfig, RCCarRace
from robo_rl.sim.rc_car.dynamics import STEER, VX, YAW, CarModel, X, integrate
from robo_rl.sim.rc_car.params import CarParams, load_car

DT, SUBSTEPS = 0.02, 4
H = DT / SUBSTEPS
DTYPE = torch.float64


def _speeds(car: CarParams, drive: float, seconds: float, vx: float = 0.0) -> list[float]:
    """Forward speeds at every control step (from t = 0) of a car driving straight with a constant drive."""
    model, state = CarModel.nominal(car, 1, "cpu", DTYPE), torch.zeros(7, 1, dtype=DTYPE)
    state[VX] = vx
    steer, command = torch.zeros(1, dtype=DTYPE), torch.full((1,), drive, dtype=DTYPE)
    speeds = [vx]
    for _ in range(round(seconds / DT)):
        state = integrate(state, steer, command, model, DT, SUBSTEPS)
        speeds.append(state[VX].item())
    return speeds


def _at(speeds: list[float], t: float) -> float:
    return speeds[round(t / DT)]


def test_the_bundled_car_takes_a_speed_setpoint_with_the_profile_s_scale() -> None:
    car = load_car("f1tenth")
    assert car.command_mode == "speed" and car.speed_scale == 5.0  # real/profiles/rc_car.yaml: speed = 5 * drive
    assert (car.max_reverse_speed, car.speed_time_constant, car.speed_loop_delay) == (2.0, 0.15, 0.02)
    assert (car.max_acceleration, car.max_deceleration) == (5.0, 8.0)
    assert car.speed_scale < car.top_speed  # the drivetrain could go faster: the ESC's limit binds
    with pytest.raises(ValueError, match="command_mode"):
        dataclasses.replace(car, command_mode="duty_cycle")
    with pytest.raises(ValueError, match="top speed"):
        dataclasses.replace(car, speed_scale=12.0)


def test_full_drive_from_rest_accelerates_at_the_limit_then_approaches_the_setpoint_without_overshoot() -> None:
    car = load_car("f1tenth")
    speeds = _speeds(car, drive=1.0, seconds=4.0)
    # (5 - v) / tau exceeds 5 m/s^2 until v is within about 0.75 m/s of 5: v = a t, exactly, up to then.
    for t in (0.1, 0.5, 0.8):
        assert _at(speeds, t) == pytest.approx(5.0 * t, abs=1e-9)
    # Past that the first-order tail: monotone, below the setpoint, and within 1 mm/s after 4 s.
    assert all(b >= a for a, b in itertools.pairwise(speeds)) and max(speeds) < 5.0
    assert _at(speeds, 4.0) == pytest.approx(5.0, abs=1e-3)
    # Drive beyond the scale asks for no more than 5 m/s (the ESC's limit).
    assert _speeds(car, drive=1.0, seconds=1.0) == _speeds(car, drive=3.0, seconds=1.0)


def test_a_small_step_is_the_first_order_response() -> None:
    car = load_car("f1tenth")
    # From 2 to 2.5 m/s: 0.5 / 0.15 = 3.3 m/s^2 < 5, the limit never binds: v = 2.5 - 0.5 exp(-t / tau).
    speeds = _speeds(car, drive=0.5, seconds=1.0, vx=2.0)
    for t in (0.02, 0.1, 0.3, 1.0):
        assert _at(speeds, t) == pytest.approx(2.5 - 0.5 * math.exp(-t / 0.15), abs=1e-12)


def test_a_negative_setpoint_brakes_at_its_limit_then_reverses_at_the_acceleration_limit() -> None:
    car = load_car("f1tenth")
    # 3.01 m/s, setpoint -2 m/s (drive -0.4): the loop asks for |error| / tau, at least 2 / 0.15 = 13 m/s^2 here,
    # so braking runs at the 8 m/s^2 limit for 75 substeps of 5 ms down to 0.01 m/s; the 76th still brakes (v > 0
    # at its start): 0.01 - 0.04 = -0.03; from then reverse at 5 m/s^2, -0.025 a substep: at t = 0.4 s (80
    # substeps) v = -0.03 - 4 * 0.025 = -0.13.
    speeds = _speeds(car, drive=-0.4, seconds=3.0, vx=3.01)
    assert _at(speeds, 0.2) == pytest.approx(3.01 - 8.0 * 0.2, abs=1e-9)
    assert _at(speeds, 0.4) == pytest.approx(-0.13, abs=1e-9)
    assert _at(speeds, 3.0) == pytest.approx(-2.0, abs=1e-4) and min(speeds) >= -2.0
    # Full reverse asks for no more than the ESC's 2 m/s.
    assert _speeds(car, drive=-1.0, seconds=3.0, vx=3.01) == speeds


def test_setpoint_zero_stops_the_car_actively_where_throttle_zero_coasts() -> None:
    car = load_car("f1tenth")
    # From 4 m/s: 8 m/s^2 until the first-order tail takes over near 1.2 m/s (8 * tau), then exp(-t / tau).
    speeds = _speeds(car, drive=0.0, seconds=2.0, vx=4.0)
    assert _at(speeds, 0.2) == pytest.approx(4.0 - 8.0 * 0.2, abs=1e-9)
    assert 0.0 <= _at(speeds, 2.0) < 1e-3
    coasting = _speeds(dataclasses.replace(car, command_mode="throttle"), drive=0.0, seconds=2.0, vx=4.0)
    assert _at(coasting, 2.0) > 3.0  # only drag and rolling resistance


def test_heavier_cars_accelerate_less_and_low_grip_caps_the_loop() -> None:
    car = load_car("f1tenth")
    model = CarModel.nominal(car, 3, "cpu", DTYPE).scaled(
        torch.tensor([1.0, 1.25, 1.0], dtype=DTYPE), torch.tensor([1.0, 1.0, 0.3], dtype=DTYPE)
    )
    state = torch.zeros(7, 3, dtype=DTYPE)
    state = integrate(state, torch.zeros(3, dtype=DTYPE), torch.ones(3, dtype=DTYPE), model, DT, SUBSTEPS)
    # 5 m/s^2 for the nominal car, 5 / 1.25 for 25 % more mass (the ESC limits force), 0.3 mu g with 30 % grip.
    expected = torch.tensor([5.0, 4.0, 0.3 * car.friction * car.gravity], dtype=DTYPE) * DT
    torch.testing.assert_close(state[VX], expected, atol=1e-12, rtol=0)


@pytest.mark.parametrize("backend", ["torch", "numba"])
def test_the_race_applies_the_drive_after_latency_and_the_loop_s_dead_time(backend: str) -> None:
    if backend == "numba":
        pytest.importorskip("numba")
    env = RCCarRace(1, config=RaceConfig(track="oval", backend=backend), seed=0)  # type: ignore[arg-type]
    track = env.track
    s = torch.tensor([5.0])  # the top straight
    state = torch.zeros(1, 7)
    state[0, X:YAW], state[0, YAW] = track.point_at(s)[0], track.heading_at(s)[0]
    env.set_state(state)
    speeds, steers, setpoints = [], [], []
    for _ in range(6):
        env.step(torch.tensor([[0.1, 1.0]]))
        speeds.append(env.state[0, VX].item())
        steers.append(env.state[0, STEER].item())
        setpoints.append(env.speed_setpoint[0].item())
    # The steering acts after the 20 ms latency, the drive after 20 ms more (the loop's dead time): two steps of the
    # initial setpoint 0 (the car stays at rest), then 5 m/s^2 for 20 ms per step.
    assert setpoints == [0.0, 0.0, 5.0, 5.0, 5.0, 5.0]
    assert speeds == pytest.approx([0.0, 0.0, 0.1, 0.2, 0.3, 0.4], abs=1e-5)
    assert steers[0] == 0.0 and steers[1] > 0.0
    assert env.actuator.mode == "speed" and env.actuator.scale == 5.0
    assert env.actuator.delay == pytest.approx(0.04)
