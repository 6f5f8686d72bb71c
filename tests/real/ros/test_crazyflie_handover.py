"""policy_node's Crazyflie hand-over over real rclpy (scenario_crazyflie_handover.py): its vehicle_request topic, the
CrazyflieOutput's crazyswarm2 service calls (crazyflie_interfaces built from ros_msgs/) and cmd_vel_legacy, against
the firmware commander's stand-in. The firmware's rules themselves, with their source lines, are checked in
tests/real/test_crazyflie_handover.py; here: the same sequence arrives through ROS, in order, and the stand-in never
has its motors off in the air."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

HOVER_ACTION = 0.341816
POLICY_ACTION = 0.2
"""The probe policy's constant collective thrust action (zero rates): thrust value 31034.681 + 29109.448 * 0.2."""


@pytest.fixture(scope="module")
def flight(ros_scenario: Callable[..., dict[str, Any]], linear_policy: Callable[..., Path]) -> dict[str, Any]:
    policy = linear_policy("quadrotor_crazyswarm2", {}, {"collective_thrust": POLICY_ACTION})
    result = ros_scenario("scenario_crazyflie_handover.py", str(policy), timeout=240.0)
    if "skip" in result:
        pytest.skip(result["skip"])
    assert result["ready"], result["logs"]["policy_node"]
    assert all(result["reached"]), (result["reached"], result["calls"], result["logs"]["policy_node"])
    return result


def _thrust(action: float) -> float:
    return 31034.681 + 29109.448 * action


def test_the_take_off_unlocks_on_the_ground_then_notifies_then_takes_off(flight: dict[str, Any]) -> None:
    times, packets, calls = flight["times"], flight["packets"], flight["calls"]
    before = [p for p in packets if p[0] < times["takeoff"]]
    assert before == []  # the refused take-over and the holding vehicle: nothing on cmd_vel_legacy
    unlock = [p for p in packets if times["takeoff"] <= p[0] < times["policy"]]
    assert len(unlock) == 10 and all(thrust == 0 for _, thrust in unlock)
    takeoff_calls = [c for c in calls if c[0] < times["policy"]]
    assert [what for _, what in takeoff_calls] == ["notify_setpoints_stop", "takeoff"]
    assert takeoff_calls[0][0] > unlock[-1][0]


def test_the_policy_ramps_in_from_hover_with_the_lock_open(flight: dict[str, Any]) -> None:
    times, packets = flight["times"], flight["packets"]
    flown = [thrust for t, thrust in packets if times["policy"] < t < times["fault"]]
    assert flown[0] == pytest.approx(_thrust(HOVER_ACTION), abs=0.02 * 2 * 29109.45 + 1)
    assert flown[-1] == int(_thrust(POLICY_ACTION))
    assert min(flown) > 0


def test_a_fault_hands_back_go_to_first_and_the_vehicle_never_loses_thrust_in_the_air(flight: dict[str, Any]) -> None:
    times, packets, calls, ticks = flight["times"], flight["packets"], flight["calls"], flight["ticks"]
    after_fault = [what for t, what in calls if times["fault"] <= t < times["held_until"]]
    assert after_fault == ["go_to relative=True", "notify_setpoints_stop"]
    handed = next(t for t, what in calls if t >= times["fault"] and what == "notify_setpoints_stop")
    assert not [p for p in packets if handed < p[0] < times["again"]]  # cmd_vel_legacy silent while it holds
    holding = [source for t, source, _, _ in ticks if handed + 0.05 < t < times["held_until"]]
    assert holding and set(holding) == {"highlevel"}
    assert [t for t, _, off, z in ticks if off and z > 0.02] == []
    assert ticks[-1][2] and ticks[-1][3] == 0.0  # landed, motors off


def test_hand_over_again_hand_back_on_request_and_land(flight: dict[str, Any]) -> None:
    times, packets, calls = flight["times"], flight["packets"], flight["calls"]
    again = [thrust for t, thrust in packets if times["again"] < t < times["vehicle"]]
    assert again and min(again) > 0
    later = [what for t, what in calls if t >= times["vehicle"]]
    assert later == ["go_to relative=True", "notify_setpoints_stop", "land"]
