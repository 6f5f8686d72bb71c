"""RobotEnv's ROS link waits, during a takeover, for the operator's answer to the observation the trainer acts on
(scenario_operator_answer.py, real rclpy in a loopback-only namespace): through topics that answer arrives after the
observation, and taking the latest message at once executes the operator's previous step, one period late."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


def test_the_link_waits_for_the_operator_s_answer_and_for_the_arm_s_state(
    ros_scenario: Callable[..., dict[str, Any]],
) -> None:
    result = ros_scenario("scenario_operator_answer.py", timeout=120.0)
    before, after = [0.01, 0.0, 0.0, 0.0], [0.0, 0.02, 0.0, 0.0]
    assert result["latest_at_once"] == pytest.approx(before)  # the answer to the observation before
    assert result["answered"] == pytest.approx(after)  # the answer to this one, waited for
    assert result["unanswered"] == pytest.approx(before)  # no answer by the deadline: the latest
    assert result["unanswered_wait_s"] >= 0.1  # it waited until its deadline (at least)
    assert result["after_letting_go"] is None  # `intervening` false: no takeover, at once
    assert 0.03 <= result["state_after_s"] < 1.0  # next_input: at the state message's arrival, not before
    assert result["no_state"] is None and result["no_state_wait_s"] >= 0.1  # none: at the deadline
