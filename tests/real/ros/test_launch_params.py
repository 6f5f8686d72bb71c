"""rcl's parameter precedence, as real rclpy (Kilted: rclpy 9.1, rcl 10.1) applies it, is what robo-rl launch and
the train entry compute (`robo_rl.launch.param_file.node_parameters`): order of first appearance of a section key,
not specificity; `-p` is a `/**` section. And with the files in the order launch_ros 0.28.0 passes them (`from:`
file first as declared, then the inline parameters keyed by the node's full name), inline beats the file."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def test_rclpy_applies_parameter_files_as_predicted(ros_scenario: Callable[..., dict[str, Any]]) -> None:
    results = ros_scenario("scenario_launch_params.py", timeout=120.0)
    assert len(results) == 11
    for label, result in results.items():
        assert result["rclpy"] == result["predicted"], label
    trigger = {label: result["rclpy"].get("trigger") for label, result in results.items()}
    assert trigger["launch_ros_order"] == "inline"  # inline beats the file's /**/policy_node section
    assert trigger["inline_declared_first"] == "file_wild"  # a param declared before the file loses to it
    assert trigger["inline_at_root"] == "file_wild"  # /** (no namespace): the file's node section still wins
    assert trigger["dash_p_then_file"] == trigger["file_then_dash_p"] == "file_wild"
    assert trigger["star_after_wild"] == "star"
    assert trigger["same_key_later_file"] == "nested"
    assert results["patterns_root"]["rclpy"] == {"any": "yes", "bare": "yes"}
    assert results["patterns_cf1"]["rclpy"] == {"one": "yes", "any": "yes", "cf1_any_name": "yes"}
    assert results["patterns_deep"]["rclpy"] == {"any": "yes", "under_a": "yes"}
    assert results["other_node"]["rclpy"] == {"profile": "file_star", "trigger": "file_star", "cf1_any_name": "yes"}
