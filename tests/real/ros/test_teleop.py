"""teleop_node with policy_node as processes: dead-man takeover, hand-back, e-stop."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any


def test_dead_man_takeover_hand_back_and_estop(
    ros_scenario: Callable[..., dict[str, Any]], policy_file: Callable[[str], Path]
) -> None:
    result = ros_scenario("scenario_teleop.py", str(policy_file("quadrotor_crazyflie")))
    counts, operator = result["counts"], result["operator_commands"]
    assert min(counts.values()) > 30, result["logs"]
    # Held: every command is the joystick's (axes clipped to [-1, 1], as PWM); not held: none is.
    assert operator == {
        "policy": 0, "takeover": counts["takeover"], "released": 0, "success": 0, "reset": 0, "estop": 0
    }  # fmt: skip
    assert result["episode_events"] == ["success", "reset"]  # once per press, though Joy repeats at 50 Hz
    assert result["intervening_seen"] and result["intervening_last"] is False
    assert result["estop_all_safe"]
    assert result["exit_codes"] == {"policy_node": 0, "teleop_node": 0}
