"""teleop_node with policy_node as processes: dead-man takeover, hand-back, e-stop.

Asserted is the order of the command kinds in each phase, which holds at any machine speed or load (the scenario
waits for effects, not for fixed times). The timing logic of the takeover (the operator's action while fresh, within
the staleness timeout, the policy's after) runs on stepped time: tests/real/test_node_core.py::
test_interventions_are_counted_and_a_wrong_length_raises and tests/real/test_controller.py::
test_operator_action_replaces_the_policy_while_fresh.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any


def _kinds(runs: list[list[Any]]) -> list[str]:
    return [kind for kind, _ in runs]


def test_dead_man_takeover_hand_back_and_estop(
    ros_scenario: Callable[..., dict[str, Any]], policy_file: Callable[[str], Path]
) -> None:
    result = ros_scenario("scenario_teleop.py", str(policy_file("quadrotor_crazyflie")), timeout=400.0)
    phases = result["phases"]
    assert result["ready"] and all(result["reached"].values()), (result["reached"], phases, result["logs"])
    # Not held: the policy's commands only. Held: after the commands already on their way, every command is the
    # joystick's (axes clipped to [-1, 1], as PWM). Released: the operator's until it goes stale, then the policy's.
    for name in ("policy", "success", "reset"):
        assert _kinds(phases[name]) == ["policy"], (name, phases)
    assert _kinds(phases["takeover"]) in (["operator"], ["policy", "operator"]), phases
    assert _kinds(phases["released"]) in (["policy"], ["operator", "policy"]), phases
    # The e-stop is never lost: after the commands already on their way, the safe command only.
    assert _kinds(phases["estop"]) in (["safe"], ["policy", "safe"]), phases
    assert result["episode_events"] == ["success", "reset"]  # once per press, though Joy repeats at 50 Hz
    assert result["intervening_seen"] and result["intervening_last"] is False
    assert result["exit_codes"] == {"policy_node": 0, "teleop_node": 0}
