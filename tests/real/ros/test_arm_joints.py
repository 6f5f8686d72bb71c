"""policy_node on the arm profile with real rclpy (scenario_arm_joints.py): JointState read by joint name from a
driver publishing alphabetically, a gripper's JointState on the same topic skipped, the safe command holding the
measured pose, the rate limits starting from it, and the move home only on `go_home`, timed by the farthest joint;
every JointTrajectory stamped zero ("start on receipt": joint_trajectory_controller drops a trajectory whose
non-zero stamp + time_from_start is past on its clock, tests/real/test_joint_trajectory_rule.py).

Conventions, checked against the message definitions of `.venv-ros`'s wheels (common_interfaces 5.5.1:
trajectory_msgs/msg/JointTrajectoryPoint.msg, sensor_msgs/msg/JointState.msg; rcl_interfaces 2.3.0:
builtin_interfaces/msg/Duration.msg): time_from_start is a builtin_interfaces/Duration of `int32 sec` and
`uint32 nanosec` in [0, 1e9); JointState carries `name` with `position`/`velocity`/`effort` arrays paired by index.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

JOINTS = ("yaw", "shoulder", "elbow", "wrist")
HOME = [0.0, 0.5, -1.0, 0.5]  # the arm profile's actions' `safe` values
POSE = [0.3, 0.6, -0.8, 0.2]  # the scenario's measured poses, profile order
MOVED = [1.0, 0.2, -0.5, 0.0]
YAW_BIAS = 0.5
STEP = 2.0 * 0.02  # 2 rad/s × one 20 ms period
TOL = 1e-5  # the ONNX policy computes in float32


@pytest.fixture(scope="module")
def arm(ros_scenario: Callable[..., dict[str, Any]], linear_policy: Callable[..., Path]) -> dict[str, Any]:
    weights = {(f"{joint}_angle_target", f"{joint}_angle"): 1.0 for joint in JOINTS}
    policy = linear_policy("arm", weights, {"yaw_angle_target": YAW_BIAS})
    result = ros_scenario("scenario_arm_joints.py", str(policy), timeout=400.0)
    assert result["ready"], result["logs"]["policy_node"]
    # Every phase lasted until its effect showed (the scenario waits for them, however slow the machine).
    unseen = [key for key, seen in result["marks"].items() if key.endswith("_seen") and not seen]
    assert not unseen, (unseen, result["logs"]["policy_node"])
    return result


def _between(result: dict[str, Any], start: str, end: str | None = None) -> list[list[Any]]:
    marks = result["marks"]
    stop = marks[end] if end else float("inf")
    return [c for c in result["commands"] if marks[start] <= c[0] < stop]


def _is(command: list[Any], pose: list[float]) -> bool:
    return command[2] == pytest.approx(pose, abs=TOL)


def test_the_message_definitions_match_the_conventions_used(arm: dict[str, Any]) -> None:
    types = arm["types"]
    assert types["time_from_start"] == "builtin_interfaces/Duration"
    assert types["duration"] == {"sec": "int32", "nanosec": "uint32"}
    assert {key: types["joint_state"][key] for key in ("name", "position", "velocity", "effort")} == {
        "name": "sequence<string>",
        "position": "sequence<double>",
        "velocity": "sequence<double>",
        "effort": "sequence<double>",
    }


def test_nothing_is_sent_before_the_arms_first_joint_state(arm: dict[str, Any]) -> None:
    # Active and matched (its WARN says "nothing sent: no measured pose yet"), yet not one command: not home.
    assert arm["marks"]["before_inputs"] == 0
    assert all(c[0] >= arm["marks"]["good"] for c in arm["commands"])
    withheld = [s for s in arm["statuses"] if "nothing sent" in s[2]]
    assert withheld and int(withheld[-1][3]["withheld_commands"]) > 0


def test_joints_are_read_by_name_and_the_rate_limits_start_from_the_measured_pose(arm: dict[str, Any]) -> None:
    good = _between(arm, "good", "silent")
    assert len(good) > 30, arm["logs"]["policy_node"]
    assert all(c[1] == list(JOINTS) for c in arm["commands"])  # the profile's joint order, always
    # header.stamp zero: "start on receipt" on the controller's clock (tests/real/test_joint_trajectory_rule.py)
    assert all(c[4] == [0, 0] for c in arm["commands"])
    # Each target is that joint's own angle, read by name (by index, the alphabetical message would give
    # (-0.8, 0.6, 0.2, 0.3)); from the home pose the first commands would have moved shoulder, elbow and wrist.
    assert all(c[2][1:] == pytest.approx(POSE[1:], abs=TOL) for c in good)
    yaws = [c[2][0] for c in good]
    moving = [yaw for yaw in yaws if yaw > POSE[0] + TOL]
    assert moving[0] == pytest.approx(POSE[0] + STEP, abs=TOL)  # one rate-limited step from the measured yaw
    assert all(b - a <= STEP + TOL for a, b in itertools.pairwise(yaws))
    assert max(yaws) == pytest.approx(POSE[0] + YAW_BIAS, abs=TOL)
    policy = [c for c in good if c[2][0] > POSE[0] + TOL]
    assert all(c[3] == pytest.approx(0.02) for c in policy)  # time_from_start: one control period


def test_the_grippers_joint_states_are_skipped_and_never_latch(arm: dict[str, Any]) -> None:
    statuses = arm["statuses"]
    assert not [s for s in statuses if s[1] == 2], [s[2] for s in statuses if s[1] == 2]  # no ERROR, no e-stop
    assert all(s[3].get("estopped") == "False" for s in statuses if "estopped" in s[3])
    in_good = [s for s in statuses if arm["marks"]["good"] < s[0] < arm["marks"]["silent"]]
    assert any(s[1] == 0 and int(s[3]["skipped_messages"]) > 0 for s in in_good)  # OK while both publish
    skipped = int(statuses[-1][3]["skipped_messages"])
    assert skipped > 50
    assert "finger_left" in statuses[-1][3]["last_skipped"]


def test_a_silent_arm_holds_its_last_measured_pose_then_restarts_from_the_new_one(arm: dict[str, Any]) -> None:
    silent = _between(arm, "silent", "resumed")
    holds = [c for c in silent if _is(c, POSE)]
    assert holds and _is(silent[-1], POSE)
    # The first hold goes back from the last command (yaw 0.8) to the measured 0.3 at 2 rad/s: 0.25 s.
    assert holds[0][3] == pytest.approx(YAW_BIAS / 2.0, abs=1e-6)
    assert not any(_is(c, HOME) for c in arm["commands"] if c[0] < arm["marks"]["home"])
    stale = [s for s in arm["statuses"] if arm["marks"]["silent"] < s[0] < arm["marks"]["resumed"]]
    assert any("stale observation: no joint_states" in s[2] and s[1] == 1 for s in stale)
    resumed = [c for c in _between(arm, "resumed", "home") if not _is(c, POSE)]
    # From the measured MOVED pose (yaw 1.0): 1.04; from the held pose it would have been 0.34.
    assert resumed[0][2] == pytest.approx([MOVED[0] + STEP, *MOVED[1:]], abs=TOL)


def test_go_home_moves_home_timed_by_the_farthest_joint_and_deactivation_holds(arm: dict[str, Any]) -> None:
    home = [c for c in _between(arm, "home", "deactivated") if _is(c, HOME)]
    assert len(home) > 10
    # max |home - MOVED| = 1.0 rad (the yaw) at 2 rad/s: time_from_start 0.5 s (the arm stays at MOVED here).
    assert all(c[3] == pytest.approx(0.5, abs=1e-6) for c in home)
    assert any("going home" in s[2] and s[1] == 1 for s in arm["statuses"] if s[0] > arm["marks"]["home"])
    assert arm["marks"]["deactivate_ok"]
    # After the last move home (one may still be in flight as the node deactivates): held where the arm is.
    last_home = max(c[0] for c in arm["commands"] if _is(c, HOME))
    after = [c for c in arm["commands"] if c[0] > last_home]
    assert after and all(_is(c, MOVED) for c in after)  # never home again, nor the policy's
    assert after[0][3] == pytest.approx(0.5, abs=1e-6)  # from home back to the measured pose at 2 rad/s


def test_robot_envs_link_skips_a_foreign_joint_state_and_keeps_the_given_time_from_start(
    ros_scenario: Callable[..., dict[str, Any]],
) -> None:
    """RosLink (learning on the robot, scenario_arm_link.py): read by name, the gripper's messages skipped."""
    link = ros_scenario("scenario_arm_link.py", timeout=120.0)
    assert link["positions"] == pytest.approx(POSE)
    assert link["fresh_with_arm"] and link["skipped_with_arm"] > 20
    assert link["stale_with_gripper_only"] and link["skipped"] > link["skipped_with_arm"]
    durations = [duration for _, duration in link["received"]]
    assert durations == pytest.approx([0.5, 0.02])  # RobotEnv's timing of a hold, else one period
    assert all(positions == pytest.approx(POSE) for positions, _ in link["received"])
