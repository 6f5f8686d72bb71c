"""The real node processes answer a bad parameter file, robot profile or policy with exit code 2 and one stderr
line naming the file (the deploy core's error; a profile is named by its file name), and a bad parameter value with
exit code 2 and one line naming the parameter, not with an rclpy traceback, and write nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any


def test_bad_files_stop_the_nodes_with_one_line(ros_scenario: Callable[..., dict[str, Any]]) -> None:
    results = ros_scenario("scenario_bad_files.py", timeout=300.0)
    assert len(results) == 8
    for label, result in results.items():
        err = result["stderr"]
        assert result["exit_code"] == 2, f"{label}: {err}"
        assert err.count("\n") == 1 and err.startswith("error: ") and Path(result["file"]).name in err, (
            f"{label}: {err}"
        )
        assert result["left"] == [], f"{label}: {result['left']}"


def test_bad_parameters_stop_the_nodes_with_one_line(
    ros_scenario: Callable[..., dict[str, Any]], policy_file: Callable[[str], Path]
) -> None:
    """A `-p NAME:=VALUE` of another type than the declared one (rclpy's InvalidParameterTypeException), or a number
    the node cannot use (a negative or non-finite period or deadline, a NaN joystick scale): exit 2, one line
    naming the parameter, nothing written. ROS arguments rcl cannot parse: exit 2, one line quoting the argument."""
    results = ros_scenario("scenario_bad_parameters.py", str(policy_file("rc_car")), timeout=300.0)
    assert len(results) == 27
    for label, result in results.items():
        err = result["stderr"]
        ours = err.strip().splitlines()[-1] if err.strip() else ""
        lines = 2 if result.get("rcl_logs") else 1  # rcl logs "Failed to parse global arguments" before it raises
        assert result["exit_code"] == 2, f"{label}: {err}"
        assert err.count("\n") == lines and ours.startswith("error: ") and result["parameter"] in ours, (
            f"{label}: {err}"
        )
        assert "Traceback" not in err and result["left"] == [], f"{label}: {err} {result['left']}"
