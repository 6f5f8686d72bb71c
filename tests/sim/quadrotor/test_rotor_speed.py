"""The rotor-speed motor model (`motor_model: rotor_speed`, robo_rl.sim.quadrotor.params): first order in rotor
speed, rising with a constant time constant and falling at a rate proportional to the speed, thrust quadratic in the
speed. The simulator's motor states are checked against SciPy's adaptive Runge-Kutta (solve_ivp, an integrator we
did not write) on the ODE the frame documents; the command model is the same frame with idle 1."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch
from scipy.integrate import solve_ivp

from robo_rl.actuator import MotorActuator, actuator_from_json
from robo_rl.sim.quadrotor.dynamics import DynamicsParams, integrate
from robo_rl.sim.quadrotor.params import load_frame


def _frame(idle: float) -> object:
    return dataclasses.replace(load_frame("crazyflie_2_1"), motor_model="rotor_speed", motor_idle_speed=idle)


@pytest.mark.parametrize("idle", [0.0, 0.35, 1.0])
def test_motor_states_follow_the_documented_ode(idle: float) -> None:
    frame = _frame(idle)
    params = DynamicsParams.nominal(frame, 2, dtype=torch.float64)
    rise, fall = frame.motor_rise_time_constant, frame.motor_fall_time_constant
    state = torch.zeros(17, 2, dtype=torch.float64)
    state[3] = 1.0
    state[13:17, 0], state[13:17, 1] = 0.9, 0.1  # env 0 falls from 0.9 toward 0.2, env 1 rises from 0.1 toward 0.8
    command = torch.tensor([[0.2, 0.8]], dtype=torch.float64).expand(4, 2)

    def rate(_: float, u: np.ndarray, c: float) -> np.ndarray:
        return np.where(c >= u, (c - u) / rise, (c - u) * (idle + (1.0 - idle) * u) / fall)

    for env, (start, target) in enumerate(((0.9, 0.2), (0.1, 0.8))):
        reference = solve_ivp(
            rate, (0.0, 0.3), [start], args=(target,), t_eval=np.arange(1, 31) * 0.01, rtol=1e-10, atol=1e-12
        )
        s = state.clone()
        ours = []
        for _ in range(30):
            s = integrate(s, command, params, 0.01, substeps=8)
            ours.append(float(s[13, env]))
        np.testing.assert_allclose(ours, reference.y[0], atol=1e-7)
    if idle < 1.0:  # the drag-limited spin-down is slower than the constant-rate one at the same full-speed constant
        constant = _frame(1.0)
        s_speed = integrate(state.clone(), command, params, 0.2, substeps=40)
        s_const = integrate(state.clone(), command, DynamicsParams.nominal(constant, 2, dtype=torch.float64), 0.2, 40)
        assert float(s_speed[13, 0]) > float(s_const[13, 0])


def test_a_rotor_speed_frame_needs_the_model_and_an_idle_in_0_1() -> None:
    frame = load_frame("crazyflie_2_1")
    with pytest.raises(ValueError, match="motor_idle_speed is the rotor_speed model's"):
        dataclasses.replace(frame, motor_idle_speed=0.3)
    with pytest.raises(ValueError, match="motor_idle_speed must be in"):
        dataclasses.replace(frame, motor_model="rotor_speed", motor_idle_speed=1.5)
    with pytest.raises(ValueError, match="motor_model 'rpm'"):
        dataclasses.replace(frame, motor_model="rpm")


def test_the_artifact_states_the_motor_model_and_a_command_artifact_is_unchanged() -> None:
    speed = MotorActuator((0.01, 0.04, 0.05), 0.005, 0.04, 0.06, motor_model="rotor_speed", motor_idle_speed=0.3)
    back = actuator_from_json(speed.to_json())
    assert back == speed
    command = MotorActuator((0.01, 0.04, 0.05), 0.005, 0.04, 0.06)
    assert "motor_model" not in json.loads(command.to_json())  # readable by a robo_rl from before the model
    assert actuator_from_json(command.to_json()) == command


def test_the_vehicle_card_states_the_rotor_speed_model() -> None:
    from robo_rl.sim.quadrotor.vehicle_card import vehicle

    card = vehicle(_frame(0.3))
    assert "motor_model rotor_speed" in card["model"]["motor"] and "idle = 0.3" in card["model"]["motor"]
    assert "rotor_speed" not in vehicle(load_frame("crazyflie_2_1"))["model"]["motor"]
