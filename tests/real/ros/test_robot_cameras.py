"""Training on the robot through ROS with cameras (scenario_robot_cameras.py, real rclpy in a loopback-only namespace):
RobotEnv over RosLink with the arm_peg_pixels profile returns each camera's newest frame beside the state, decoded and
resized on arrival; as in policy_node a frame's age is its header stamp's, so frames that arrive on time but were
taken too long ago leave their camera stale, as a silent camera or undecodable frames do, and those steps are
invalid (not stored). Load-proof: a phase's first SETTLE steps are not judged (the frame before a change stays fresh
for the staleness timeout, 0.3 s), and fresh phases need most steps valid, not all."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

SETTLE = 4
"""Steps (0.1 s each) after a phase change before it is judged."""


@pytest.fixture(scope="module")
def run(ros_scenario: Callable[..., dict[str, Any]]) -> dict[str, Any]:
    return ros_scenario("scenario_robot_cameras.py", timeout=120.0)


def _phase(run: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [step for step in run["steps"] if step["phase"] == name][SETTLE:]


def _periods_apart(a: int, b: int) -> int:
    """Periods from b to a (the driver numbers them modulo 100)."""
    return (a - b + 50) % 100 - 50


def test_fresh_steps_observe_the_state_and_both_cameras_newest_frames_at_the_cameras_size(run: dict[str, Any]) -> None:
    for phase in ("fresh", "fresh_again", "fresh_end"):
        steps = _phase(run, phase)
        valid = [step for step in steps if step["valid"]]
        assert len(valid) >= len(steps) / 2, (phase, steps)
        for step in valid:
            assert step["shape"] == [1, 16, 16, 3]  # the driver's 32 x 32 frames, resized on arrival
            # the frames the trigger (the joint states' arrival) finds: of the state's period or the next one
            assert all(abs(_periods_apart(f, step["state"])) <= 1 for f in step["frames"].values()), step
            assert not step["stale"]


def test_frames_older_than_the_staleness_timeout_by_their_stamps_make_the_steps_invalid(run: dict[str, Any]) -> None:
    steps = _phase(run, "old")
    assert steps and all(not step["valid"] and step["stale"] == ["wrist_image"] for step in steps), steps
    newest = [step["newest_wrist"] for step in steps]
    assert _periods_apart(newest[-1], newest[0]) >= 5  # they kept arriving (and are kept): their stamps are old
    assert len({str(step["frames"]) for step in steps}) == 1  # the last valid observation, repeated


def test_a_silent_or_undecodable_camera_makes_the_steps_invalid(run: dict[str, Any]) -> None:
    silent, undecodable = _phase(run, "side_silent"), _phase(run, "undecodable")
    assert silent and all(not step["valid"] and step["stale"] == ["side_image"] for step in silent), silent
    assert undecodable and all(not s["valid"] and s["stale"] == ["wrist_image"] for s in undecodable), undecodable
    assert run["skipped"]["undecodable"] >= 10  # each undecodable frame skipped and counted
    before = ("fresh", "old", "fresh_again", "side_silent")  # (the next phase may still get the last bad frames)
    assert sum(run["skipped"][phase] for phase in before) == 0  # rgb8 frames, old or not, are read
    judged = sum(len(_phase(run, phase)) for phase in ("old", "side_silent", "undecodable"))
    assert run["invalid_steps"] >= judged
