"""RosTeleop, the `--teleop ros` device of HIL training, driven by a real teleop_node process."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml


def test_joystick_through_teleop_node_takes_over_env_0_while_held(ros_scenario: Callable[..., dict[str, Any]]) -> None:
    result = ros_scenario("scenario_ros_teleop.py")
    assert result["held_active"], result["logs"]
    # The axes as teleop_node maps them (identity), clipped to the profile's [-1, 1].
    assert result["held_action"] == pytest.approx([0.5, -0.5, 0.25, 1.0])
    assert not result["released_active"]
    assert result["estop_reported"] and result["estop_presses"] == 1  # one press (held 25 polls on), reported once
    assert result["exit_codes"] == {"teleop_node": 0}


@pytest.mark.slow
def test_training_with_a_ros_joystick_records_its_interventions(
    ros_scenario: Callable[..., dict[str, Any]], tmp_path: Path
) -> None:
    result = ros_scenario("scenario_ros_hil_training.py", str(tmp_path), timeout=300)
    assert result["train_exit"] == 0, result["logs"]["train"]
    (run,) = (tmp_path / "quadrotor_hover_sac").iterdir()
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    # The button was held all along once the device was up: env 0 of 4 was the operator's, at most a quarter.
    assert 0.0 < rows[-1]["intervention_rate_total"] <= 0.25
    hil = yaml.safe_load((run / "config.yaml").read_text())["hil"]
    assert (hil["teleop"], hil["ros_namespace"]) == ("ros", "/cf1")
