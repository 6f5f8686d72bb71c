"""Safety-Gymnasium's SafetyPointGoal1-v0 as a robo_rl BatchedEnv with a cost (`robo_rl.sim.safety_gym`), run in
.venv-safety (scenarios/point_goal.py): checked against Safety-Gymnasium's own envs stepped with the same seeds and
actions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

SENSORS = {"accelerometer": 3, "velocimeter": 3, "gyro": 3, "magnetometer": 3}
LIDARS = ("goal_lidar", "hazards_lidar", "vases_lidar")


@pytest.fixture(scope="module")
def report(safety_scenario: Callable[..., dict[str, Any]]) -> dict[str, Any]:
    return safety_scenario("point_goal.py")


def test_the_task_is_registered_where_safety_gymnasium_is_installed(report: dict[str, Any]) -> None:
    assert report["registered"] == ["safety_gym/SafetyPointGoal1-v0"]


def test_specs_come_from_the_task(report: dict[str, Any]) -> None:
    expected = [f"{key}[{i}]" for key, size in SENSORS.items() for i in range(size)]
    expected += [f"{lidar}[{i}]" for lidar in LIDARS for i in range(16)]
    assert report["obs_names"] == expected
    assert len(expected) == report["raw_obs_dim"] == 60
    assert report["obs_low"][12:] == [0.0] * 48 and report["obs_high"][12:] == [1.0] * 48  # lidars in [0, 1]
    assert (report["action_low"], report["action_high"]) == ([-1.0, -1.0], [1.0, 1.0])
    assert report["dt"] == pytest.approx(0.02)  # MuJoCo's 2 ms times a frame skip of 10
    assert report["max_episode_steps"] == report["raw_max_episode_steps"] == 1000


def test_the_cost_is_declared(report: dict[str, Any]) -> None:
    spec = report["cost_spec"]
    assert (spec["name"], spec["unit"]) == ("safety_gymnasium", "1")
    assert "hazard" in spec["about"]


def test_steps_are_safety_gymnasium_s_own(report: dict[str, Any]) -> None:
    """Obs, reward, cost, flags and final_obs equal the raw envs' exactly (float32), across an episode boundary,
    on steps that cost: the comparison is not one of zeros."""
    twin = report["twin"]
    assert twin["reset_obs"] == 0.0
    assert twin["max_abs_diff"] == dict.fromkeys(("obs", "reward", "cost", "terminated", "truncated", "final_obs"), 0.0)
    assert twin["cost_steps"] >= 10
    assert (twin["episode_ends"], twin["end_steps"]) == (3, [100])


def test_the_cost_is_being_inside_a_hazard(report: dict[str, Any]) -> None:
    assert report["twin"]["cost_not_hazard_steps"] == 0


def test_bad_ids_and_sizes_are_refused_in_one_line(report: dict[str, Any]) -> None:
    assert report["unknown_id_error"] == "'SafetyNoSuchTask-v0' is not a Safety-Gymnasium id, e.g. SafetyPointGoal1-v0"
    assert report["num_envs_error"] == "num_envs must be at least 1, got 0"
