"""ROS 2 integration tests: real nodes from .venv-ros, run as processes inside a loopback-only network namespace.

Each test runs a scenario script (scenarios/*.py) with .venv-ros's Python under `unshare -rn` (loopback up, with
multicast routed to it, so DDS discovery works and no packet leaves the namespace); the script prints its
measurements as JSON and the test asserts on them. The tests skip, saying why, only when .venv-ros is missing
(`make ros-venv` could not build it) or the machine cannot create a network namespace.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from robo_rl.real.ros.netns import LOOPBACK_NETNS

ROOT = Path(__file__).resolve().parents[3]
# ROBO_RL_ROS_PYTHON points the tests at another ROS venv's Python (e.g. one built with ROS_DISTRO=jazzy).
ROS_PYTHON = Path(os.environ.get("ROBO_RL_ROS_PYTHON", ROOT / ".venv-ros" / "bin" / "python"))
SCENARIOS = Path(__file__).resolve().parent / "scenarios"


def _unavailable() -> str:
    if not ROS_PYTHON.is_file():
        return f"{ROS_PYTHON} is missing: `make ros-venv` did not build the ROS venv"
    default = ROOT / ".venv-ros" / "bin" / "python"
    if ROS_PYTHON == default and not list((ROOT / ".venv-ros").glob(".installed-*")):
        return "`make ros-venv` did not finish building .venv-ros (no .installed-* stamp)"
    probe = subprocess.run([*LOOPBACK_NETNS, str(ROS_PYTHON), "-c", "import rclpy"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"cannot run rclpy in a loopback-only network namespace: {probe.stderr.strip()[-300:]}"
    return ""


def run_as_group(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str] | None:
    """Run `argv` in a process group of its own; None if it overran `timeout`. Either way, whatever it started and
    left behind (a node a scenario launched) is killed with the group, so no node outlives its test. Its output goes
    through files, so a process it leaves behind holding them cannot keep the test waiting."""
    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        process = subprocess.Popen(argv, stdout=stdout, stderr=stderr, text=True, cwd=ROOT, start_new_session=True)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        finally:
            _kill_group(process.pid)
            process.wait()
        stdout.seek(0)
        stderr.seek(0)
        return subprocess.CompletedProcess(argv, process.returncode, stdout.read(), stderr.read())


def _kill_group(group: int) -> None:
    try:
        os.killpg(group, signal.SIGKILL)
    except ProcessLookupError:  # nothing of it is left
        pass


@pytest.fixture(scope="session")
def ros_scenario(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., dict[str, Any]]:
    """`ros_scenario(script, *args, timeout=...)` → the scenario's JSON result (skips when ROS is unavailable)."""
    reason = _unavailable()
    if reason:
        pytest.skip(reason)

    def run(script: str, *args: str, timeout: float = 120.0) -> dict[str, Any]:
        log_dir = tmp_path_factory.mktemp(Path(script).stem)
        argv = [*LOOPBACK_NETNS, str(ROS_PYTHON), str(SCENARIOS / script), str(log_dir), *args]
        done = run_as_group(argv, timeout)
        if done is None:
            pytest.fail(f"{script} did not finish within {timeout:.0f} s; it and every process it started were killed")
        lines = done.stdout.strip().splitlines()
        if done.returncode != 0 or not lines or not lines[-1].startswith("{"):
            pytest.fail(f"{script} failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        return json.loads(lines[-1])

    return run
