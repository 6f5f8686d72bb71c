"""policy_node as a real ROS 2 process: lifecycle, commands and bounds, stale and NaN inputs, e-stop, profile mismatch.

What these check holds at any machine speed or load: the scenarios wait for effects, not for fixed times, and run the
node with a generous staleness timeout (tests/real/ros/scenarios/harness.py). The timing logic runs on stepped time
in tests/real/test_node_core.py (the first safe command within one period after the timeout, one per period; the
timer trigger's command every tick); bench/ros_timing.py measures the wall-clock rates and delays, quiet and loaded.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ERROR_LEVEL = 2


@pytest.fixture(scope="module")
def contract(ros_scenario: Callable[..., dict[str, Any]], policy_file: Callable[[str], Path]) -> dict[str, Any]:
    return ros_scenario("scenario_policy_node.py", str(policy_file("quadrotor_crazyflie")), timeout=400.0)


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


def test_one_command_per_odometry_message_within_bounds(contract: dict[str, Any]) -> None:
    # At most one command per message sent (none from the watchdog while the odometry is fresh), most of them
    # answered (best-effort QoS may drop a few on a busy machine), all the policy's; PWM stays in [0, 65535].
    assert contract["odom_sent_good"] // 2 <= contract["commands_good"] <= contract["odom_sent_good"], contract
    assert 0.0 <= contract["pwm_min"] and contract["pwm_max"] <= 65535.0
    assert contract["safe_in_good"] == 0


def test_stale_odometry_gives_the_safe_command_after_the_timeout_and_keeps_it(contract: dict[str, Any]) -> None:
    # Never early: the node's clock cannot see the timeout pass before the probe's does (one machine, one monotonic
    # clock). The watchdog's safe commands then keep coming without input.
    # Within one period of the timeout, at the profile's rate: test_node_core.py::
    # test_stale_trigger_input_gives_the_safe_command_within_one_period_at_the_profile_rate.
    assert contract["stale_first_safe_after_s"] is not None
    assert contract["stale_first_safe_after_s"] >= contract["staleness_timeout"]
    assert contract["stale_count"] >= 30 and contract["stale_all_safe"]
    assert "stale observation" in contract["stale_diagnostic"]


def test_nan_odometry_gives_the_safe_command_and_an_error_diagnostic(contract: dict[str, Any]) -> None:
    assert contract["nan_all_safe"]
    assert contract["nan_diagnostic"] is not None and contract["nan_diagnostic"]["level"] == ERROR_LEVEL
    assert "non-finite observation" in contract["nan_diagnostic"]["message"]
    assert contract["recovered_non_safe"] >= 30


def test_estop_latches_until_deactivate_activate(contract: dict[str, Any]) -> None:
    assert contract["estop_commands"] >= 30 and contract["estop_all_safe"]  # no policy command once it took hold
    assert contract["estop_diagnostic"]["level"] == ERROR_LEVEL
    assert contract["deactivated_quiet"] and contract["commands_after_deactivate"] == 0
    assert contract["resumed_non_safe"] >= 30


def test_profile_mismatch_refuses_to_configure(contract: dict[str, Any]) -> None:
    assert contract["mismatch_configure"] is False
    status = contract["mismatch_diagnostic"]
    assert status["level"] == ERROR_LEVEL
    assert (
        "does not fit profile 'rc_car'" in status["message"] and "task: policy 'quadrotor/hover'" in status["message"]
    )


def test_timer_trigger_commands_from_the_latest_input_until_it_goes_stale(
    ros_scenario: Callable[..., dict[str, Any]], policy_file: Callable[[str], Path]
) -> None:
    result = ros_scenario("scenario_timer.py", str(policy_file("quadrotor_crazyflie")), timeout=300.0)
    # A few odometry messages give more of the policy's commands than messages (the loop, not the input, triggers
    # them), then the safe command, repeated, once the odometry is stale. At the profile's rate, every tick:
    # test_node_core.py::test_timer_trigger_commands_every_tick_from_slower_inputs_until_they_go_stale.
    assert result["fed_count"] > 2 * result["fed_messages"], result["logs"]
    assert result["stale_count"] >= 30 and result["stale_all_safe"]
    assert result["exit_codes"] == {"policy_node": 0}
