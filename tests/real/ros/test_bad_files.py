"""The real node processes answer a bad parameter file, robot profile or policy with exit code 2 and one stderr
line naming the file (the deploy core's error; a profile is named by its file name), not with an rclpy traceback,
and write nothing."""

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
