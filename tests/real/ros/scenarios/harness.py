"""Shared by the ROS scenario scripts: run inside the loopback-only namespace by .venv-ros's Python.

A scenario starts the real node console scripts as child processes, talks to them through a probe rclpy node,
and prints one JSON object (its measurements) as the last line of stdout; the pytest side asserts on it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent


class Processes:
    """Child processes of a scenario; `stop()` sends SIGINT, then SIGKILL after `grace` s; returns exit codes."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.children: list[tuple[str, subprocess.Popen]] = []

    def start(self, label: str, program: str, *args: str) -> subprocess.Popen:
        log = open(self.log_dir / f"{label}.log", "w")
        process = subprocess.Popen([str(BIN / program), *args], stdout=log, stderr=subprocess.STDOUT)
        self.children.append((label, process))
        return process

    def stop(self, grace: float = 30.0) -> dict[str, int]:
        """SIGINT every child, wait up to `grace` s in all, then SIGKILL (exit code -9). Generous: `robo-rl launch`
        itself gives its nodes 5 s after SIGINT and 5 more after SIGTERM, and a loaded machine needs that."""
        for _, process in self.children:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
        codes = {}
        deadline = time.monotonic() + grace
        for label, process in self.children:
            try:
                codes[label] = process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                codes[label] = -9
        return codes

    def log(self, label: str) -> str:
        return (self.log_dir / f"{label}.log").read_text()


GENEROUS_STALENESS_S = 1.0
"""The staleness timeout of the scenarios' test profiles: a busy machine stalls a process for tens of ms, longer than
a profile's 50 ms, and its safe commands would then mix into what a scenario checks. The timeout's logic (the first
safe command within one period after it, one per period) runs on stepped time in tests/real/test_node_core.py."""


def generous_profile(log_dir: Path, name: str, staleness_timeout: float = GENEROUS_STALENESS_S) -> str:
    """A copy of the bundled profile `name` in `log_dir` with `staleness_timeout` (s) instead of its own; its path."""
    from importlib import resources

    lines = resources.files("robo_rl.real").joinpath("profiles", f"{name}.yaml").read_text().splitlines()
    found = [i for i, line in enumerate(lines) if line.startswith("staleness_timeout:")]
    if len(found) != 1:
        raise ValueError(f"profile {name!r}: expected one top-level staleness_timeout line, found {len(found)}")
    lines[found[0]] = f"staleness_timeout: {staleness_timeout}"
    path = log_dir / f"{name}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


SIM_QUADROTOR = Path("launch/sim_quadrotor.launch.yaml")


def launch_copy(log_dir: Path, profile: str, policy_params: dict[str, Any]) -> Path:
    """launch/sim_quadrotor.launch.yaml with `profile` (a profile file, e.g. `generous_profile`'s) among its profile
    choices and `policy_params` added to policy_node's parameters; its path in `log_dir`."""
    import yaml

    entries = yaml.safe_load(SIM_QUADROTOR.read_text())
    for entry in entries["launch"]:
        if entry.get("arg", {}).get("name") == "profile":
            entry["arg"]["choice"].append({"value": profile})
    groups = [entry["group"] for entry in entries["launch"] if "group" in entry]
    nodes = [child["node"] for group in groups for child in group["children"] if "node" in child]
    (policy_node,) = [node for node in nodes if node["name"] == "policy_node"]
    policy_node["param"] += [{"name": name, "value": value} for name, value in policy_params.items()]
    path = log_dir / SIM_QUADROTOR.name
    path.write_text(yaml.safe_dump(entries, sort_keys=False))
    return path


def ros_args(name: str, namespace: str = "/", **params: Any) -> list[str]:
    argv = ["--ros-args", "-r", f"__node:={name}", "-r", f"__ns:={namespace}"]
    for key, value in params.items():
        argv += ["-p", f"{key}:={_value(value)}"]
    return argv


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return str(value)


def spin_until(node: Any, condition: Callable[[], bool], timeout: float) -> bool:
    """Spin `node` until `condition()` or `timeout` s; returns whether the condition held."""
    import rclpy

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        rclpy.spin_once(node, timeout_sec=0.01)
    return condition()


def spin_for(node: Any, seconds: float, every: Callable[[], None] | None = None, period: float = 0.0) -> None:
    """Spin for `seconds`, calling `every()` each `period` s (on a fixed grid) when given."""
    import rclpy

    start = time.monotonic()
    next_call = start
    while (now := time.monotonic()) < start + seconds:
        if every is not None and now >= next_call:
            every()
            next_call += period
        rclpy.spin_once(node, timeout_sec=min(0.002, period) if every else 0.01)


def spin_publishing_until(
    node: Any, condition: Callable[[], bool], timeout: float, every: Callable[[], None], period: float
) -> bool:
    """Call `every()` each `period` s (on a fixed grid) and spin until `condition()` or `timeout` s; whether it held.
    For waiting on an effect (a takeover, the e-stop) by what happens, not by how long it usually takes."""
    import rclpy

    start = time.monotonic()
    next_call = start
    while not condition():
        now = time.monotonic()
        if now >= start + timeout:
            return condition()
        if now >= next_call:
            every()
            next_call += period
        rclpy.spin_once(node, timeout_sec=min(0.002, period))
    return True


def change_state(node: Any, target: str, transition: str, timeout: float = 10.0) -> bool | None:
    """Call `<target>/change_state` with a lifecycle transition label; None when the service never came up."""
    import rclpy
    from lifecycle_msgs.msg import Transition
    from lifecycle_msgs.srv import ChangeState

    client = node.create_client(ChangeState, f"{target}/change_state")
    if not client.wait_for_service(timeout_sec=timeout):
        return None
    ids = {"configure": Transition.TRANSITION_CONFIGURE, "activate": Transition.TRANSITION_ACTIVATE}
    ids |= {"deactivate": Transition.TRANSITION_DEACTIVATE, "cleanup": Transition.TRANSITION_CLEANUP}
    request = ChangeState.Request()
    request.transition.id = ids[transition]
    future = client.call_async(request)
    rclpy.spin_until_future_complete(node, future, timeout_sec=timeout)
    return bool(future.result().success) if future.done() else None


def get_state(node: Any, target: str, timeout: float = 10.0) -> str | None:
    import rclpy
    from lifecycle_msgs.srv import GetState

    client = node.create_client(GetState, f"{target}/get_state")
    if not client.wait_for_service(timeout_sec=timeout):
        return None
    future = client.call_async(GetState.Request())
    rclpy.spin_until_future_complete(node, future, timeout_sec=timeout)
    return future.result().current_state.label if future.done() else None


def finish(results: dict[str, Any], processes: Processes | None = None, logs: Sequence[str] = ()) -> None:
    """Stop the children, attach their exit codes and log tails, print the JSON line and exit."""
    if processes is not None:
        results["exit_codes"] = processes.stop()
        results["logs"] = {label: processes.log(label)[-3000:] for label in logs}
    if "rclpy" in sys.modules:
        sys.modules["rclpy"].try_shutdown()
    print(json.dumps(results, default=float))
    sys.stdout.flush()
    os._exit(0)
