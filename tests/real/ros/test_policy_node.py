"""policy_node as a real ROS 2 process: lifecycle, rate, bounds, stale and NaN inputs, e-stop, profile mismatch."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from robo_rl.real.profile import load_profile

ERROR_LEVEL = 2


@pytest.fixture(scope="module")
def contract(ros_scenario: Callable[..., dict[str, Any]], policy_file: Callable[[str], Path]) -> dict[str, Any]:
    return ros_scenario("scenario_policy_node.py", str(policy_file("quadrotor_crazyflie")))


def test_lifecycle_transitions(contract: dict[str, Any]) -> None:
    assert contract["states"] == {
        "start": "unconfigured",
        "configured": "inactive",
        "activated": "active",
        "reactivated": "active",
        "mismatch": "unconfigured",
    }
    assert contract["configure"] and contract["activate"] and contract["deactivate"] and contract["reactivate"]
    assert contract["commands_while_inactive"] == 0
    assert contract["exit_codes"] == {"policy_node": 0, "mismatch": 0}


def test_commands_at_the_rate_within_bounds(contract: dict[str, Any]) -> None:
    # One command per odometry message at 100 Hz; PWM stays in [0, 65535].
    assert contract["rate_hz"] == pytest.approx(100.0, rel=0.1)
    assert 0.0 <= contract["pwm_min"] and contract["pwm_max"] <= 65535.0
    assert contract["safe_in_good"] == 0


def test_stale_odometry_gives_the_safe_command_within_one_period(contract: dict[str, Any]) -> None:
    profile = load_profile("quadrotor_crazyflie")
    # Safe from the first tick after the staleness timeout: within timeout + one period (+ scheduling slack).
    assert contract["stale_first_safe_after_s"] is not None
    assert contract["stale_first_safe_after_s"] <= profile.staleness_timeout + profile.dt + 0.015
    assert contract["stale_rate_hz"] == pytest.approx(100.0, rel=0.15)
    assert contract["stale_all_safe"]
    assert "stale observation" in contract["stale_diagnostic"]


def test_nan_odometry_gives_the_safe_command_and_an_error_diagnostic(contract: dict[str, Any]) -> None:
    assert contract["nan_all_safe"]
    assert contract["nan_diagnostic"]["level"] == ERROR_LEVEL
    assert "non-finite observation" in contract["nan_diagnostic"]["message"]
    assert contract["recovered_non_safe"] > 0


def test_estop_latches_until_deactivate_activate(contract: dict[str, Any]) -> None:
    assert contract["estop_commands"] > 20 and contract["estop_all_safe"]
    assert contract["estop_diagnostic"]["level"] == ERROR_LEVEL
    assert contract["commands_after_deactivate"] == 0
    assert contract["resumed_non_safe"] > 20


def test_profile_mismatch_refuses_to_configure(contract: dict[str, Any]) -> None:
    assert contract["mismatch_configure"] is False
    status = contract["mismatch_diagnostic"]
    assert status["level"] == ERROR_LEVEL
    assert (
        "does not fit profile 'rc_car'" in status["message"] and "task: policy 'quadrotor/hover'" in status["message"]
    )


def test_timer_trigger_commands_at_the_profile_rate_from_slower_inputs(
    ros_scenario: Callable[..., dict[str, Any]], policy_file: Callable[[str], Path]
) -> None:
    result = ros_scenario("scenario_timer.py", str(policy_file("quadrotor_crazyflie")))
    # Odometry at 50 Hz, commands at the profile's 100 Hz, all from the policy while the odometry is fresh.
    assert result["fed_rate_hz"] == pytest.approx(100.0, rel=0.1), result["logs"]
    assert result["fed_non_safe"] == result["fed_count"]
    assert result["stale_rate_hz"] == pytest.approx(100.0, rel=0.15) and result["stale_all_safe"]
    assert result["exit_codes"] == {"policy_node": 0}
