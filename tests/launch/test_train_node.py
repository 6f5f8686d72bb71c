"""`ros2 run robo_rl train --ros-args -p ...` becomes the same `robo-rl train` command as under `robo-rl launch`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from robo_rl.launch import LaunchError
from robo_rl.launch.train_node import train_argv

ROOT = Path(__file__).resolve().parents[2]


def test_ros_parameters_become_train_flags() -> None:
    argv = ["--ros-args", "-r", "__node:=train_quadrotor_hover", "-p", "preset:=quadrotor_hover_ppo", "-p", "seed:=3"]
    argv += ["-p", "num_envs:=", "-p", "export:=true", "-p", "quiet:=false", "-p", "max_iterations:=20"]
    assert train_argv(argv) == ["train", "quadrotor_hover_ppo", "--seed", "3", "--export", "--max-iterations", "20"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--ros-args", "--params-file", "p.yaml"], "parameter files are not supported"),
        (["--ros-args", "-p", "seed"], "expected -p NAME:=VALUE"),
        (["--ros-args", "-p", "speed:=3"], "unknown parameter 'speed'"),
        (["--ros-args", "--log-level", "debug"], "unsupported ROS argument '--log-level'"),
    ],
)
def test_bad_ros_arguments_are_one_line_errors(argv: list[str], message: str) -> None:
    with pytest.raises(LaunchError, match=message):
        train_argv(argv)


def test_installed_executable_trains(tmp_path: Path) -> None:
    """ros_bin/train, as colcon installs it, runs a (tiny) training."""
    ros_args = ["--ros-args", "-p", "preset:=pendulum_ppo", "-p", "max_iterations:=1", "-p", "num_envs:=8"]
    ros_args += ["-p", f"runs_root:={tmp_path}", "-p", "quiet:=true"]
    done = subprocess.run([sys.executable, str(ROOT / "ros_bin" / "train"), *ros_args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(list(tmp_path.glob("pendulum_ppo/*/metrics.jsonl"))) == 1


def test_the_ros_entry_point_answers_a_bad_ros_argument_with_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from robo_rl.cli.ros_train import main

    assert main(["--ros-args", "--params-file", "p.yaml"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "parameter files are not supported" in err[0]
