"""Flight logs as CSV in the layout of the Crazyflie's logging (cflib log variables, one column each, one row per
log period).

The names and units are the firmware's (bitcraze/crazyflie-firmware): `src/modules/src/stabilizer.c` logs `acc.x/y/z`
(sensorData.acc: body-frame specific force in g, about +1 on acc.z at rest), `gyro.x/y/z` (deg/s) and
`stateEstimate.x/y/z` (m), `stateEstimate.vx/vy/vz` (m/s, world frame) and `stateEstimate.qx/qy/qz/qw` (body to
world); `src/drivers/src/motors.c` logs `motor.m1..m4` (the PWM ratio sent to each motor, 0..65535), and cflib
stamps each row with `timestamp` (ms, the firmware's tick). Motors M1..M4 are robo_rl's rotors 0..3: the Crazyflie
2.x puts M1 front-right, M2 back-right, M3 back-left, M4 front-left (`power_distribution_quadrotor.c`'s force/torque
mixer: M1 = thrust - roll - pitch - yaw, ...), with M1 and M3 spinning ccw, as robo_rl's rotors 0 and 2.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from robo_rl.sysid.flight_log import FlightLog, NotIdentifiable

STANDARD_GRAVITY = 9.81
"""m/s^2 per g, the firmware's GRAVITY_MAGNITUDE."""
PWM_FULL = 65535.0
TIME = "timestamp"
GYRO = ("gyro.x", "gyro.y", "gyro.z")
ACC = ("acc.x", "acc.y", "acc.z")
MOTORS = ("motor.m1", "motor.m2", "motor.m3", "motor.m4")
POSITION = ("stateEstimate.x", "stateEstimate.y", "stateEstimate.z")
VELOCITY = ("stateEstimate.vx", "stateEstimate.vy", "stateEstimate.vz")
QUATERNION = ("stateEstimate.qx", "stateEstimate.qy", "stateEstimate.qz", "stateEstimate.qw")
COLUMNS = (TIME, *GYRO, *ACC, *MOTORS, *POSITION, *VELOCITY, *QUATERNION)
"""Every column, in the order `write_crazyflie_csv` writes them; the acc.* columns are optional when reading."""
CSV_COLUMNS = {
    "time": (TIME, "ms"),
    "body_rates": ("gyro.x/y/z", "deg/s"),
    "specific_force": ("acc.x/y/z", "g"),
    "commands": ("motor.m1..m4", "PWM 0..65535"),
    "position": ("stateEstimate.x/y/z", "m"),
    "velocity": ("stateEstimate.vx/vy/vz", "m/s"),
    "quaternion": ("stateEstimate.qx/qy/qz/qw", "unit quaternion"),
}
"""FlightLog field -> (the columns, the unit the firmware logs them in), for the unit checks' messages."""


def read_crazyflie_csv(path: Path) -> FlightLog:
    """A Crazyflie log (see the module docstring) as a FlightLog in SI units; NotIdentifiable (one line) when a
    column is missing or a value is not a number."""
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.reader(handle)
            header = [name.strip() for name in next(reader, [])]
            rows = list(reader)
    except UnicodeDecodeError as err:
        raise NotIdentifiable(f"{path}: not a Crazyflie log CSV (not UTF-8 text: byte {err.start})") from None
    except (OSError, csv.Error) as err:
        raise NotIdentifiable(f"{path}: cannot read ({getattr(err, 'strerror', None) or err})") from None
    required = [c for c in COLUMNS if c not in ACC]
    missing = [c for c in required if c not in header]
    if missing:
        raise NotIdentifiable(f"{path}: not a Crazyflie log CSV: missing column(s) {', '.join(missing)}")
    has_acc = all(c in header for c in ACC)
    index = {name: header.index(name) for name in COLUMNS if name in header}
    table = np.full((len(rows), len(COLUMNS)), np.nan)
    for r, row in enumerate(rows):
        for c, name in enumerate(COLUMNS):
            if name in index:
                table[r, c] = _number(path, row, index[name], name, r)
    column = {name: table[:, i] for i, name in enumerate(COLUMNS)}
    stack = lambda names: np.column_stack([column[n] for n in names])  # noqa: E731
    qx, qy, qz, qw = (column[n] for n in QUATERNION)
    return FlightLog(
        time=column[TIME] * 1e-3,
        position=stack(POSITION),
        quaternion=np.column_stack([qw, qx, qy, qz]),
        velocity=stack(VELOCITY),
        body_rates=np.radians(stack(GYRO)),
        commands=stack(MOTORS) / PWM_FULL,
        specific_force=stack(ACC) * STANDARD_GRAVITY if has_acc else None,
        source=f"{Path(path).name} (Crazyflie CSV)",
        columns=CSV_COLUMNS,
    )


def _number(path: Path, row: list[str], index: int, name: str, r: int) -> float:
    try:
        return float(row[index])
    except (IndexError, ValueError):
        cell = row[index] if index < len(row) else ""
        raise NotIdentifiable(f"{path}: row {r + 2}, column {name}: {cell!r} is not a number") from None


def write_crazyflie_csv(path: Path, log: FlightLog) -> None:
    """Write `log` in the layout above (accelerometer in g, gyro in deg/s, PWM = round(u * 65535)); a log without
    an accelerometer is refused (the layout has one)."""
    if log.specific_force is None:
        raise ValueError(f"{path}: the Crazyflie layout has an accelerometer; this log has none")
    w, x, y, z = log.quaternion.T
    table = np.column_stack(
        [
            np.round(log.time * 1e3, 3),
            np.degrees(log.body_rates),
            log.specific_force / STANDARD_GRAVITY,
            np.round(np.clip(log.commands, 0.0, 1.0) * PWM_FULL),
            log.position,
            log.velocity,
            x,
            y,
            z,
            w,
        ]
    )
    with open(path, "w", newline="", encoding="utf-8") as handle:
        out = csv.writer(handle)
        out.writerow(COLUMNS)
        out.writerows([[_format(name, v) for name, v in zip(COLUMNS, row, strict=True)] for row in table])


def _format(name: str, value: float) -> str:
    return str(int(value)) if name in MOTORS else repr(float(value))
