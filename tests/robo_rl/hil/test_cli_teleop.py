"""`robo-rl train --teleop simulated`: the simulated human takes over training envs, and the run records it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from robo_rl.algorithms.registry import entries
from robo_rl.cli.main import main


def test_simulated_teleop_run_logs_interventions_and_records_the_config(tmp_path: Path) -> None:
    argv = ["train", "quadrotor_hover_sac", "--teleop", "simulated", "--max-iterations", "100", "--num-envs", "16"]
    assert main([*argv, "--runs-root", str(tmp_path), "--quiet"]) == 0
    (run,) = (tmp_path / "quadrotor_hover_sac").iterdir()
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert 0.0 < rows[-1]["intervention_rate"] < 1.0 and "episode_intervention_rate" in rows[-1]
    assert yaml.safe_load((run / "config.yaml").read_text())["hil"]["teleop"] == "simulated"


def test_teleop_with_ppo_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["train", "quadrotor_hover_ppo", "--teleop", "simulated", "--runs-root", str(tmp_path)]
    assert main(argv) == 2
    off_policy = ", ".join(entry.name for entry in entries() if entry.loop == "off_policy")  # the registry's
    assert f"interventions are off-policy data; use an off-policy algo ({off_policy})" in capsys.readouterr().err
    assert not (tmp_path / "quadrotor_hover_ppo").exists()


def test_task_without_an_expert_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["train", "pendulum_sac", "--teleop", "simulated", "--set", "task.name=mujoco/cartpole_swingup"]
    assert main([*argv, "--runs-root", str(tmp_path)]) == 2
    assert "task 'mujoco/cartpole_swingup' has no scripted expert" in capsys.readouterr().err


def test_ros_teleop_without_rclpy_says_where_to_train(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["train", "quadrotor_hover_sac", "--teleop", "ros", "--runs-root", str(tmp_path)]
    assert main(argv) == 2  # the test venv has no rclpy
    assert "hil.teleop=ros needs rclpy here: train from .venv-ros" in capsys.readouterr().err
