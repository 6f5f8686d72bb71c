"""Unit checks from the physics (robo_rl.sysid.units) and a corpus of damaged logs through `robo-rl sysid`.

The units a Crazyflie logs its columns in are the firmware's (bitcraze/crazyflie-firmware): `acc.x/y/z` in g
(sensorData.acc, +1 on acc.z at rest), `gyro.x/y/z` in deg/s, `motor.m1..m4` as PWM 0..65535, cflib's `timestamp`
in ms. Each damaged log rewrites a good log's columns as another unit would hold them; `robo-rl sysid` must refuse
it in one line that names the column and the unit its values are in, and never show a traceback.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable
from pathlib import Path

import pytest

from robo_rl.cli.main import main
from robo_rl.sysid import FlightLog
from robo_rl.sysid.crazyflie_csv import write_crazyflie_csv
from robo_rl.sysid.unit_scales import likely_unit

Table = list[list[str]]


def _scaled(columns: tuple[str, ...], factor: float) -> Callable[[list[str], Table], None]:
    def damage(header: list[str], rows: Table) -> None:
        for name in columns:
            i = header.index(name)
            for row in rows:
                row[i] = repr(float(row[i]) * factor)

    return damage


ACC = ("acc.x", "acc.y", "acc.z")
GYRO = ("gyro.x", "gyro.y", "gyro.z")
MOTORS = ("motor.m1", "motor.m2", "motor.m3", "motor.m4")
UNIT_ERRORS = {
    "accelerometer in m/s^2": (_scaled(ACC, 9.81), "acc.x/y/z read as g", "look like m/s^2"),
    "accelerometer in mg": (_scaled(ACC, 1000.0), "acc.x/y/z read as g", "look like mg"),
    "gyroscope in rad/s": (_scaled(GYRO, math.pi / 180), "gyro.x/y/z read as deg/s", "look like rad/s"),
    "gyroscope y flipped": (_scaled(("gyro.y",), -1.0), "gyro.x/y/z read as deg/s", "check the axes and their signs"),
    "timestamp in s": (_scaled(("timestamp",), 1e-3), "timestamp read as ms", "look like s"),
    "timestamp in us": (_scaled(("timestamp",), 1e3), "timestamp read as ms", "look like us"),
    "motors as fractions": (_scaled(MOTORS, 1 / 65535), "motor.m1..m4 read as PWM 0..65535", "look like fraction 0..1"),
    "motors in percent": (_scaled(MOTORS, 100 / 65535), "motor.m1..m4 read as PWM 0..65535", "look like percent"),
    "velocity in mm/s": (
        _scaled(("stateEstimate.vx", "stateEstimate.vy", "stateEstimate.vz"), 1000.0),
        "stateEstimate.vx/vy/vz read as m/s",
        "look like mm/s",
    ),
    "position in mm": (
        _scaled(("stateEstimate.x", "stateEstimate.y", "stateEstimate.z"), 1000.0),
        "stateEstimate.x/y/z read as m",
        "look like mm",
    ),
}


def _write(path: Path, header: list[str], rows: Table) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)


@pytest.fixture(scope="module")
def good_csv(tmp_path_factory: pytest.TempPathFactory, excited_log: FlightLog) -> tuple[list[str], Table]:
    path = tmp_path_factory.mktemp("units") / "flight.csv"
    write_crazyflie_csv(path, excited_log)
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    return rows[0], rows[1:]


@pytest.mark.parametrize("case", sorted(UNIT_ERRORS))
def test_a_column_in_another_unit_is_refused_in_one_line_naming_it(
    case: str, good_csv: tuple[list[str], Table], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    damage, column, likely = UNIT_ERRORS[case]
    header, rows = good_csv[0], [list(row) for row in good_csv[1]]
    damage(header, rows)
    log, out = tmp_path / "flight.csv", tmp_path / "frame.yaml"
    _write(log, header, rows)
    assert main(["sysid", str(log), "--frame", "crazyflie_2_1", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and column in err and likely in err, err
    assert not out.exists()


def _drop_cells(header: list[str], rows: Table) -> None:
    rows[100] = rows[100][:5]


def _nan(header: list[str], rows: Table) -> None:
    rows[50][header.index("acc.z")] = "nan"


def _repeat_time(header: list[str], rows: Table) -> None:
    rows[20][0] = rows[19][0]


def _reverse(header: list[str], rows: Table) -> None:
    rows.reverse()


def _zero_quaternion(header: list[str], rows: Table) -> None:
    for name in ("stateEstimate.qx", "stateEstimate.qy", "stateEstimate.qz", "stateEstimate.qw"):
        rows[10][header.index(name)] = "0"


def _gap(header: list[str], rows: Table) -> None:
    del rows[1000:1500]


def _short(header: list[str], rows: Table) -> None:
    del rows[500:]


def _blank_cell(header: list[str], rows: Table) -> None:
    rows[7][header.index("motor.m2")] = ""


def _negative_pwm(header: list[str], rows: Table) -> None:
    rows[7][header.index("motor.m2")] = "-5"


def _duplicate_header_row(header: list[str], rows: Table) -> None:
    rows.insert(300, list(header))


def _constant_motors(header: list[str], rows: Table) -> None:
    for row in rows:
        for name in MOTORS:
            row[header.index(name)] = "40000"


def _one_row(header: list[str], rows: Table) -> None:
    del rows[1:]


def _no_rows(header: list[str], rows: Table) -> None:
    rows.clear()


DAMAGED = {
    "a row cut short": _drop_cells,
    "a nan": _nan,
    "a repeated timestamp": _repeat_time,
    "rows reversed": _reverse,
    "a zero quaternion": _zero_quaternion,
    "a dropped stretch": _gap,
    "5 s of flight": _short,
    "a blank cell": _blank_cell,
    "a negative PWM": _negative_pwm,
    "the header again inside": _duplicate_header_row,
    "motors never move": _constant_motors,
    "one row": _one_row,
    "no rows": _no_rows,
}


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_a_damaged_log_gets_one_line_or_a_frame_never_a_traceback(
    case: str, good_csv: tuple[list[str], Table], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    header, rows = good_csv[0], [list(row) for row in good_csv[1]]
    DAMAGED[case](header, rows)
    log, out = tmp_path / "flight.csv", tmp_path / "frame.yaml"
    _write(log, header, rows)
    code = main(["sysid", str(log), "--frame", "crazyflie_2_1", "-o", str(out)])
    err = capsys.readouterr().err
    if case == "a dropped stretch":  # a logger's dropout: the fit skips the gap
        assert code == 0 and out.exists()
    else:
        assert code == 2 and err.count("\n") == 1 and err.startswith("robo-rl sysid: error: ") and not out.exists()


def test_the_likely_unit_is_the_one_that_makes_the_physics_agree() -> None:
    assert likely_unit("body_rates", "deg/s", 180 / math.pi) == "rad/s"
    assert likely_unit("specific_force", "g", 1 / 9.81) == "m/s^2"
    assert likely_unit("specific_force", "g", 1.0) == "g"
    assert likely_unit("velocity", "m/s", 3.0) is None  # no unit is 3x a metre per second
