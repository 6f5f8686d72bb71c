"""Learning on the robot through ROS (scenario_train_on_robot.py): `robo-rl train --robot rc_car` against sim_bridge
standing in for the car, with an operator taking over and pressing the e-stop."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

ITERATIONS = 700  # 14 s of robot steps at 50 Hz, plus the resets


@pytest.mark.slow
def test_train_on_the_robot_through_ros(ros_scenario: Callable[..., dict[str, Any]], tmp_path: Path) -> None:
    result = ros_scenario("scenario_train_on_robot.py", str(tmp_path), str(ITERATIONS), timeout=400.0)
    logs = result["logs"]
    assert result["train_exit"] == 0, logs["train"]
    (run,) = (tmp_path / "robot_rc_car_sac").iterdir()
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    last = rows[-1]
    assert last["iteration"] == ITERATIONS and last["env_steps"] == ITERATIONS
    # the robot's steps on its 50 Hz grid (plus the resets between episodes), few invalid ones
    assert 0.8 * ITERATIONS / 50 < last["wall_time"] < 4.0 * ITERATIONS / 50 + 20
    assert last["recoveries"] >= 1  # a random policy leaves the track: the car reversed and retried
    assert last.get("invalid_steps", 0) < 0.1 * ITERATIONS and last["missed_ticks"] < 0.1 * ITERATIONS
    assert last["interventions"] > 0  # the operator's 2 s of takeover (steps in recoveries do not count)
    assert last["robot_episodes"] >= 1 and last["estops"] == 1  # the e-stop ended one episode, not the training
    assert result["reset_presses"] >= 2 and last["human_resets"] >= 2  # the start, and after the e-stop
    assert last["intervention_share"] < 0.2
    record = yaml.safe_load((run / "task.yaml").read_text())
    assert record["specs"]["obs"]["names"][0] == "lookahead_1_x" and record["specs"]["dt"] == 0.02
    assert (run / "checkpoints" / "latest.pt").is_file()
