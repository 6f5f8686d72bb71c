"""A Crazyflie's own logs as cfclient writes them: one CSV per log block, merged into one FlightLog.

cfclient's "log to file" (bitcraze/crazyflie-clients-python, `src/cfclient/utils/logdatawriter.py`) writes each log
block to `<block name>-<date>.csv` in a folder per connection, with a `Timestamp` column (the firmware's tick, ms) and
one column per variable. A block carries at most 26 bytes, so a flight log for identification is several blocks at
their own periods, e.g. `motor.m1..m4` (uint16, PWM), `gyro.x/y/z` and `acc.x/y/z` (float, deg/s and g), and the
state estimate either in full (`stateEstimate.x/y/z`, `.vx/vy/vz`, `.qx/qy/qz/qw`: floats, m, m/s) or compressed as
crazyswarm2 logs it (`stateEstimateZ.*`, `src/modules/src/stabilizer.c` compressState: x/y/z in mm, vx/vy/vz in
mm/s, `quat` the quaternion (x, y, z, w) packed into 32 bits by `quatcompress`, rateRoll/ratePitch/rateYaw in
mrad/s from the gyro with ratePitch = -gyro.y).

The blocks are merged on the motor block's samples (commands are what the motors hold from one sample to the next):
the other columns are interpolated linearly at those times (quaternions in one hemisphere, renormalised), within the
span every block covers. The accelerometer and gyro are as logged: `robo_rl.sysid.crazyflie_filters` undoes the
firmware's low-pass filters' delay (7.5 ms and 2.8 ms).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from robo_rl.sysid.crazyflie_csv import PWM_FULL, STANDARD_GRAVITY
from robo_rl.sysid.flight_log import FlightLog, NotIdentifiable

MOTORS = ("motor.m1", "motor.m2", "motor.m3", "motor.m4")
FULL = {
    "position": ("stateEstimate.x", "stateEstimate.y", "stateEstimate.z"),
    "velocity": ("stateEstimate.vx", "stateEstimate.vy", "stateEstimate.vz"),
    "quaternion": ("stateEstimate.qx", "stateEstimate.qy", "stateEstimate.qz", "stateEstimate.qw"),
    "body_rates": ("gyro.x", "gyro.y", "gyro.z"),
}
COMPRESSED = {
    "position": ("stateEstimateZ.x", "stateEstimateZ.y", "stateEstimateZ.z"),
    "velocity": ("stateEstimateZ.vx", "stateEstimateZ.vy", "stateEstimateZ.vz"),
    "quaternion": ("stateEstimateZ.quat",),
    "body_rates": ("stateEstimateZ.rateRoll", "stateEstimateZ.ratePitch", "stateEstimateZ.rateYaw"),
}
ACC = ("acc.x", "acc.y", "acc.z")
UNITS = {
    "position": (1.0, "m", 1e-3, "mm"),
    "velocity": (1.0, "m/s", 1e-3, "mm/s"),
    "body_rates": (math.pi / 180.0, "deg/s", 1e-3, "mrad/s"),
}
"""Field -> (SI per unit of the full variables, their unit, SI per unit of the compressed ones, their unit)."""


@dataclass(frozen=True)
class _Block:
    file: Path
    time: np.ndarray
    """(n,) ms"""
    columns: dict[str, np.ndarray]


def log_files(path: Path) -> list[Path]:
    """The CSV files of a cfclient log: `path` itself, or the CSV files in the folder `path`."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix.lower() == ".csv")
        if not files:
            raise NotIdentifiable(f"{path}: a folder with no .csv files (cfclient writes one per log block)")
        return files
    return [path]


def read_cfclient_log(path: Path) -> FlightLog:
    """The cfclient log at `path` (a folder of block CSVs or one CSV) as a FlightLog in SI units; NotIdentifiable
    (one line) naming what is missing or unreadable."""
    blocks = [_read_block(file) for file in log_files(path)]
    found = {name: block for block in blocks for name in block.columns}
    motors = _block_with(found, MOTORS, path, "the motor commands")
    layout = FULL if all(n in found for names in FULL.values() for n in names) else COMPRESSED
    for field, names in layout.items():
        _block_with(found, names, path, f"the {field.replace('_', ' ')} (full or stateEstimateZ variables)")
    start = max(float(found[names[0]].time[0]) for names in (*layout.values(), MOTORS))
    end = min(float(found[names[0]].time[-1]) for names in (*layout.values(), MOTORS))
    keep = (motors.time >= start) & (motors.time <= end)
    if keep.sum() < 3:
        raise NotIdentifiable(f"{path}: the log blocks do not overlap in time (the motors' and the state's)")
    t = motors.time[keep]

    def column(name: str) -> np.ndarray:
        return np.interp(t, found[name].time, found[name].columns[name])

    compressed = layout is COMPRESSED
    scale = {field: units[2] if compressed else units[0] for field, units in UNITS.items()}
    rates = np.column_stack([column(n) for n in layout["body_rates"]]) * scale["body_rates"]
    if compressed:
        rates[:, 1] *= -1.0  # ratePitch = -gyro.y
    has_acc = all(n in found for n in ACC)
    return FlightLog(
        time=(t - t[0]) * 1e-3,
        position=np.column_stack([column(n) for n in layout["position"]]) * scale["position"],
        quaternion=_quaternion(found, layout, t),
        velocity=np.column_stack([column(n) for n in layout["velocity"]]) * scale["velocity"],
        body_rates=rates,
        commands=np.column_stack([motors.columns[n][keep] for n in MOTORS]) / PWM_FULL,
        specific_force=np.column_stack([column(n) for n in ACC]) * STANDARD_GRAVITY if has_acc else None,
        source=f"{path.name} (cfclient log, {len(blocks)} block file{'s' if len(blocks) != 1 else ''})",
        columns=_labels(layout, compressed),
    )


def _labels(layout: dict[str, tuple[str, ...]], compressed: bool) -> dict[str, tuple[str, str]]:
    def join(names: Sequence[str]) -> str:
        stem = names[0].rsplit(".", 1)[0]
        return f"{stem}.{'/'.join(n.rsplit('.', 1)[1] for n in names)}"

    labels = {field: (join(layout[field]), units[3] if compressed else units[1]) for field, units in UNITS.items()}
    return labels | {
        "time": ("Timestamp", "ms"),
        "commands": ("motor.m1..m4", "PWM 0..65535"),
        "specific_force": ("acc.x/y/z", "g"),
        "quaternion": (join(layout["quaternion"]), "unit quaternion"),
    }


def _block_with(found: dict[str, _Block], names: Sequence[str], path: Path, what: str) -> _Block:
    missing = [n for n in names if n not in found]
    if missing:
        raise NotIdentifiable(f"{path}: no log block has {', '.join(missing)} ({what})")
    return found[names[0]]


def _quaternion(found: dict[str, _Block], layout: dict[str, tuple[str, ...]], t: np.ndarray) -> np.ndarray:
    """(N, 4) w, x, y, z at times `t`: interpolated in one hemisphere and renormalised."""
    names = layout["quaternion"]
    block = found[names[0]]
    if len(names) == 1:
        xyzw = np.array([quaternion_decompress(int(v)) for v in block.columns[names[0]]])
    else:
        xyzw = np.column_stack([block.columns[n] for n in names])
    wxyz = xyzw[:, [3, 0, 1, 2]]
    flips = np.cumprod(np.where(np.einsum("ki,ki->k", wxyz[1:], wxyz[:-1]) < 0, -1.0, 1.0))
    wxyz[1:] *= flips[:, None]
    out = np.column_stack([np.interp(t, block.time, c) for c in wxyz.T])
    norm = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norm > 0, norm, 1.0)


def quaternion_decompress(packed: int) -> tuple[float, float, float, float]:
    """(x, y, z, w) of the firmware's 32-bit compressed quaternion (quatcompress.h): the index of the largest
    element in the top 2 bits, then for each other element from the last to the first 9 bits of magnitude (in
    units of 1/sqrt(2) / 511) and a sign bit; the largest is sqrt(1 - the others' squares)."""
    packed &= 0xFFFFFFFF
    largest = packed >> 30
    q = [0.0, 0.0, 0.0, 0.0]
    squares = 0.0
    for i in (3, 2, 1, 0):
        if i == largest:
            continue
        magnitude, negative = packed & 0x1FF, (packed >> 9) & 1
        packed >>= 10
        q[i] = (-1.0 if negative else 1.0) * math.sqrt(0.5) * magnitude / 511.0
        squares += q[i] * q[i]
    q[largest] = math.sqrt(max(0.0, 1.0 - squares))
    return q[0], q[1], q[2], q[3]


def _read_block(file: Path) -> _Block:
    try:
        with open(file, newline="", encoding="utf-8") as handle:
            reader = csv.reader(handle)
            header = [name.strip().lstrip("\ufeff") for name in next(reader, [])]
            rows = [row for row in reader if row]
    except UnicodeDecodeError as err:
        raise NotIdentifiable(f"{file}: not a cfclient log CSV (not UTF-8 text: byte {err.start})") from None
    except (OSError, csv.Error) as err:
        raise NotIdentifiable(f"{file}: cannot read ({getattr(err, 'strerror', None) or err})") from None
    stamp = next((i for i, name in enumerate(header) if name.lower() == "timestamp"), None)
    if stamp is None:
        raise NotIdentifiable(f"{file}: not a cfclient log CSV: no Timestamp column")
    table = np.empty((len(rows), len(header)))
    for r, row in enumerate(rows):
        if len(row) != len(header):
            raise NotIdentifiable(f"{file}: row {r + 2} has {len(row)} cells, the header {len(header)}")
        for c, cell in enumerate(row):
            try:
                table[r, c] = float(cell)
            except ValueError:
                raise NotIdentifiable(f"{file}: row {r + 2}, column {header[c]}: {cell!r} is not a number") from None
    time = table[:, stamp]
    if len(time) and not np.all(np.isfinite(time)):
        raise NotIdentifiable(f"{file}: a Timestamp is not a number")
    order = np.argsort(time, kind="stable")
    time, table = time[order], table[order]
    _, first = np.unique(time, return_index=True)  # a repeated tick: keep its first row
    columns = {name: table[first, c] for c, name in enumerate(header) if c != stamp}
    return _Block(file, time[first], columns)
