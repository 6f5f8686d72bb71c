"""Standard errors one can trust: on logs from simulators with different motor models, every fitted parameter lies
within 2 reported standard errors of the truth, or the fit refuses naming the parameter.

The simulators: L2F (PyPI l2f, Learning to Fly's Crazyflie: motors first order in the command with separate rise
and fall constants); RotorPy (PyPI rotorpy, its Crazyflie: motors first order in rotor speed with one constant,
thrust k_eta w^2, rotor drag and induced inflow that robo_rl's model leaves out, its own IMU); and the reference
quadrotor (reference_quadrotor.py) with rotor-speed motors that spin down at a rate proportional to their speed.
The motor model's interval means are checked against SciPy's solve_ivp.
"""

from __future__ import annotations

from dataclasses import replace
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from robo_rl.sysid import Airframe, FlightLog, Identification, NotIdentifiable, identify
from robo_rl.sysid.excitation import ExcitationPlan, fly_excitation
from robo_rl.sysid.motor_response import motor_response, motor_response_numpy


def _z_scores(fit: Identification, truth: dict[str, Any]) -> dict[str, float]:
    """(fitted - true) / standard error of every fitted parameter."""
    pairs = {
        "motor_rise_time_constant": (fit.motor_rise_time_constant, truth["motor_rise_time_constant"]),
        "motor_fall_time_constant": (fit.motor_fall_time_constant, truth["motor_fall_time_constant"]),
        **{f"inertia[{i}]": (fit.inertia[i], truth["inertia"][i]) for i in range(3)},
        **{f"thrust_curve[{i}]": (fit.thrust_curve[i], truth["thrust_curve"][i]) for i in range(3)},
    }
    if fit.motor_idle_speed is not None:
        pairs["motor_idle_speed"] = (fit.motor_idle_speed, truth.get("motor_idle_speed", 1.0))
    return {name: (e.value - true) / e.standard_error for name, (e, true) in pairs.items()}


def _thrust_within(fit: Identification, truth: dict[str, Any], errors: float) -> bool:
    """The thrust over the commands flown within `errors` of its reported relative standard error."""
    u = np.linspace(*fit.command_range, 11)
    fitted = np.polynomial.polynomial.polyval(u, [e.value for e in fit.thrust_curve])
    true = np.polynomial.polynomial.polyval(u, truth["thrust_curve"])
    return bool(np.max(np.abs(fitted / true - 1)) <= errors * fit.thrust_uncertainty)


def test_l2f_s_crazyflie_every_parameter_within_two_standard_errors(flights: ModuleType) -> None:
    pytest.importorskip("l2f", reason="L2F (PyPI l2f) is not installed")
    log, truth = flights.l2f_flight(seconds=40.0)
    fit = identify(log, Airframe.from_fields(flights.BASE))
    assert fit.motor_model == "command"
    z = _z_scores(fit, truth)
    assert max(abs(v) for v in z.values()) <= 2.0, z
    assert _thrust_within(fit, truth, 2.0)
    # and within a few percent: the thrust over the commands flown, the motor constants and the inertia
    u = np.linspace(*fit.command_range, 11)
    fitted = np.polynomial.polynomial.polyval(u, [e.value for e in fit.thrust_curve])
    assert np.max(np.abs(fitted / np.polynomial.polynomial.polyval(u, truth["thrust_curve"]) - 1)) < 0.03
    assert fit.motor_rise_time_constant.value == pytest.approx(truth["motor_rise_time_constant"], rel=0.05)
    assert fit.motor_fall_time_constant.value == pytest.approx(truth["motor_fall_time_constant"], rel=0.05)
    assert [e.value for e in fit.inertia] == pytest.approx(truth["inertia"], rel=0.05)


@pytest.mark.parametrize("vehicle", ["crazyflie", "crazyfliebrushless"])
def test_rotorpy_s_crazyflies_with_rotor_drag_every_parameter_within_two_standard_errors(
    vehicle: str, flights: ModuleType
) -> None:
    """RotorPy's Crazyflie 2.x and its Crazyflie 2.1 Brushless (44 g, 3.6 times its weight in thrust, ten times
    the rotor drag)."""
    pytest.importorskip("rotorpy", reason="RotorPy (PyPI rotorpy) is not installed")
    log, truth, base = flights.rotorpy_flight(seconds=40.0, aero=True, vehicle=vehicle)
    fit = identify(log, Airframe.from_fields(base))
    # RotorPy's motors have one constant: robo_rl's command model (idle 1) is the simplest the log cannot tell
    # from the best, with the aerodynamic terms (RotorPy's rotor drag and induced inflow)
    assert fit.motor_model == "command" and fit.aerodynamics
    z = _z_scores(fit, truth)
    assert max(abs(v) for v in z.values()) <= 2.0, z
    assert _thrust_within(fit, truth, 2.0)
    # robo_rl's model alone leaves the rotor drag in the residual: the log tells it from the aerodynamic ones
    assert "command" not in fit.candidates and "rotor_speed" not in fit.candidates


def _speed_fields(reference: ModuleType) -> dict[str, Any]:
    idle, top = 0.35, 0.1
    return {
        **reference.TRUE_FIELDS,
        "motor_model": "rotor_speed",
        "motor_idle_speed": idle,
        "thrust_curve": [top * idle**2, 2 * top * idle * (1 - idle), top * (1 - idle) ** 2],  # quadratic in speed
        "motor_rise_time_constant": 0.04,
        "motor_fall_time_constant": 0.06,
    }


def test_rotor_speed_motors_are_chosen_and_every_parameter_within_two_standard_errors(reference: ModuleType) -> None:
    fields = _speed_fields(reference)
    log = reference.reference_flight(ExcitationPlan(seconds=60.0), noise=1.0, fields=fields)
    fit = identify(log, Airframe.from_fields(reference.BASE_FIELDS))
    assert fit.motor_model == "rotor_speed" and fit.motor_idle_speed is not None
    z = _z_scores(fit, fields)
    assert max(abs(v) for v in z.values()) <= 2.0, z
    assert fit.fields()["motor_idle_speed"] == fit.motor_idle_speed.value
    # the command model on the same log: its fall constant is off by far more than its own errors say
    assert "command" not in fit.candidates


def _sagging_flight(reference: ModuleType, sag: float) -> FlightLog:
    """The reference quadrotor whose thrust falls by `sag` over the minute (a battery running down), with noise."""
    sim = reference.ReferenceQuadrotor(reference.TRUE_FIELDS)
    curve, forces, steps = sim.curve.copy(), [sim.specific_force()], [0]

    def step(commands: np.ndarray) -> np.ndarray:
        steps[0] += 1
        sim.curve = curve * (1.0 - sag * steps[0] / 6000)
        state = sim.step(commands)
        forces.append(sim.specific_force())
        return state

    log = fly_excitation(step, sim.state[:13].copy(), reference.BASE_FIELDS, ExcitationPlan(seconds=60.0))
    rng = np.random.default_rng(0)
    return replace(
        log,
        body_rates=log.body_rates + 0.01 * rng.standard_normal(log.body_rates.shape),
        specific_force=np.array(forces) + 0.05 * rng.standard_normal((len(log), 3)),
    )


def test_a_model_that_does_not_hold_widens_the_errors_or_refuses(reference: ModuleType) -> None:
    base = Airframe.from_fields(reference.BASE_FIELDS)
    fit = identify(_sagging_flight(reference, 0.03), base)  # 3 %: widened to cover the truth
    z = _z_scores(fit, reference.TRUE_FIELDS)
    assert max(abs(z[k]) for k in z if not k.startswith("thrust")) <= 2.0, z
    with pytest.raises(NotIdentifiable, match="the model misses something this log shows") as info:
        identify(_sagging_flight(reference, 0.1), base)  # 10 %: refused, naming the parameter
    assert "cannot identify motor_" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("idle", [None, 0.0, 0.4])
def test_motor_response_against_scipy(idle: float | None) -> None:
    rng = np.random.default_rng(3)
    commands = rng.random((40, 2))
    dt = np.full(39, 0.01)
    rise, fall = 0.03, 0.08
    ours_u, ours_u2 = motor_response(
        commands, dt, np.array([rise]), np.array([fall]), None if idle is None else np.array([idle])
    )
    numpy_u, numpy_u2 = motor_response_numpy(
        commands, dt, np.array([rise]), np.array([fall]), None if idle is None else np.array([idle])
    )
    np.testing.assert_allclose(ours_u, numpy_u, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ours_u2, numpy_u2, rtol=1e-12, atol=1e-14)
    shape = 1.0 if idle is None else idle
    for rotor in range(2):
        u = commands[0, rotor]
        for k in range(39):
            c = commands[k, rotor]

            def rate(_: float, y: np.ndarray, c: float = c) -> list[float]:
                speed = (c - y[0]) / rise if c >= y[0] else (c - y[0]) * (shape + (1 - shape) * y[0]) / fall
                return [speed, y[0], y[0] ** 2]

            solution = solve_ivp(rate, (0.0, 0.01), [u, 0.0, 0.0], rtol=1e-11, atol=1e-13)
            assert ours_u[0, k, rotor] == pytest.approx(solution.y[1, -1] / 0.01, abs=1e-9)
            assert ours_u2[0, k, rotor] == pytest.approx(solution.y[2, -1] / 0.01, abs=1e-9)
            u = solution.y[0, -1]
