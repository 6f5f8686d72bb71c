"""The single-track car model against hand-computed physics: straight-line acceleration, top speed, braking,
steady-state cornering (kinematic and with understeer), steering limits and standstill, with the throttle/brake
drive (`command_mode: throttle`); the ESC's speed loop is tested in test_speed_loop.py."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from robo_rl.sim.rc_car.dynamics import (
    STEER,
    VX,
    VY,
    YAW,
    YAW_RATE,
    CarModel,
    X,
    Y,
    drive_acceleration,
    integrate,
    magic_formula,
)
from robo_rl.sim.rc_car.params import CarParams, TireParams, load_car

DT, SUBSTEPS = 0.02, 4
DTYPE = torch.float64


def _throttle_car() -> CarParams:
    """The bundled car with the throttle/brake drive these tests check (the speed loop: test_speed_loop.py)."""
    return dataclasses.replace(load_car("f1tenth"), command_mode="throttle")


def _model(car: CarParams, n: int = 1) -> CarModel:
    return CarModel.nominal(car, n, "cpu", DTYPE)


def _run(
    car: CarParams, seconds: float, steer: float, drive: float, vx: float = 0.0, hold_speed: bool = False
) -> torch.Tensor:
    """States `(steps + 1, 7)` of one car from (0, 0) heading +x at `vx`, with constant commands; `hold_speed`
    resets vx to its start value before every control step (a perfect cruise control)."""
    model, state = _model(car), torch.zeros(7, 1, dtype=DTYPE)
    state[VX] = vx
    steer_t, drive_t = torch.full((1,), steer, dtype=DTYPE), torch.full((1,), drive, dtype=DTYPE)
    states = [state[:, 0].clone()]
    for _ in range(round(seconds / DT)):
        if hold_speed:
            state[VX] = vx
        state = integrate(state, steer_t, drive_t, model, DT, SUBSTEPS)
        states.append(state[:, 0].clone())
    return torch.stack(states)


def test_straight_line_acceleration_without_drag_matches_the_closed_form() -> None:
    # m dv/dt = F (1 - v / v_max) - R  =>  v = v_inf (1 - exp(-t / tau)), v_inf = v_max (1 - R / F), tau = m v_max / F
    car = dataclasses.replace(_throttle_car(), drag_coefficient=0.0)
    force, resistance = car.max_motor_force, car.rolling_resistance * car.mass * car.gravity
    v_inf, tau = car.max_speed * (1 - resistance / force), car.mass * car.max_speed / force
    states = _run(car, 3.0, steer=0.0, drive=1.0)
    for t in (0.5, 1.0, 3.0):
        state = states[round(t / DT)]
        decay = math.exp(-t / tau)
        v = v_inf * (1 - decay)
        assert state[VX].item() == pytest.approx(v, rel=5e-3)
        # Semi-implicit Euler moves with the updated speed: it leads the exact position by about h v / 2.
        assert state[X].item() == pytest.approx(v_inf * (t - tau * (1 - decay)), rel=2e-3, abs=DT / SUBSTEPS * v)
    assert states[:, [Y, YAW, VY, YAW_RATE]].abs().max() == 0.0  # straight ahead stays straight


def test_straight_line_acceleration_with_drag_matches_a_fine_integration_and_tops_out() -> None:
    car = _throttle_car()
    resistance = car.rolling_resistance * car.mass * car.gravity

    def acceleration(v: float) -> float:
        return (car.max_motor_force * (1 - v / car.max_speed) - resistance - car.drag_coefficient * v * v) / car.mass

    v, x, h = 0.0, 0.0, 1e-3  # RK4 on (x, v) by hand
    reference = {}
    for k in range(1, round(4.0 / h) + 1):
        k1v, k1x = acceleration(v), v
        k2v, k2x = acceleration(v + h / 2 * k1v), v + h / 2 * k1v
        k3v, k3x = acceleration(v + h / 2 * k2v), v + h / 2 * k2v
        k4v, k4x = acceleration(v + h * k3v), v + h * k3v
        v, x = v + h / 6 * (k1v + 2 * k2v + 2 * k3v + k4v), x + h / 6 * (k1x + 2 * k2x + 2 * k3x + k4x)
        if k % 1000 == 0:
            reference[round(k * h)] = (v, x)
    states = _run(car, 30.0, steer=0.0, drive=1.0)
    for t, (v_ref, x_ref) in reference.items():
        assert states[round(t / DT), VX].item() == pytest.approx(v_ref, rel=5e-3)
        assert states[round(t / DT), X].item() == pytest.approx(x_ref, rel=1e-2)
    # Top speed where the drive force falls to drag plus rolling resistance (CarParams.top_speed, closed form).
    assert states[-1, VX].item() == pytest.approx(car.top_speed, rel=1e-4)
    assert car.top_speed < car.max_speed


def test_full_brake_stops_the_car_within_the_hand_computed_time_and_never_reverses() -> None:
    car = _throttle_car()
    v0 = 6.0
    states = _run(car, 3.0, steer=0.0, drive=-1.0, vx=v0)
    stopped = int((states[:, VX] == 0).nonzero()[0])
    # Deceleration between (brake + rolling) / m (at rest) and the same plus drag at v0 / m.
    base = car.max_brake_force + car.rolling_resistance * car.mass * car.gravity
    slowest, fastest = v0 * car.mass / base, v0 * car.mass / (base + car.drag_coefficient * v0**2)
    assert fastest - DT <= stopped * DT <= slowest + DT
    assert states[stopped:, VX].abs().max() == 0.0 and torch.isfinite(states).all()
    distance = states[stopped, X].item()
    assert v0**2 / (2 * (base + car.drag_coefficient * v0**2) / car.mass) <= distance <= v0**2 / (2 * base / car.mass)


def test_a_standing_car_stays_finite_and_at_rest_under_random_steering_and_braking() -> None:
    car = _throttle_car()
    n = 64
    model, state = _model(car, n), torch.zeros(7, n, dtype=DTYPE)
    generator = torch.Generator().manual_seed(0)
    for _ in range(200):
        steer = (torch.rand(n, generator=generator, dtype=DTYPE) * 2 - 1) * 0.5
        drive = -torch.rand(n, generator=generator, dtype=DTYPE)  # brake or nothing
        state = integrate(state, steer, drive, model, DT, SUBSTEPS)
        assert torch.isfinite(state).all()
        assert state[[X, Y, YAW, VX, VY, YAW_RATE]].abs().max() == 0.0
    assert state[STEER].abs().max() <= car.max_steer


def test_random_driving_through_low_speeds_stays_finite_and_never_reverses() -> None:
    car = _throttle_car()
    n = 256
    model, state = _model(car, n), torch.zeros(7, n, dtype=DTYPE)
    generator = torch.Generator().manual_seed(1)
    for _ in range(300):
        steer = (torch.rand(n, generator=generator, dtype=DTYPE) * 2 - 1) * car.max_steer
        drive = torch.rand(n, generator=generator, dtype=DTYPE) * 1.2 - 0.7  # mostly slow, often stopping
        state = integrate(state, steer, drive, model, DT, SUBSTEPS)
        assert torch.isfinite(state).all() and (state[VX] >= 0).all()
        assert (state[YAW].abs() <= math.pi).all()
    assert (state[VX] > 0).any() and (state[VX] == 0).any()


@pytest.mark.parametrize("speed", [0.3, 0.45])
def test_low_speed_cornering_is_the_kinematic_bicycle(speed: float) -> None:
    car = dataclasses.replace(_throttle_car(), rolling_resistance=0.0, drag_coefficient=0.0)
    steer = 0.3
    final = _run(car, 2.0, steer=steer, drive=0.0, vx=speed)[-1]
    assert final[VX].item() == pytest.approx(speed, rel=1e-9)  # no tire forces, no drag: the speed stays
    yaw_rate = speed * math.tan(steer) / car.wheelbase
    assert final[YAW_RATE].item() == pytest.approx(yaw_rate, rel=1e-9)
    assert final[VY].item() == pytest.approx(car.lr * yaw_rate, rel=1e-9)


@pytest.mark.parametrize("speed", [3.0, 5.0])
def test_steady_state_cornering_follows_the_understeer_gradient(speed: float) -> None:
    car = _throttle_car()
    steer = 0.02  # small: linear tire range
    final = _run(car, 5.0, steer=steer, drive=0.0, vx=speed, hold_speed=True)[-1]
    gradient = car.understeer_gradient  # from the tire parameters: m (lr / C_f - lf / C_r) / L
    expected = speed * steer / (car.wheelbase + gradient * speed**2)
    assert final[YAW_RATE].item() == pytest.approx(expected, rel=1e-2)
    kinematic = speed * steer / car.wheelbase
    assert final[YAW_RATE].item() < kinematic * (1 - 0.5 * gradient * speed**2 / car.wheelbase)  # understeer shows


def test_positive_steering_turns_left_and_the_wheel_follows_at_the_servo_rate() -> None:
    car = _throttle_car()
    states = _run(car, 1.0, steer=1.0, drive=0.0, vx=3.0)  # command beyond the limit
    rate_limited = car.max_steer_rate * DT
    assert states[1, STEER].item() == pytest.approx(rate_limited)
    assert states[2, STEER].item() == pytest.approx(2 * rate_limited)
    assert states[-1, STEER].item() == pytest.approx(car.max_steer)
    assert states[-1, YAW_RATE].item() > 0 and states[-1, Y].item() > 0 and states[-1, YAW].item() > 0


def test_magic_formula_peaks_at_its_peak_force_and_has_the_cornering_stiffness_as_slope() -> None:
    tire = TireParams(b=4.0, c=1.5, e=0.0)
    peak = torch.tensor([20.0], dtype=DTYPE)
    slip_at_peak = math.tan(math.pi / (2 * tire.c)) / tire.b
    slips = torch.linspace(-1.0, 1.0, 20001, dtype=DTYPE)
    forces = magic_formula(slips, tire, peak)
    assert forces.max().item() == pytest.approx(20.0, rel=1e-9)
    assert slips[forces.argmax()].item() == pytest.approx(slip_at_peak, abs=1e-4)
    assert torch.equal(magic_formula(-slips, tire, peak), -forces)  # odd in the slip angle
    h = 1e-6
    slope = (magic_formula(torch.tensor([h], dtype=DTYPE), tire, peak) / h).item()
    assert slope == pytest.approx(tire.b * tire.c * 20.0, rel=1e-6)
    sharper = magic_formula(torch.tensor([0.8], dtype=DTYPE), TireParams(4.0, 1.5, -1.0), peak)
    assert sharper.item() < magic_formula(torch.tensor([0.8], dtype=DTYPE), tire, peak).item()  # E < 0: past the peak


def test_friction_and_mass_scale_the_peak_tire_forces_and_accelerations() -> None:
    car = _throttle_car()
    model = CarModel.nominal(car, 3, "cpu", DTYPE).scaled(
        torch.tensor([1.0, 1.0, 1.5], dtype=DTYPE), torch.tensor([1.0, 0.5, 1.0], dtype=DTYPE)
    )
    weight = model.friction * model.mass * car.gravity
    torch.testing.assert_close(model.front_peak, weight * car.lr / car.wheelbase)
    torch.testing.assert_close(model.front_peak + model.rear_peak, weight)
    assert model.front_peak[1].item() == pytest.approx(0.5 * model.front_peak[0].item())
    assert model.yaw_inertia[2].item() == pytest.approx(1.5 * car.yaw_inertia)
    # Heavier: slower off the line; less grip: the motor force is capped at mu m g.
    full = torch.ones(3, dtype=DTYPE)
    start = drive_acceleration(torch.zeros(3, dtype=DTYPE), full, model)
    assert start[0].item() == pytest.approx(car.max_motor_force / car.mass)
    assert start[2].item() == pytest.approx(car.max_motor_force / (1.5 * car.mass))
    assert start[1].item() == pytest.approx(0.5 * car.friction * car.gravity)
