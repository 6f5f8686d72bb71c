"""policy_node runs a camera policy (scenario_camera.py): a state input, a raw sensor_msgs/Image and a
CompressedImage in; each command is the hand-built probe's exact output for the state and the newest frames; a
silent camera gives the safe command and a stale status naming it, and its return the policy's commands again;
frames stamped long ago count as stale though they keep coming.

What is asserted holds at any machine speed (the scenario waits for effects; the staleness timeout is a generous
1 s). The timeout's logic, one safe command per period after it, runs on stepped time in
tests/real/test_camera_policy.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from ..camera_probe import SAFE, expected_action, write_camera_probe, write_probe_profile

STALENESS_S = 1.0
WARN_LEVEL = 1


@pytest.fixture(scope="module")
def result(ros_scenario: Callable[..., dict[str, Any]], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("camera")
    policy = write_camera_probe(folder / "probe.onnx")
    profile = write_probe_profile(folder / "camera_probe.yaml", STALENESS_S)
    return ros_scenario("scenario_camera.py", str(policy), str(profile), timeout=300.0)


def _expected(result: dict[str, Any], phase: int) -> np.ndarray:
    """The probe's command for the scenario's state and frames: the wrist crop's blocks average to its means, the
    scene's PNG is one grey level."""
    frames = {
        "wrist": np.broadcast_to(np.array(result["wrist_means"][phase], dtype=np.uint8), (4, 4, 3)),
        "scene": np.full((2, 2, 1), result["scene_grey"], dtype=np.uint8),
    }
    return expected_action(np.array(result["state"]), frames)


def _assert_all(commands: list[list[float]], expected: np.ndarray) -> None:
    assert len(commands) >= 20
    np.testing.assert_allclose(np.array(commands), np.broadcast_to(expected, (len(commands), 2)), atol=1e-6, rtol=0)


def test_commands_are_the_policys_output_for_the_state_and_the_newest_frames(result: dict[str, Any]) -> None:
    assert result["ready"] and result["exit_codes"] == {"policy_node": 0}, result["logs"]
    _assert_all(result["phase1"], _expected(result, 0))
    _assert_all(result["phase2"], _expected(result, 1))
    assert result["phase2"][0][0] == pytest.approx(0.5 + 150 / 255, abs=1e-6)  # the brighter wrist frames
    assert result["phase1"][0][1] == pytest.approx(-0.25 + 2 * 102 / 255, abs=1e-6)  # the compressed scene camera


def test_a_silent_camera_gives_the_safe_command_and_a_stale_status_naming_it(result: dict[str, Any]) -> None:
    assert result["stale_first_safe_after_s"] >= STALENESS_S  # never early (one machine, one monotonic clock)
    assert result["stale"] == [[SAFE, SAFE]] * len(result["stale"]) and len(result["stale"]) >= 20
    _, level, message, values = result["stale_statuses"][0]
    assert level == WARN_LEVEL and "stale observation" in message and "no wrist_image" in message
    assert values["stale_inputs"] == "wrist_image"
    assert float(values["input_age_ms.wrist_image"]) > STALENESS_S * 1e3 > float(values["input_age_ms.state"])


def test_the_policy_commands_again_once_the_camera_is_back(result: dict[str, Any]) -> None:
    _assert_all(result["back"], _expected(result, 1))


def test_frames_stamped_long_ago_are_stale_though_they_keep_arriving(result: dict[str, Any]) -> None:
    assert result["late"] == [[SAFE, SAFE]] * len(result["late"]) and len(result["late"]) >= 20
    values = result["late_statuses"][0][3]
    assert values["stale_inputs"] == "wrist_image" and float(values["input_age_ms.wrist_image"]) > 4e3
