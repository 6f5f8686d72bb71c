"""An independent reference quadrotor (numpy, RK4) that flies the logs the sysid tests fit (conftest.py loads it).

It restates the model of robo_rl.sim.quadrotor (motor states toward the commands with rise/fall constants, thrust
curve, rigid body with the gyroscopic term) without importing it, so that a fit recovering its parameters checks
the fitting code against the equations rather than against the simulator's own implementation.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from robo_rl.sysid.airframe import Airframe, quaternion_matrices
from robo_rl.sysid.excitation import ExcitationPlan, fly_excitation
from robo_rl.sysid.flight_log import FlightLog

TRUE_FIELDS: dict[str, Any] = {
    "name": "reference",
    "mass": 0.0306,
    "arm_length": 0.028 * math.sqrt(2.0),
    "inertia": [9.4e-6, 9.6e-6, 1.75e-5],
    "thrust_curve": [0.0035, 0.0144, 0.0922],
    "torque_to_thrust": 4.665e-3,
    "motor_rise_time_constant": 0.055,
    "motor_fall_time_constant": 0.25,
    "min_command": 0.0,
    "max_command": 1.0,
    "linear_drag": [0.0, 0.0, 0.0],
    "gravity": 9.81,
    "rotor_spin": ["ccw", "cw", "ccw", "cw"],
    "source": "tests/robo_rl/sysid/conftest.py",
}
"""The reference quadrotor's true parameters (Crazyflie-like)."""
BASE_FIELDS: dict[str, Any] = {
    **TRUE_FIELDS,
    "inertia": [1.4e-5, 1.4e-5, 2.2e-5],
    "thrust_curve": [0.0, 0.0, 0.12],
    "motor_rise_time_constant": 0.03,
    "motor_fall_time_constant": 0.03,
}
"""A wrong starting frame (the one a user starts from): the fit must move away from it."""


class ReferenceQuadrotor:
    """One quadrotor integrated with RK4 in `substeps` per `dt`; state (17,) = position, quaternion w x y z,
    world velocity, body rates, motor states."""

    def __init__(self, fields: dict[str, Any], dt: float = 0.01, substeps: int = 2) -> None:
        self.frame = Airframe.from_fields(fields)
        self.curve = np.asarray(fields["thrust_curve"])
        self.rise = float(fields["motor_rise_time_constant"])
        self.fall = float(fields["motor_fall_time_constant"])
        # "rotor_speed": falling at a rate proportional to the rotor speed, idle + (1 - idle) u of full speed
        self.idle = float(fields["motor_idle_speed"]) if fields.get("motor_model") == "rotor_speed" else 1.0
        self.dt, self.substeps = dt, substeps
        hover = self.frame.mass * self.frame.gravity / 4
        c0, c1, c2 = self.curve
        u = (-c1 + math.sqrt(c1 * c1 + 4 * c2 * (hover - c0))) / (2 * c2)
        self.state = np.concatenate([[0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0], np.zeros(6), np.full(4, u)])

    def derivative(self, s: np.ndarray, commands: np.ndarray) -> np.ndarray:
        q, v, w, u = s[3:7], s[7:10], s[10:13], s[13:17]
        thrusts = self.curve[0] + self.curve[1] * u + self.curve[2] * u * u
        qw, qx, qy, qz = q
        body_z = np.array([2 * (qx * qz + qw * qy), 2 * (qy * qz - qw * qx), 1 - 2 * (qx * qx + qy * qy)])
        force = body_z * thrusts.sum() - self.frame.linear_drag * v
        acceleration = force / self.frame.mass - np.array([0.0, 0.0, self.frame.gravity])
        inertia = self.frame.inertia
        torque = self.frame.torque_map @ thrusts
        angular = (torque - np.cross(w, inertia * w)) / inertia
        wx, wy, wz = w
        dq = 0.5 * np.array(
            [
                -qx * wx - qy * wy - qz * wz,
                qw * wx + qy * wz - qz * wy,
                qw * wy - qx * wz + qz * wx,
                qw * wz + qx * wy - qy * wx,
            ]
        )
        fall_rate = (self.idle + (1.0 - self.idle) * u) / self.fall
        rate = np.where(commands >= u, 1.0 / self.rise, fall_rate)
        return np.concatenate([v, dq, acceleration, angular, (commands - u) * rate])

    def step(self, commands: np.ndarray) -> np.ndarray:
        h = self.dt / self.substeps
        s = self.state
        for _ in range(self.substeps):
            k1 = self.derivative(s, commands)
            k2 = self.derivative(s + 0.5 * h * k1, commands)
            k3 = self.derivative(s + 0.5 * h * k2, commands)
            k4 = self.derivative(s + h * k3, commands)
            s = s + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            s[3:7] /= np.linalg.norm(s[3:7])
        self.state = s
        return s[:13].copy()

    def specific_force(self) -> np.ndarray:
        """(3,) body-frame specific force now (what an ideal accelerometer reads), m/s^2."""
        u = self.state[13:17]
        thrusts = self.curve[0] + self.curve[1] * u + self.curve[2] * u * u
        rotation = quaternion_matrices(self.state[3:7][None])[0]
        drag = rotation.T @ (self.frame.linear_drag * self.state[7:10])
        return np.array([0.0, 0.0, thrusts.sum()]) / self.frame.mass - drag / self.frame.mass


def reference_flight(
    plan: ExcitationPlan, noise: float = 0.0, seed: int = 0, fields: dict[str, Any] | None = None
) -> FlightLog:
    """The reference quadrotor flown through `plan` by the excitation controller (nominal frame BASE_FIELDS), with
    an ideal accelerometer; `noise` scales white sensor noise (gyro 0.01 rad/s, accelerometer 0.05 m/s^2,
    velocity 0.005 m/s, per unit)."""
    sim = ReferenceQuadrotor(fields or TRUE_FIELDS)
    forces = [sim.specific_force()]

    def step(commands: np.ndarray) -> np.ndarray:
        state = sim.step(commands)
        forces.append(sim.specific_force())
        return state

    log = fly_excitation(step, sim.state[:13].copy(), BASE_FIELDS, plan, dt=sim.dt, source="reference flight")
    log = replace(log, specific_force=np.array(forces))
    if noise:
        rng = np.random.default_rng(seed)
        log = replace(
            log,
            body_rates=log.body_rates + noise * 0.01 * rng.standard_normal(log.body_rates.shape),
            specific_force=log.specific_force + noise * 0.05 * rng.standard_normal(log.body_rates.shape),
            velocity=log.velocity + noise * 0.005 * rng.standard_normal(log.velocity.shape),
        )
    return log
