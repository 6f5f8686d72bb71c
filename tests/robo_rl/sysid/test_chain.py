"""`robo-rl sysid LOG --frame BASE --train PRESET`: one command from a flight log to an exported policy flown on the
fitted frame and in L2F, with one report; nothing exported below the gate. Training is cut to one iteration here
(the chain's plumbing); bench/sysid_chain.py measures it trained to the gate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from robo_rl.cli.main import main
from robo_rl.sysid import FlightLog
from robo_rl.sysid.crazyflie_csv import write_crazyflie_csv

QUICK = ["--max-iterations", "1", "--episodes", "8", "--l2f-episodes", "4", "--set", "task.num_envs=64"]


@pytest.fixture(scope="module")
def flight_csv(tmp_path_factory: pytest.TempPathFactory, excited_log: FlightLog) -> Path:
    path = tmp_path_factory.mktemp("chain") / "flight.csv"
    write_crazyflie_csv(path, excited_log)
    return path


def test_one_command_fits_trains_exports_and_flies_with_one_report(
    flight_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    frame, runs = tmp_path / "mine.yaml", tmp_path / "runs"
    argv = ["sysid", str(flight_csv), "--frame", "crazyflie_2_1", "-o", str(frame), "--train", "quadrotor_hover_ppo"]
    assert main([*argv, "--runs-root", str(runs), "--gate", "0", *QUICK]) == 0
    (run,) = runs.glob("*/*")
    assert (run / "policy.onnx").is_file() and (run / "mine.yaml").read_text() == frame.read_text()
    config = yaml.safe_load((run / "config.yaml").read_text())
    assert config["task"]["config"]["frame"] == str(frame.resolve())  # trained on the fitted frame
    report = json.loads((run / "sysid_report.json").read_text())
    assert report["fit"]["motor_model"] in ("command", "rotor_speed")
    assert report["train"]["iterations"] == 1 and report["fitted_frame"]["episodes"] == 8
    assert report["onnx"]["success_rate"] == report["fitted_frame"]["success_rate"]  # the same flights, same policy
    assert report["l2f"].startswith("L2F transfer:")
    text = (run / "sysid_report.txt").read_text()
    assert "motor_rise_time_constant" in text and "policy.onnx on the fitted frame" in text
    out = capsys.readouterr().out
    assert "1/5 identify" in out and "5/5 fly policy.onnx in L2F" in out


def test_below_the_gate_nothing_is_exported_and_the_report_says_so(flight_csv: Path, tmp_path: Path) -> None:
    frame, runs = tmp_path / "mine.yaml", tmp_path / "runs"
    argv = ["sysid", str(flight_csv), "--frame", "crazyflie_2_1", "-o", str(frame), "--train", "quadrotor_hover_ppo"]
    assert main([*argv, "--runs-root", str(runs), *QUICK]) == 1  # one iteration cannot pass the 95 % gate
    (run,) = runs.glob("*/*")
    assert not (run / "policy.onnx").exists()
    assert "not exported" in (run / "sysid_report.txt").read_text()


def test_a_preset_without_a_frame_is_refused_before_the_fit(
    flight_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    frame = tmp_path / "mine.yaml"
    argv = ["sysid", str(flight_csv), "--frame", "crazyflie_2_1", "-o", str(frame), "--train", "pendulum_ppo"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "has no frame to train on" in err and not frame.exists()
    assert main([*argv[:-1], "quadrotor_hover_ppo", "--gate", "1.5"]) == 2
    assert "--gate 1.5" in capsys.readouterr().err
