"""A learner on the ROS graph (scenario_topic_learner.py): transitions go to `robo-rl learn` over the
`transitions` topic and its weights come back over `policy_weights`, as they would between two machines."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

ITERATIONS = 1000


def test_transitions_and_weights_travel_over_ros_topics(
    ros_scenario: Callable[..., dict[str, Any]], tmp_path: Path
) -> None:
    result = ros_scenario("scenario_topic_learner.py", str(tmp_path), str(ITERATIONS), timeout=400.0)
    assert result["train_exit"] == 0, result["logs"]["train"]
    assert result["learner_exit"] == 0, result["learner_log"]
    stats = re.search(
        r"received ([\d,]+) transitions .* ([\d,]+) gradient steps, published ([\d,]+) weights", result["learner_log"]
    )
    assert stats is not None, result["learner_log"]
    received, updates, published = (int(g.replace(",", "")) for g in stats.groups())
    (run,) = (tmp_path / "robot_rc_car_sac").iterdir()
    last = json.loads((run / "metrics.jsonl").read_text().splitlines()[-1])
    stored = last["env_steps"] - last.get("invalid_steps", 0)
    print({"received": received, "updates": updates, "published": published, "stored": stored, **last})
    assert received >= 0.95 * stored, (received, stored)  # every valid step the trainer took reached the learner
    assert updates >= 0.9 * (received - 200)  # one gradient step per transition after learning_starts
    assert published >= updates // 20 - 1 and last["policy_version"] > 0  # the trainer took up the learner's weights
