"""An excitation flight for system identification: a PD hover controller in motor-command space with collective
steps and chirps and roll, pitch and yaw doublets added to its commands, flown on any simulator through a step
function, logged as a `FlightLog` (and so as a Crazyflie CSV, `robo_rl.sysid.crazyflie_csv`).

The controller uses a nominal frame (the frame one starts from); the excitation is open-loop on top of it, so the
log moves the motors far from hover both ways while the feedback keeps the vehicle near its target.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from robo_rl.sysid.airframe import Airframe, quaternion_matrices
from robo_rl.sysid.flight_log import FlightLog

PATTERNS = {
    "collective": np.array([1.0, 1.0, 1.0, 1.0]),
    "roll": np.array([-1.0, -1.0, 1.0, 1.0]),  # left rotors (2, 3) up: +x torque
    "pitch": np.array([-1.0, 1.0, 1.0, -1.0]),  # back rotors (1, 2) up: +y torque
    "yaw": np.array([-1.0, 1.0, -1.0, 1.0]),  # cw rotors (1, 3) up: +z reaction torque
}
"""Per-rotor command signs (rotors 0 front-right, 1 back-right, 2 back-left, 3 front-left, 0 and 2 ccw)."""


@dataclass(frozen=True)
class ExcitationPlan:
    """What the flight adds to the hover controller's commands, in a cycle repeated for `seconds`."""

    seconds: float = 60.0
    """Length of the flight, s."""
    collective: float = 0.15
    """Collective step amplitude (command units, [0, 1] scale): 0.4 s up, 0.4 s down, then a 1-8 Hz chirp at half."""
    roll_pitch: float = 0.05
    """Roll and pitch doublet amplitude: 0.1 s each way."""
    yaw: float = 0.12
    """Yaw doublet amplitude: 0.25 s each way."""
    axes: tuple[str, ...] = ("collective", "roll", "pitch", "yaw")
    """The patterns flown (leave one out to make a log that cannot identify it)."""
    cycle: float = 4.0
    """s per cycle; each cycle scales its amplitudes by a random factor in [0.5, 1] so that levels vary."""
    settle: float = 2.0
    """s of plain hovering first."""
    seed: int = 0


def excitation_offsets(plan: ExcitationPlan, t: float) -> np.ndarray:
    """(4,) command offsets at time `t` (s from the start)."""
    if t < plan.settle:
        return np.zeros(4)
    cycle, phase = divmod(t - plan.settle, plan.cycle)
    scale = 0.5 + 0.5 * np.random.default_rng([plan.seed, int(cycle)]).random(4)
    out = np.zeros(4)
    steps = (
        ("collective", 0.0, 0.4, plan.collective, scale[0]),
        ("roll", 1.0, 0.1, plan.roll_pitch, scale[1]),
        ("pitch", 1.5, 0.1, plan.roll_pitch, scale[2]),
        ("yaw", 2.0, 0.25, plan.yaw, scale[3]),
    )
    for axis, start, width, amplitude, factor in steps:
        if axis in plan.axes and start <= phase < start + 2 * width:
            sign = 1.0 if phase < start + width else -1.0
            out += sign * amplitude * factor * PATTERNS[axis]
    if "collective" in plan.axes and 2.8 <= phase < 3.8:
        tau = phase - 2.8
        out += (
            0.5
            * plan.collective
            * scale[0]
            * math.sin(2 * math.pi * (1.0 * tau + 3.5 * tau * tau))
            * PATTERNS["collective"]
        )
    return out


class HoverController:
    """PD position and attitude control of a nominal frame, to per-rotor commands in [0, 1].

    `__call__(state)`: state (13,) = position (3, m, world), quaternion w x y z (body to world), world velocity
    (3, m/s), body rates (3, rad/s). Geometric attitude error toward level flight with zero yaw; torques through the
    inverse of the rotor allocation; thrusts to commands through the inverse of the nominal thrust curve.
    """

    def __init__(self, fields: Mapping[str, Any], target: tuple[float, float, float] = (0.0, 0.0, 1.0)) -> None:
        self.frame = Airframe.from_fields(fields)
        self.curve = np.asarray(fields["thrust_curve"], dtype=np.float64)
        self.target = np.asarray(target, dtype=np.float64)
        allocation = np.vstack([np.ones(4), self.frame.torque_map])
        self.mixer = np.linalg.inv(allocation)
        self.position_gains = (4.0, 3.0)
        self.attitude_gains = (np.array([36.0, 36.0, 16.0]), np.array([8.0, 8.0, 6.0]))

    def __call__(self, state: np.ndarray) -> np.ndarray:
        position, quaternion, velocity, rates = state[0:3], state[3:7], state[7:10], state[10:13]
        rotation = quaternion_matrices(quaternion[None])[0]
        kp, kd = self.position_gains
        wanted = kp * (self.target - position) - kd * velocity + np.array([0.0, 0.0, self.frame.gravity])
        wanted[2] = max(wanted[2], 0.3 * self.frame.gravity)
        tilt = np.linalg.norm(wanted[:2])
        if tilt > 0.5 * wanted[2]:
            wanted[:2] *= 0.5 * wanted[2] / tilt
        collective = self.frame.mass * max(float(wanted @ rotation[:, 2]), 0.5 * self.frame.gravity)
        z = wanted / np.linalg.norm(wanted)
        y = np.cross(z, np.array([1.0, 0.0, 0.0]))
        y /= np.linalg.norm(y)
        desired = np.column_stack([np.cross(y, z), y, z])
        error_matrix = desired.T @ rotation - rotation.T @ desired
        error = 0.5 * np.array([error_matrix[2, 1], error_matrix[0, 2], error_matrix[1, 0]])
        k_r, k_w = self.attitude_gains
        torque = self.frame.inertia * (-k_r * error - k_w * rates)
        thrusts = self.mixer @ np.concatenate([[collective], torque])
        return self.commands_for(self._keep_torque(thrusts))

    def _keep_torque(self, thrusts: np.ndarray) -> np.ndarray:
        """Shift all four thrusts together (giving up collective, not torque) to stay within the curve's range."""
        low, high = self.curve[0], float(self.curve.sum())
        thrusts = thrusts + max(0.0, low - thrusts.min()) - max(0.0, thrusts.max() - high)
        return np.clip(thrusts, low, high)

    def commands_for(self, thrusts: np.ndarray) -> np.ndarray:
        """Commands in [0, 1] whose settled thrust (nominal curve) is `thrusts` (4,) N."""
        c0, c1, c2 = self.curve
        wanted = np.maximum(thrusts, c0)
        u = (-c1 + np.sqrt(c1 * c1 + 4.0 * c2 * (wanted - c0))) / (2.0 * c2) if c2 > 0 else (wanted - c0) / c1
        return np.clip(u, 0.0, 1.0)


def fly_excitation(
    step: Callable[[np.ndarray], np.ndarray],
    state: np.ndarray,
    fields: Mapping[str, Any],
    plan: ExcitationPlan | None = None,
    dt: float = 0.01,
    source: str = "excitation flight",
) -> FlightLog:
    """Fly `plan` from `state` (13,) (see HoverController) with `step(commands (4,)) -> next state (13,)`, which
    holds the commands for `dt` s. The accelerometer (specific force, body frame) is the central difference of the
    logged velocities, rotated into the body: what a 2 * dt averaging IMU would read."""
    plan = plan or ExcitationPlan()
    controller = HoverController(fields, target=(float(state[0]), float(state[1]), float(state[2])))
    count = round(plan.seconds / dt) + 1
    states = np.empty((count, 13))
    commands = np.empty((count, 4))
    states[0] = state
    for k in range(count):
        commands[k] = np.clip(controller(states[k]) + excitation_offsets(plan, k * dt), 0.0, 1.0)
        if k + 1 < count:
            states[k + 1] = step(commands[k])
    gravity = float(fields.get("gravity", 9.81))
    return FlightLog(
        time=np.arange(count) * dt,
        position=states[:, 0:3],
        quaternion=states[:, 3:7],
        velocity=states[:, 7:10],
        body_rates=states[:, 10:13],
        commands=commands,
        specific_force=specific_force(states[:, 7:10], states[:, 3:7], dt, gravity),
        source=source,
    )


def specific_force(velocity: np.ndarray, quaternion: np.ndarray, dt: float, gravity: float) -> np.ndarray:
    """(N, 3) body-frame specific force from (N, 3) world velocities sampled every `dt` (central differences,
    one-sided at the ends)."""
    acceleration = np.gradient(velocity, dt, axis=0)
    acceleration[:, 2] += gravity
    return np.einsum("kji,kj->ki", quaternion_matrices(quaternion), acceleration)
