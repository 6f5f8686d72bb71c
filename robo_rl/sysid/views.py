"""A flight log as the fit sees it: per interval (sample k to k+1, commands held) the measured collective thrust,
angular acceleration, body rates and velocity, and views of them that the fit is run on again to check itself
(the log's two halves, the log at half its sample rate)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robo_rl.sysid.airframe import Airframe, quaternion_matrices
from robo_rl.sysid.flight_log import FlightLog, interval_mask


@dataclass(frozen=True)
class Series:
    """The log differenced over all its N-1 intervals."""

    commands: np.ndarray
    """(N, 4) all samples (the motor model runs through gaps)."""
    dt: np.ndarray
    """(N-1,)"""
    keep: np.ndarray
    """(N-1,) bool: not a gap."""


@dataclass(frozen=True)
class View:
    """K measurement rows. Row r measures over the full-rate intervals first[r] and second[r] (the same one for the
    log at its own rate; two consecutive ones at half rate): the model's regressors are their mean."""

    name: str
    first: np.ndarray
    second: np.ndarray
    thrust: np.ndarray
    """(K,) N: measured collective thrust (mass times body-z specific force, plus the base's drag along body z)."""
    angular_acceleration: np.ndarray
    """(K, 3) rad/s^2"""
    rates: np.ndarray
    """(K, 3) rad/s: mid-row body rates."""
    air: np.ndarray
    """(K, 4, 3) m/s: the air each rotor meets in still air (the body velocity plus the rotation's w x r_i at the
    rotor, in the body frame), mid-row, for the aerodynamic terms."""

    def __len__(self) -> int:
        return len(self.first)

    def subset(self, name: str, rows: np.ndarray) -> View:
        return View(
            name,
            self.first[rows],
            self.second[rows],
            self.thrust[rows],
            self.angular_acceleration[rows],
            self.rates[rows],
            self.air[rows],
        )


def series(log: FlightLog) -> Series:
    return Series(np.clip(log.commands, 0.0, 1.0), np.diff(log.time), interval_mask(log.time))


def measured(log: FlightLog, airframe: Airframe, signal: str) -> tuple[np.ndarray, ...]:
    """Per interval of `log`: thrust (N-1,), angular acceleration (N-1, 3), mid rates (N-1, 3), mid body velocity
    (N-1, 3)."""
    dt = np.diff(log.time)
    rotations = quaternion_matrices(log.quaternion)
    body_z = rotations[:, :, 2]
    mid_z = body_z[:-1] + body_z[1:]
    mid_z /= np.linalg.norm(mid_z, axis=1, keepdims=True)
    mid_velocity = 0.5 * (log.velocity[:-1] + log.velocity[1:])
    body_velocity = np.einsum("kji,kj->ki", rotations, log.velocity)
    drag = np.einsum("ki,ki->k", mid_z, airframe.linear_drag * mid_velocity)
    if signal == "accelerometer":
        assert log.specific_force is not None
        specific = 0.5 * (log.specific_force[:-1, 2] + log.specific_force[1:, 2])
    else:
        acceleration = np.diff(log.velocity, axis=0) / dt[:, None]
        acceleration[:, 2] += airframe.gravity
        specific = np.einsum("ki,ki->k", mid_z, acceleration)
    return (
        airframe.mass * specific + drag,
        np.diff(log.body_rates, axis=0) / dt[:, None],
        0.5 * (log.body_rates[:-1] + log.body_rates[1:]),
        _rotor_air(
            0.5 * (body_velocity[:-1] + body_velocity[1:]), 0.5 * (log.body_rates[:-1] + log.body_rates[1:]), airframe
        ),
    )


def _rotor_air(velocity: np.ndarray, rates: np.ndarray, airframe: Airframe) -> np.ndarray:
    """(K, 4, 3): v + w x r_i for the rotors at r_i = (x_i, y_i, 0)."""
    x, y = airframe.rotor_xy[:, 0], airframe.rotor_xy[:, 1]
    p, q, r = (rates[:, i : i + 1] for i in range(3))
    return np.stack([velocity[:, 0:1] - r * y, velocity[:, 1:2] + r * x, velocity[:, 2:3] + p * y - q * x], axis=-1)


def full_view(log: FlightLog, airframe: Airframe, signal: str, data: Series) -> View:
    rows = np.flatnonzero(data.keep)
    thrust, angular, rates, air = measured(log, airframe, signal)
    return View("the whole log", rows, rows, thrust[rows], angular[rows], rates[rows], air[rows])


def halves(view: View) -> tuple[View, View]:
    """The rows before and after the log's middle interval."""
    middle = (int(view.first.min()) + int(view.first.max())) // 2
    early = view.first <= middle
    return view.subset("the first half", early), view.subset("the second half", ~early)


def half_rate_view(log: FlightLog, airframe: Airframe, signal: str, data: Series) -> View:
    """Every other sample of the log: intervals 2j..2j+2 measured from those samples alone, the model over both
    full-rate intervals. The fit's discretisation (sensor samples at interval ends, mid-interval rotations) errs
    twice or four times as much here, so the change shows how much it errs at the log's own rate."""
    pairs = np.arange(len(data.dt) // 2)
    first, second = 2 * pairs, 2 * pairs + 1
    rows = data.keep[first] & data.keep[second]
    coarse = FlightLog(
        time=log.time[::2],
        position=log.position[::2],
        quaternion=log.quaternion[::2],
        velocity=log.velocity[::2],
        body_rates=log.body_rates[::2],
        commands=log.commands[::2],
        specific_force=None if log.specific_force is None else log.specific_force[::2],
        source=log.source,
    )
    thrust, angular, rates, air = (a[: len(pairs)] for a in measured(coarse, airframe, signal))
    return View(
        "the log at half its rate", first[rows], second[rows], thrust[rows], angular[rows], rates[rows], air[rows]
    )
