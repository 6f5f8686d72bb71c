"""Every process a launch file starts stops by itself after SIGINT or SIGTERM (scenario_launch_stop.py), under
`robo-rl launch` and under the real `ros2 launch` where it is installed (`make ros-launch`; skipped otherwise): the
trainer with its checkpoint and the policy.onnx a normal end exports, sim_bridge after policy_node stopped first,
the on-robot trainer while it waits for the robot (one line, no traceback, no RCLError).

Nothing here depends on the machine's speed: a process passes when it exited by itself before the scenario's
generous deadline (30 s). How fast they stop (within 2 s on the quiet 2-core VM, under the launchers' 5 s before
SIGTERM) is measured by bench/launch_stop.py."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
ROS_PYTHON = Path(os.environ.get("ROBO_RL_ROS_PYTHON", ROOT / ".venv-ros" / "bin" / "python"))
"""The ROS venv's Python, as conftest.py finds it."""
DEADLINE_S = 30.0
"""The scenario's deadline (scenario_launch_stop.DEADLINE_S): a process still running then was killed."""
LAUNCHERS = ["robo-rl", "ros2"]


def _ros2_launch_missing() -> str:
    """Why the real `ros2 launch` cannot run here ("" when it can)."""
    if not (ROS_PYTHON.parent / "ros2").is_file():
        return f"no {ROS_PYTHON.parent / 'ros2'}: the real ros2 launch is not installed (make ros-launch)"
    probe = [str(ROS_PYTHON), "-c", "import sys, ros2launch, launch_ros, composition_interfaces; print(sys.prefix)"]
    done = subprocess.run(probe, capture_output=True, text=True)
    if done.returncode != 0:
        return f"ros2 launch is incomplete in {ROS_PYTHON}: {done.stderr.strip().splitlines()[-1:]} (make ros-launch)"
    if not (Path(done.stdout.strip()) / "share" / "robo_rl" / "launch").is_dir():
        return "robo_rl is not installed as a ROS package in the ROS venv's prefix (make ros-launch)"
    return ""


def _launcher(name: str) -> str:
    if name == "ros2":
        missing = _ros2_launch_missing()
        if missing:
            pytest.skip(missing)
    return name


def _stopped_by_themselves(result: dict[str, Any]) -> None:
    assert result["ready"], result["log"]
    assert result["failures"] == [], result["log"]
    late = {name: s for name, s in result["exit_s"].items() if s >= DEADLINE_S}
    assert not late, f"killed after {DEADLINE_S} s: {late}\n{result['log']}"


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_training_stops_with_its_checkpoint_and_policy(
    ros_scenario: Callable[..., dict[str, Any]], launcher: str
) -> None:
    result = ros_scenario("scenario_launch_stop.py", _launcher(launcher), "train", "INT", timeout=300.0)
    _stopped_by_themselves(result)
    files = result["run_files"]
    assert any(f.endswith("checkpoints/latest.pt") for f in files), files
    assert any(f.endswith("/policy.onnx") for f in files), files
    assert "stopped by SIGINT" in result["log"]
    if launcher == "ros2":  # the node's exit status after a clean stop is 0, as the other nodes'
        assert "process has died" not in result["log"], result["log"]


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_sim_bridge_stops_after_policy_node_stopped_first(
    ros_scenario: Callable[..., dict[str, Any]], launcher: str, trained_hover_run: Path
) -> None:
    policy = str(trained_hover_run / "policy.onnx")
    result = ros_scenario("scenario_launch_stop.py", _launcher(launcher), "sim", "TERM", policy, timeout=300.0)
    _stopped_by_themselves(result)
    assert {"policy_node", "sim_bridge", "teleop_node"} <= set(result["exit_s"]), result["exit_s"]


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_training_on_the_robot_stops_while_it_waits_for_the_robot(
    ros_scenario: Callable[..., dict[str, Any]], launcher: str
) -> None:
    result = ros_scenario("scenario_launch_stop.py", _launcher(launcher), "robot", "INT", timeout=300.0)
    _stopped_by_themselves(result)
    assert {"teleop_node", "recorder"} <= set(result["exit_s"]), result["exit_s"]
    assert result["log"].count("interrupted during set-up") == 1, result["log"]
