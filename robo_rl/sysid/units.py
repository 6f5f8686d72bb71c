"""Unit checks from the physics of flight, run before a fit: each compares a column with what the rest of the log
says it must be and, when it is off by a factor, refuses in one line naming the column, the unit it was read in and
the unit its values look like (`robo_rl.sysid.unit_scales`).

- accelerometer: over a flight that starts and ends near rest the world-frame specific force averages about 1 g up;
- gyroscope: the body rates are the attitude quaternion's turning, 2 conj(q) dq/dt;
- velocity: its derivative is the accelerometer's specific force rotated to the world, less gravity (with no
  accelerometer: the base frame's thrust at the logged commands, within a factor 3, since the fit is what finds it);
- position: its derivative is the velocity;
- motor commands: a flight commands a good part of full scale.

A check with too little signal to judge (the attitude hardly turned, the velocity hardly changed) passes.
"""

from __future__ import annotations

import math

import numpy as np

from robo_rl.sysid.airframe import Airframe, quaternion_matrices
from robo_rl.sysid.flight_log import FlightLog, NotIdentifiable, interval_mask
from robo_rl.sysid.unit_scales import likely_unit

TOLERANCE = 1.35
"""A column whose values are off by more than this factor from what the physics says is refused."""
MIN_TURNING = 0.2
"""rad/s RMS: less attitude motion than this cannot judge the gyroscope."""
MIN_ACCELERATION = 0.5
"""m/s^2 RMS: less change of velocity than this cannot judge the velocity against the accelerometer."""
MIN_SPEED = 0.05
"""m/s RMS: less motion than this cannot judge the position against the velocity."""
WINDOW = 0.1
"""s: the velocity and position checks compare changes over windows this long."""
MIN_CORRELATION = 0.5
"""Below this a column does not follow what it should (wrong axis, frame or sign) whatever its scale."""


def check_units(log: FlightLog, airframe: Airframe) -> None:
    """NotIdentifiable (one line naming the column and its likely unit) when a column's unit is off; see the
    module docstring."""
    _check_commands(log)
    if log.specific_force is not None:
        _check_gravity(log, airframe)
    _check_gyroscope(log)
    if log.specific_force is not None:
        _check_velocity_against_accelerometer(log, airframe)
    else:
        _check_velocity_against_thrust(log, airframe)
    _check_position(log)


def _refuse(log: FlightLog, field: str, finding: str, off_by: float, tolerance: float = TOLERANCE) -> None:
    name, unit = log.column(field)
    likely = likely_unit(field, unit, off_by, tolerance)
    guess = f"; the values look like {likely}, not {unit}" if likely and likely != unit else ""
    raise NotIdentifiable(f"{log.source}: {name} read as {unit}: {finding}{guess}")


def _scale(measured: np.ndarray, physical: np.ndarray) -> tuple[float, float]:
    """(k, correlation): the least-squares factor with physical ~ k * measured, and how well they correlate."""
    m, p = measured.ravel(), physical.ravel()
    mm, pp = float(m @ m), float(p @ p)
    if mm <= 0 or pp <= 0:
        return math.nan, 0.0
    return float(m @ p) / mm, float(m @ p) / math.sqrt(mm * pp)


def _off(k: float) -> bool:
    return not (1.0 / TOLERANCE <= k <= TOLERANCE)


def _check_commands(log: FlightLog) -> None:
    top = float(np.max(log.commands)) if log.commands.size else 0.0
    if 0.0 < top < 0.05:
        finding = f"the largest command is {top:.2g} of full scale (a flight needs about 0.3 to 1)"
        _refuse(log, "commands", finding, 0.6 / top, tolerance=4.0)


def _check_gravity(log: FlightLog, airframe: Airframe) -> None:
    assert log.specific_force is not None
    world = np.einsum("kij,kj->ki", quaternion_matrices(log.quaternion), log.specific_force)
    up = float(np.mean(world[:, 2]))
    k = airframe.gravity / up if up > 0 else math.nan
    if not np.isfinite(k) or _off(k):
        _refuse(
            log,
            "specific_force",
            f"the mean specific force is {up / airframe.gravity:.3g} g up (a flight averages about 1 g)",
            k,
        )


def _attitude_rates(log: FlightLog) -> tuple[np.ndarray, np.ndarray]:
    """(K, 3) body rates from the quaternion's change over each kept interval, and the gyro's mean over it."""
    keep = interval_mask(log.time)
    q = log.quaternion / np.linalg.norm(log.quaternion, axis=1, keepdims=True)
    q0, q1 = q[:-1], q[1:]
    sign = np.where(np.einsum("ki,ki->k", q0, q1) < 0, -1.0, 1.0)
    q1 = q1 * sign[:, None]
    w0, v0 = q0[:, 0], -q0[:, 1:]  # conj(q0)
    w1, v1 = q1[:, 0], q1[:, 1:]
    vector = w0[:, None] * v1 + w1[:, None] * v0 + np.cross(v0, v1)
    scalar = np.clip(w0 * w1 - np.einsum("ki,ki->k", v0, v1), -1.0, 1.0)
    angle = 2.0 * np.arctan2(np.linalg.norm(vector, axis=1), scalar)
    norm = np.maximum(np.linalg.norm(vector, axis=1), 1e-300)
    rates = vector * (angle / norm / np.diff(log.time))[:, None]
    gyro = 0.5 * (log.body_rates[:-1] + log.body_rates[1:])
    return rates[keep], gyro[keep]


def _check_gyroscope(log: FlightLog) -> None:
    attitude, gyro = _attitude_rates(log)
    if len(attitude) == 0 or float(np.sqrt(np.mean(attitude**2))) < MIN_TURNING:
        return
    k, correlation = _scale(gyro, attitude)
    if correlation < MIN_CORRELATION:
        _refuse(
            log,
            "body_rates",
            f"the rates do not follow the attitude's turning (correlation {correlation:.2f}); check the axes and "
            "their signs (body frame, x forward, z up)",
            math.nan,
        )
    if _off(k):
        _refuse(log, "body_rates", f"the attitude turns {k:.3g} times as fast as the rates say", k)


def _windows(log: FlightLog) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) sample indices of windows of about WINDOW s that span no gap: differences over them carry
    little of the sensors' sample-to-sample noise."""
    steps = np.diff(log.time)
    width = max(1, round(WINDOW / float(np.median(steps))))
    gaps = np.concatenate([[0], np.cumsum(~interval_mask(log.time))])
    start = np.arange(0, len(log.time) - width, width)
    end = start + width
    clean = gaps[end] == gaps[start]
    return start[clean], end[clean]


def _integral(values: np.ndarray, time: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The trapezoid integral of (N, 3) `values` from sample `start` to `end` (arrays of windows)."""
    pieces = 0.5 * (values[:-1] + values[1:]) * np.diff(time)[:, None]
    total = np.concatenate([np.zeros((1, values.shape[1])), np.cumsum(pieces, axis=0)])
    return total[end] - total[start]


def _check_velocity_against_accelerometer(log: FlightLog, airframe: Airframe) -> None:
    """The velocity's change over each window against the integral of the accelerometer's world acceleration."""
    assert log.specific_force is not None
    world = np.einsum("kij,kj->ki", quaternion_matrices(log.quaternion), log.specific_force)
    acceleration = world - np.array([0.0, 0.0, airframe.gravity]) - airframe.linear_drag * log.velocity / airframe.mass
    _check_windowed(log, "velocity", log.velocity, acceleration, MIN_ACCELERATION, "the accelerometer")


def _check_velocity_against_thrust(log: FlightLog, airframe: Airframe) -> None:
    """No accelerometer: the changes of the velocity's derivative along body z against those of the thrust the
    commands ask for, taking thrust ~ command^1.5 about the flight's mean command (any frame's curve is between
    linear and quadratic there). Only a factor beyond 3 is refused: the fit is what finds the thrust."""
    keep = interval_mask(log.time)
    acceleration = (np.diff(log.velocity, axis=0) / np.diff(log.time)[:, None])[keep]
    body_z = quaternion_matrices(log.quaternion)[:-1, :, 2][keep]
    along = np.einsum("ki,ki->k", body_z, acceleration)
    commands = log.commands[:-1][keep]
    mean = float(np.mean(commands)) if commands.size else 0.0
    if mean <= 0:
        return
    asked = airframe.gravity * np.mean((commands / mean) ** 1.5, axis=1)
    asked, along = asked - asked.mean(), along - along.mean()
    if float(np.sqrt(np.mean(asked**2))) < MIN_ACCELERATION:
        return
    k, _ = _scale(along, asked)
    if not np.isfinite(k) or not (1 / 3 <= k <= 3):
        _refuse(
            log,
            "velocity",
            f"its derivative changes {1 / k:.3g} times as much as the commands' thrust would move the vehicle",
            k,
            tolerance=3.0,
        )


def _check_position(log: FlightLog) -> None:
    """The position's change over each window against the integral of the velocity."""
    _check_windowed(log, "position", log.position, log.velocity, MIN_SPEED, "the velocity")


def _check_windowed(
    log: FlightLog, field: str, values: np.ndarray, rate: np.ndarray, floor: float, source: str
) -> None:
    """`values`' change over each window (`_windows`) against the integral of its `rate` (both (N, 3)); skipped
    when the rate's RMS is below `floor`."""
    start, end = _windows(log)
    if len(start) < 3:
        return
    expected = _integral(rate, log.time, start, end)
    seconds = (log.time[end] - log.time[start])[:, None]
    if float(np.sqrt(np.mean((expected / seconds) ** 2))) < floor:
        return
    k, correlation = _scale(values[end] - values[start], expected)
    if correlation < MIN_CORRELATION or _off(k):
        finding = f"it changes {1 / k:.3g} times as much as {source} says (correlation {correlation:.2f})"
        _refuse(log, field, finding, k)
