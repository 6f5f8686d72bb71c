"""policy_node reads an arm's JointState by joint name and commands in the profile's joint order
(scenario_arm_joints.py: a driver publishing alphabetically, then without the wrist)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

JOINTS = ("yaw", "shoulder", "elbow", "wrist")
HOME = [0.0, 0.5, -1.0, 0.5]  # the arm profile's safe command


def test_a_shuffled_joint_state_is_read_by_name_and_a_missing_joint_stops_the_arm(
    ros_scenario: Callable[..., dict[str, Any]], linear_policy: Callable[..., Path]
) -> None:
    weights = {(f"{joint}_angle_target", f"{joint}_angle"): 1.0 for joint in JOINTS}
    result = ros_scenario("scenario_arm_joints.py", str(linear_policy("arm", weights)), timeout=180.0)
    logs = result["logs"]["policy_node"]
    assert result["ready"], logs
    good = [c for c in result["commands"] if c[0] < result["broken"]]
    assert len(good) > 50, logs
    assert all(c[1] == list(JOINTS) for c in result["commands"])  # the profile's joint order, always
    assert all(c[3] == pytest.approx(0.02) for c in good)  # time_from_start: one control period
    # Each target is that joint's own angle, read by name: (0.3, 0.6, -0.8, 0.2) in the profile's order (reading
    # the alphabetical message by index would give (-0.8, 0.6, 0.2, 0.3)).
    assert good[-1][2] == pytest.approx([0.3, 0.6, -0.8, 0.2], abs=1e-5)
    after = [c for c in result["commands"] if c[0] > result["broken"] + 0.1]
    assert after and all(c[2] == pytest.approx(HOME) for c in after)  # safe command, latched
    errors = [s for s in result["statuses"] if s[0] > result["broken"] and s[1] == 2]
    assert errors and "wrist" in errors[-1][2], result["statuses"][-5:]
