"""recorder: what a probe publishes in /r1 ends up in an MCAP bag, in order, and bad parameters stop it at start."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

MESSAGES = 50


@pytest.fixture(scope="module")
def recorded(ros_scenario: Callable[..., dict[str, Any]]) -> dict[str, Any]:
    return ros_scenario("scenario_recorder.py", "record", timeout=120.0)


def test_recorder_subscribes_and_exits_cleanly(recorded: dict[str, Any]) -> None:
    assert recorded["subscribed"] and recorded["flushed"], recorded["logs"]["recorder"]
    assert recorded["exit_codes"] == {"recorder": 0}, recorded["logs"]["recorder"]
    assert "closed" in recorded["logs"]["recorder"]


def test_bag_folder_is_complete(recorded: dict[str, Any]) -> None:
    assert len(recorded["bags"]) == 1 and recorded["bags"][0].startswith("recorder_"), recorded["bags"]
    assert "metadata.yaml" in recorded["files"]
    assert any(name.endswith(".mcap") for name in recorded["files"]), recorded["files"]


def test_bag_has_the_topic_types(recorded: dict[str, Any]) -> None:
    assert recorded["types"] == {"/r1/odom": "nav_msgs/msg/Odometry", "/r1/cmd": "std_msgs/msg/Float32MultiArray"}


def test_every_message_is_recorded_in_order(recorded: dict[str, Any]) -> None:
    assert recorded["counts"] == {"/r1/odom": MESSAGES, "/r1/cmd": MESSAGES}, recorded["logs"]["recorder"]
    assert recorded["values"]["/r1/odom"] == [[float(i)] for i in range(MESSAGES)]
    assert recorded["values"]["/r1/cmd"] == [[float(i), float(-i)] for i in range(MESSAGES)]


def test_messages_carry_the_receive_time(recorded: dict[str, Any]) -> None:
    assert recorded["stamps_sorted"] == {"/r1/odom": True, "/r1/cmd": True}
    for first, last in recorded["stamps_s"].values():
        assert 0.0 <= last - first < 10.0
        assert abs(recorded["wall_s"] - last) < 60.0  # node clock = system time, recorded just before


def test_unknown_storage_exits_2_with_a_clear_message(ros_scenario: Callable[..., dict[str, Any]]) -> None:
    result = ros_scenario("scenario_recorder.py", "bad-storage", timeout=60.0)
    assert result["exit_code"] == 2, result["stderr"]  # a bad parameter value: bad input, as every node
    assert "parameter 'storage'" in result["stderr"] and "'zip'" in result["stderr"], result["stderr"]
    assert not result["bag_dir_created"]


def test_a_killed_recorder_has_flushed_its_messages(ros_scenario: Callable[..., dict[str, Any]]) -> None:
    killed = ros_scenario("scenario_recorder.py", "kill", timeout=120.0)
    assert killed["subscribed"] and killed["flushed"] and killed["exit_codes"] == {"recorder": -9}
    assert "metadata.yaml" not in killed["files"]  # written only at close: `ros2 bag reindex` rebuilds it
    sizes = [size for name, size in killed["files"].items() if name.endswith(".mcap")]
    assert len(sizes) == 1 and sizes[0] > killed["payload_bytes"], killed["files"]
