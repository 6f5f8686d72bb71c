"""`robo-rl sysid`: a frame file from a good log, one line and exit 2 (nothing written) from a log that cannot
identify the frame."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from robo_rl.cli.main import main
from robo_rl.sysid import FlightLog
from robo_rl.sysid.crazyflie_csv import write_crazyflie_csv


def test_sysid_writes_a_frame_the_simulator_loads(
    tmp_path: Path, excited_log: FlightLog, reference: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    from robo_rl.sim.quadrotor.params import load_frame

    log, out = tmp_path / "flight.csv", tmp_path / "mine.yaml"
    write_crazyflie_csv(log, excited_log)
    assert main(["sysid", str(log), "--frame", "crazyflie_2_1", "-o", str(out)]) == 0
    frame = load_frame(out)
    true = reference.TRUE_FIELDS
    assert frame.name == "mine" and frame.mass == load_frame("crazyflie_2_1").mass  # kept from the base
    assert frame.motor_fall_time_constant == pytest.approx(true["motor_fall_time_constant"], rel=0.02)
    assert frame.inertia == pytest.approx(true["inertia"], rel=0.02)
    assert "flight.csv" in frame.source
    text = out.read_text()
    assert text.startswith("# Identified by `robo-rl sysid` from flight.csv") and "residuals: collective" in text
    printed = capsys.readouterr().out
    assert "motor_rise_time_constant" in printed and "angular acceleration RMS" in printed


def test_a_hover_log_is_refused_in_one_line_and_nothing_is_written(
    tmp_path: Path, hover_log: FlightLog, capsys: pytest.CaptureFixture[str]
) -> None:
    log, out = tmp_path / "hover.csv", tmp_path / "mine.yaml"
    write_crazyflie_csv(log, hover_log)
    assert main(["sysid", str(log), "--frame", "crazyflie_2_1", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("robo-rl sysid: error: hover.csv") and "thrust_curve" in err
    assert not out.exists()


def test_an_unknown_format_or_a_missing_log_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    odd = tmp_path / "flight.txt"
    odd.write_text("x")
    assert main(["sysid", str(odd), "--frame", "crazyflie_2_1"]) == 2
    assert "give --format mcap, csv or cfclient" in capsys.readouterr().err
    assert main(["sysid", str(tmp_path / "none.csv"), "--frame", "crazyflie_2_1"]) == 2
    assert "no such log" in capsys.readouterr().err
