"""robo_rl.sysid.fit on logs of the reference quadrotor (conftest.py): the parameters come back, and a log that
cannot tell one is refused with one line naming it."""

from __future__ import annotations

import math
from dataclasses import replace
from types import ModuleType

import numpy as np
import pytest

from robo_rl.sysid import Airframe, FlightLog, NotIdentifiable, identify
from robo_rl.sysid.airframe import ROTOR_SIGNS_XY
from robo_rl.sysid.excitation import ExcitationPlan
from robo_rl.sysid.motor_response import motor_response


def _base(reference: ModuleType) -> Airframe:
    return Airframe.from_fields(reference.BASE_FIELDS)


def test_motor_response_against_hand_values() -> None:
    # a step 0 -> 1 with tau = dt = 0.1 s: u(dt) = 1 - e^-1, mean over the interval = 1 - (1 - e^-1) = e^-1
    commands = np.array([[0.0], [1.0], [1.0]])
    mean_u, mean_u2 = motor_response(commands, np.array([0.1, 0.1]), np.array([0.1]), np.array([0.5]))
    assert mean_u[0, 0, 0] == 0.0 and mean_u[0, 1, 0] == pytest.approx(math.exp(-1))
    # mean of (1 - e^{-t/tau})^2 over one tau: 1 - 2 (1 - e^-1) + (1 - e^-2) / 2
    assert mean_u2[0, 1, 0] == pytest.approx(1 - 2 * (1 - math.exp(-1)) + (1 - math.exp(-2)) / 2)
    # falling from 1 to 0 uses the fall constant: mean = tau/dt (1 - e^{-dt/tau}) with tau = 0.5
    mean_u, _ = motor_response(np.array([[1.0], [0.0]]), np.array([0.1]), np.array([0.1]), np.array([0.5]))
    assert mean_u[0, 0, 0] == 1.0
    mean_u, _ = motor_response(np.array([[1.0], [0.0], [0.0]]), np.array([0.1, 0.1]), np.array([0.1]), np.array([0.5]))
    assert mean_u[0, 1, 0] == pytest.approx(5 * (1 - math.exp(-0.2)))


def test_the_rotor_layout_is_the_simulator_s() -> None:
    from robo_rl.sim.quadrotor import params

    assert ROTOR_SIGNS_XY == params.ROTOR_SIGNS_XY


def test_recovers_the_reference_quadrotor_from_a_noisy_excitation_flight(
    excited_log: FlightLog, reference: ModuleType
) -> None:
    TRUE_FIELDS = reference.TRUE_FIELDS
    fit = identify(excited_log, _base(reference))
    assert fit.thrust_signal == "accelerometer"
    # thrust over the commands flown within 1 %; curvature within 2 %
    u = np.linspace(*fit.command_range, 11)
    fitted = np.polynomial.polynomial.polyval(u, [e.value for e in fit.thrust_curve])
    true = np.polynomial.polynomial.polyval(u, TRUE_FIELDS["thrust_curve"])
    assert np.max(np.abs(fitted / true - 1)) < 0.01
    assert fit.thrust_curve[2].value == pytest.approx(TRUE_FIELDS["thrust_curve"][2], rel=0.02)
    # motor constants and inertia within 2 %, each within a few of its standard errors of the truth
    assert fit.motor_rise_time_constant.value == pytest.approx(TRUE_FIELDS["motor_rise_time_constant"], rel=0.02)
    assert fit.motor_fall_time_constant.value == pytest.approx(TRUE_FIELDS["motor_fall_time_constant"], rel=0.02)
    for estimate, true_value in zip(fit.inertia, TRUE_FIELDS["inertia"], strict=True):
        assert estimate.value == pytest.approx(true_value, rel=0.02)
        assert estimate.standard_error < 0.01 * true_value
    assert fit.acceleration_rms < 0.05 * fit.acceleration_spread


def test_the_velocity_path_recovers_them_from_noise_free_velocities(reference: ModuleType) -> None:
    TRUE_FIELDS = reference.TRUE_FIELDS
    log = reference.reference_flight(ExcitationPlan(seconds=30.0))
    fit = identify(replace(log, specific_force=None), _base(reference))
    assert fit.thrust_signal == "velocity"
    assert fit.motor_rise_time_constant.value == pytest.approx(TRUE_FIELDS["motor_rise_time_constant"], rel=0.02)
    assert fit.motor_fall_time_constant.value == pytest.approx(TRUE_FIELDS["motor_fall_time_constant"], rel=0.02)
    assert fit.inertia[0].value == pytest.approx(TRUE_FIELDS["inertia"][0], rel=0.02)


def test_a_hover_log_is_refused_naming_the_thrust_curve(hover_log: FlightLog, reference: ModuleType) -> None:
    with pytest.raises(NotIdentifiable, match="cannot identify thrust_curve: the motor commands span only") as info:
        identify(hover_log, _base(reference))
    assert "\n" not in str(info.value)


def test_commands_that_never_fall_cannot_identify_the_fall_constant(reference: ModuleType) -> None:
    sim = reference.ReferenceQuadrotor(reference.TRUE_FIELDS)
    count = 1200  # 12 s of open-loop steps up, 0.02 every 0.5 s
    commands = 0.5 + 0.02 * np.floor(np.arange(count) / 50.0)[:, None] * np.ones(4)
    states = [sim.state[:13].copy()]
    forces = [sim.specific_force()]
    for k in range(count - 1):
        states.append(sim.step(commands[k]))
        forces.append(sim.specific_force())
    s = np.array(states)
    time = np.arange(count) * 0.01
    log = FlightLog(time, s[:, :3], s[:, 3:7], s[:, 7:10], s[:, 10:13], commands, np.array(forces), "stairs")
    with pytest.raises(NotIdentifiable, match="cannot identify motor_fall_time_constant: the commands never step"):
        identify(log, _base(reference))


def test_no_yaw_excitation_cannot_identify_izz(reference: ModuleType) -> None:
    log = reference.reference_flight(ExcitationPlan(seconds=30.0, axes=("collective", "roll", "pitch")), noise=1.0)
    with pytest.raises(NotIdentifiable, match="cannot identify inertia Izz"):
        identify(log, _base(reference))


def test_short_and_non_finite_logs_are_refused(excited_log: FlightLog, reference: ModuleType) -> None:
    short = FlightLog(*(a[:500] for a in _arrays(excited_log)), source=excited_log.source)
    with pytest.raises(NotIdentifiable, match="too short"):
        identify(short, _base(reference))
    rates = excited_log.body_rates.copy()
    rates[100, 1] = np.nan
    with pytest.raises(NotIdentifiable, match="body_rates is not finite at sample 100"):
        identify(replace(excited_log, body_rates=rates), _base(reference))


def _arrays(log: FlightLog) -> tuple[np.ndarray, ...]:
    assert log.specific_force is not None
    return (log.time, log.position, log.quaternion, log.velocity, log.body_rates, log.commands, log.specific_force)
