"""A camera policy on the (simulated) arm (issue 37): policy_node runs an exported pixel-SAC policy with the bundled
arm_peg_pixels profile against sim_bridge (mujoco/peg_insert_pixels), whose camera frames are the policy's only
image source (scenario_sim_peg_pixels.py). The frames arrive as 64 x 64 rgb8 Images on the profile's topics,
policy_node commands from them and the state at each JointState without calling a camera stale, and the
simulated arm steps on those commands.

Load-proof: the scenario waits until both sides have done their steps, and the assertions count messages.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

MAX_STEP = 0.05  # rad, the profile's action bounds
ROS_PYTHON = os.environ.get("ROBO_RL_ROS_PYTHON", str(Path(__file__).resolve().parents[3] / ".venv-ros/bin/python"))


@pytest.fixture(scope="module")
def driven(ros_scenario: Callable[..., dict[str, Any]], trained_peg_pixels_run: Path) -> dict[str, Any]:
    if subprocess.run([str(ROS_PYTHON), "-c", "import mujoco"], capture_output=True).returncode != 0:
        pytest.skip(f"{ROS_PYTHON} cannot import mujoco: sim_bridge cannot simulate mujoco/peg_insert_pixels there")
    policy = trained_peg_pixels_run / "policy.onnx"
    result = ros_scenario("scenario_sim_peg_pixels.py", str(policy), timeout=500.0)
    assert result["reached"], (result["frame_counts"], len(result["commands"]), result["bridge"], result["logs"])
    return result


def test_sim_bridge_publishes_both_cameras_as_the_profile_expects(driven: dict[str, Any]) -> None:
    for camera, seen in driven["frames"].items():
        assert all(frame == [64, 64, "rgb8", 64 * 64 * 3] for frame in seen), (camera, seen)


def test_policy_node_commands_from_the_frames_without_calling_a_camera_stale(driven: dict[str, Any]) -> None:
    commands = driven["commands"]
    assert len(commands) >= 30 and int(driven["bridge"]["steps"]) >= 30
    assert driven["bridge"]["commanded"] == "True"
    late = driven["statuses"][-10:]  # once running: the newest statuses, after the nodes found each other
    assert all("stale" not in message for _, message, _ in late), late
    assert all("input_age_ms.wrist_image" in values and "input_age_ms.side_image" in values for *_, values in late)
    assert not [s for s in driven["statuses"] if s[0] == 2], "an ERROR (e-stop) status"
