"""The hand-over rehearsed through the real nodes (scenario_rehearsal.py): sim_bridge in vehicle mode standing in for
PX4 (its commander: robo_rl/sim/rehearsal/px4_commander.py, from PX4-Autopilot's Commander.cpp and checks) or for the
Crazyflie's firmware behind crazyswarm2 (robo_rl/sim/quadrotor/crazyflie_commander.py, from crazyflie-firmware
2026.08), and policy_node with the bundled profile flying a linear cascade policy (test_rehearsal_quadrotor.py's):
the vehicle takes off by its own controller, the policy takes over on request, a silenced input hands back, the policy
takes over again, a requested hand-back, landing. Judged: no rule of the vehicle broken, never the motors off in the
air, the vehicle's controller in charge after the fault and at the end."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..test_rehearsal_quadrotor import cascade_policy, x500_cascade_policy  # noqa: F401 (fixtures)


def _judge(result: dict[str, Any]) -> None:
    if "skip" in result:
        pytest.skip(result["skip"])
    logs = result["logs"]
    assert all(result["steps"][key] for key in result["steps"] if key != "fault_reason"), (result["steps"], logs)
    assert result["max_violations"] == 0, (result["bridge"], logs["launch"])
    assert result["max_motors_off_in_air"] == 0, result["bridge"]
    assert "stale observation" in result["steps"]["fault_reason"], result["steps"]["fault_reason"]
    assert result["node"]["handover_mode"] == "vehicle" and result["bridge"]["vehicle_in_charge"] == "vehicle"
    assert int(result["node"]["handbacks"]) >= 2


def test_px4_rehearsal_through_ros(ros_scenario: Callable[..., dict[str, Any]], x500_cascade_policy: Path) -> None:  # noqa: F811
    result = ros_scenario("scenario_rehearsal.py", str(x500_cascade_policy), "quadrotor_px4", timeout=300.0)
    _judge(result)
    assert result["bridge"]["vehicle_mode"] == "4"  # PX4 holds (AUTO LOITER)


def test_crazyflie_rehearsal_through_ros(ros_scenario: Callable[..., dict[str, Any]], cascade_policy: Path) -> None:  # noqa: F811
    result = ros_scenario("scenario_rehearsal.py", str(cascade_policy), "quadrotor_crazyswarm2", timeout=300.0)
    _judge(result)
    assert float(result["bridge"]["height_m"]) == 0.0  # landed
