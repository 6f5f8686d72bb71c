"""A flight log as identification reads it: states and motor commands sampled on one time line (SI units)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from robo_rl.sysid.unit_scales import likely_unit

MIN_SECONDS = 10.0
"""A shorter log is refused: too few command steps to tell the motor constants from noise (a minute is the aim)."""
GAP_PERIODS = 5.0
"""An interval longer than this many median sample periods is a gap (the logger dropped samples): not differenced."""


SI_UNITS = {
    "time": "s",
    "position": "m",
    "velocity": "m/s",
    "body_rates": "rad/s",
    "specific_force": "m/s^2",
    "commands": "fraction 0..1",
    "quaternion": "unit quaternion",
}


class NotIdentifiable(ValueError):
    """The log cannot identify a parameter (or cannot be read as a flight); the message is one line."""


@dataclass(frozen=True)
class FlightLog:
    """N samples of one flight. Commands are held from their sample to the next (as a motor driver applies them)."""

    time: np.ndarray
    """(N,) s, increasing."""
    position: np.ndarray
    """(N, 3) m, world frame (z up)."""
    quaternion: np.ndarray
    """(N, 4) w, x, y, z: body (FLU) to world."""
    velocity: np.ndarray
    """(N, 3) m/s, world frame."""
    body_rates: np.ndarray
    """(N, 3) rad/s, body frame (gyroscope)."""
    commands: np.ndarray
    """(N, 4) motor commands in [0, 1] (PWM / 65535), robo_rl's rotors 0..3."""
    specific_force: np.ndarray | None
    """(N, 3) m/s^2, body frame (accelerometer); None: thrust is measured from the velocity's derivative."""
    source: str
    """What the log is, for the frame file's header (e.g. "flight.csv (Crazyflie CSV)")."""
    columns: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    """Where each field came from, for the unit checks' messages: field name -> (the log's column names, the unit
    they were read in), e.g. "body_rates" -> ("gyro.x/y/z", "deg/s"). A field not named here is SI by its own name."""

    def column(self, name: str) -> tuple[str, str]:
        """(the log's column names, the unit read) of field `name`."""
        return self.columns.get(name, (name, SI_UNITS[name]))

    def __len__(self) -> int:
        return len(self.time)

    @property
    def seconds(self) -> float:
        return float(self.time[-1] - self.time[0]) if len(self.time) else 0.0


def check_flight(log: FlightLog) -> None:
    """NotIdentifiable when the log is too short, non-finite, unordered or out of range (one line, naming it)."""
    arrays = {
        "time": log.time,
        "position": log.position,
        "quaternion": log.quaternion,
        "velocity": log.velocity,
        "body_rates": log.body_rates,
        "commands": log.commands,
    }
    if log.specific_force is not None:
        arrays["specific_force"] = log.specific_force
    for name, values in arrays.items():
        if len(values) != len(log.time):
            raise NotIdentifiable(f"{log.source}: {name} has {len(values)} samples, time has {len(log.time)}")
        bad = ~np.isfinite(values.reshape(len(values), -1)).all(axis=1)
        if bad.any():
            raise NotIdentifiable(f"{log.source}: {name} is not finite at sample {int(np.flatnonzero(bad)[0])}")
    _check_time_unit(log)
    if len(log.time) < 3 or log.seconds < MIN_SECONDS:
        raise NotIdentifiable(
            f"{log.source}: {log.seconds:.1f} s of flight ({len(log.time)} samples) is too short; "
            f"log at least {MIN_SECONDS:.0f} s (a minute of excitation is the aim)"
        )
    steps = np.diff(log.time)
    if (steps <= 0).any():
        raise NotIdentifiable(
            f"{log.source}: time does not increase at sample {int(np.flatnonzero(steps <= 0)[0]) + 1}"
        )
    if (log.commands < -1e-9).any() or (log.commands > 1 + 1e-9).any():
        raise NotIdentifiable(f"{log.source}: motor commands outside [0, 1] (PWM outside 0..65535)")
    if (np.linalg.norm(log.quaternion, axis=1) < 0.5).any():
        raise NotIdentifiable(f"{log.source}: the attitude quaternion is not a rotation (norm far from 1)")


SAMPLE_PERIODS = (5e-4, 2.0)
"""s: a median sample period outside this range means the time column is in another unit than it was read in."""


def _check_time_unit(log: FlightLog) -> None:
    steps = np.diff(log.time)
    if len(steps) == 0 or not (steps > 0).any():
        return
    period = float(np.median(steps[steps > 0]))
    if SAMPLE_PERIODS[0] <= period <= SAMPLE_PERIODS[1]:
        return
    name, unit = log.column("time")
    likely = likely_unit("time", unit, 0.01 / period, tolerance=20.0)
    guess = f"; the values look like {likely}, not {unit}" if likely and likely != unit else ""
    raise NotIdentifiable(
        f"{log.source}: {name} read as {unit} puts samples {period:.3g} s apart (a log runs at 1 Hz to 2 kHz){guess}"
    )


def interval_mask(time: np.ndarray) -> np.ndarray:
    """(N-1,) bool: the intervals that are not gaps (see GAP_PERIODS)."""
    steps = np.diff(time)
    return steps <= GAP_PERIODS * float(np.median(steps))
