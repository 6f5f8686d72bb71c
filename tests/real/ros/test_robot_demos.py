"""Demonstrations on the robot through ROS (scenario_robot_demos.py): `record-demos --robot rc_car` stores what the
operator drove, and `demos-from-bag` rebuilds the same transitions from the recorder's MCAP bag."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

SECONDS = 8.0


def _load(path: str) -> dict[str, Any]:
    with np.load(path) as data:
        arrays = {name: data[name] for name in data.files}
    arrays["meta"] = json.loads(str(arrays["meta"]))
    return arrays


@pytest.fixture(scope="module")
def recorded(ros_scenario: Callable[..., dict[str, Any]]) -> dict[str, Any]:
    return ros_scenario("scenario_robot_demos.py", str(SECONDS), timeout=240.0)


def test_record_demos_on_the_robot_keeps_what_the_operator_drove(recorded: dict[str, Any]) -> None:
    assert recorded["record_exit"] == 0, recorded["logs"]["record"]
    direct = _load(recorded["direct"])
    steps = SECONDS / 0.02
    # every stored step was the operator's; how many of the ticks were valid depends on the machine's load (a stale
    # input makes a step invalid), so only a lower bound far from zero: a broken recording stores next to none
    assert 0.25 * steps <= len(direct["rewards"]) <= steps
    assert direct["intervened"].all() and direct["is_demo"].all()
    assert direct["meta"]["obs_names"][0] == "lookahead_1_x" and direct["meta"]["source"].startswith("robot=rc_car")
    # the operator drove forwards along the track: progress rewards, steering within the profile's bounds
    assert direct["rewards"].sum() > 0.5 * SECONDS and np.abs(direct["actions"]).max() <= 1.0


def test_the_bag_gives_back_the_same_transitions(recorded: dict[str, Any]) -> None:
    assert recorded["recorder_exit"] == 0 and len(recorded["bags"]) == 1, recorded["logs"]
    assert recorded["convert_exit"] == 0, recorded["convert_output"]
    assert "transitions topic" in recorded["convert_output"]
    direct, bag = _load(recorded["direct"]), _load(recorded["from_bag"])
    assert bag["meta"]["obs_names"] == direct["meta"]["obs_names"] and bag["intervened"].all()
    n, total = len(bag["rewards"]), len(direct["rewards"])
    # the recorder may join a moment late (on a machine loaded past its cores, up to ~1 s of the 8 s), and under load
    # it once missed the final step (CI: the bag held direct[-400:-1]; RobotLink.close now waits for the
    # acknowledgement): the bag must be one unbroken run of the recorded steps, equal field for field
    assert n >= 0.5 * total, recorded["convert_output"]
    start = _run_start(bag["obs"], direct["obs"])
    assert start >= 0, "the bag's steps are not one unbroken run of the recorded ones"
    assert total - (start + n) <= 0.05 * total, f"the bag lost {total - start - n} of the final steps"
    for name in ("obs", "actions", "rewards", "next_obs", "terminated", "truncated"):
        assert np.allclose(bag[name], direct[name][start : start + n], atol=1e-6), name


def _run_start(run: np.ndarray, rows: np.ndarray) -> int:
    """Where `run` lies unbroken within `rows` (the first such index), or -1."""
    for start in np.flatnonzero(np.abs(rows - run[0]).max(axis=1) < 1e-6):
        if start + len(run) <= len(rows) and np.allclose(rows[start : start + len(run)], run, atol=1e-6):
            return int(start)
    return -1


def _found(rows: np.ndarray, among: np.ndarray) -> int:
    return sum(bool((np.abs(among - row).max(axis=1) < 1e-5).any()) for row in rows)


def test_rebuilding_from_the_car_topics_decodes_the_same_fields_and_commands(recorded: dict[str, Any]) -> None:
    assert recorded["rebuild_exit"] == 0, recorded["rebuild_output"]
    assert "rebuilt from the robot's topics" in recorded["rebuild_output"]
    direct, rebuilt = _load(recorded["direct"]), _load(recorded["rebuilt"])
    n = len(rebuilt["rewards"])
    assert abs(n - len(direct["rewards"])) <= 0.5 * len(direct["rewards"])
    # what does not depend on the order the recorder received the topics in: each track message's look-ahead
    # points (one message: 20 fields) and each command read back into actions are ones RobotEnv stored. Under load
    # a command may be paired with a track message RobotEnv skipped (the rebuilding is approximate, one period off:
    # 94.8 % found in one CI run on a busy machine, 78 % in another with two pytest workers); a decoding error
    # would find next to none, so half is the bound
    track = slice(0, 20)
    assert _found(rebuilt["obs"][:, track], direct["obs"][:, track]) >= 0.5 * n
    assert _found(rebuilt["actions"], direct["actions"]) >= 0.8 * n
