"""Scenario: the node entry points started with a bad `-p NAME:=VALUE` (a value of another type than the declared
one, a number they cannot use) exit 2 at once, with one line on stderr naming the parameter, and leave nothing in
their working folder.

Also ROS arguments rcl cannot parse (an unknown option, a remap or override without `:=`, a log level it does not
know, a parameter file that is not there): exit 2 and a last line quoting the argument (rcl itself logs a line before
it, "Failed to parse global arguments", which the node cannot hold back).

argv: LOG_DIR POLICY (an rc_car policy.onnx, so that policy_node's autostart gets as far as the parameters). Reports,
per case, the exit code, stderr, the parameter and the files the run left in its (otherwise empty) working folder.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from harness import BIN, finish

CASES = {
    # label: (node, the bad parameter, its value, the node's other parameters)
    "policy_node-trigger-an-int": ("policy_node", "trigger", "5", {}),
    "policy_node-deadline-text": ("policy_node", "deadline", "abc", {}),
    "policy_node-deadline-negative": ("policy_node", "deadline", "-1.0", {}),
    "policy_node-deadline-nan": ("policy_node", "deadline", ".nan", {}),
    "policy_node-max_missed_deadlines-negative": ("policy_node", "max_missed_deadlines", "-1", {}),
    "policy_node-diagnostics_period-negative": ("policy_node", "diagnostics_period", "-1.0", {}),
    "policy_node-diagnostics_period-zero": ("policy_node", "diagnostics_period", "0.0", {}),
    "policy_node-diagnostics_period-inf": ("policy_node", "diagnostics_period", ".inf", {}),
    "policy_node-px4_offboard-text": ("policy_node", "px4_offboard", "maybe", {}),
    "teleop_node-axis_scale-nan": ("teleop_node", "axis_scale", "[.nan]", {"profile": "rc_car"}),
    "teleop_node-axis_map-too-long": ("teleop_node", "axis_map", "[0, 1, 2]", {"profile": "rc_car"}),
    "teleop_node-estop_button-text": ("teleop_node", "estop_button", "abc", {"profile": "rc_car"}),
    "teleop_node-device-unknown": ("teleop_node", "device", "keyboard", {"profile": "arm_peg"}),
    "teleop_node-device-spacenav-not-an-arm": ("teleop_node", "device", "spacenav", {"profile": "rc_car"}),
    "teleop_node-spacenav.speed-negative": (
        "teleop_node",
        "spacenav.speed",
        "-1.0",
        {"profile": "arm_peg", "device": "spacenav"},
    ),
    "recorder-storage-an-int": ("recorder", "storage", "5", {}),
    "recorder-topics-text": ("recorder", "topics", "abc", {}),
    "sim_bridge-episode_length-text": ("sim_bridge", "episode_length", "abc", {"profile": "rc_car"}),
    "sim_bridge-episode_length-negative": ("sim_bridge", "episode_length", "-1.0", {"profile": "rc_car"}),
    "sim_bridge-seed-text": ("sim_bridge", "seed", "abc", {"profile": "rc_car"}),
    "sim_bridge-command_type-unknown": ("sim_bridge", "command_type", "bogus", {"profile": "rc_car"}),
    "sim_bridge-task_params-missing-track": ("sim_bridge", "task_params", "[track=missing.csv]", {"profile": "rc_car"}),
}

ROS_ARGUMENT_CASES = {
    # label: (node, ROS arguments after `--ros-args`, what the line must quote, whether rcl logs a line first)
    "policy_node-unknown-ros-argument": ("policy_node", ["-x"], "-x", False),
    "policy_node-remap-without-target": ("policy_node", ["-r", "a"], "-r a", True),
    "teleop_node-override-without-value": ("teleop_node", ["-p", "noassign"], "noassign", True),
    "recorder-bad-log-level": ("recorder", ["--log-level", "loud"], "loud", True),
    "policy_node-missing-params-file": ("policy_node", ["--params-file", "missing.yaml"], "missing.yaml", False),
}


def run_arguments_case(folder: Path, node: str, extra: list[str], quoted: str, rcl_logs: bool) -> dict[str, object]:
    folder.mkdir()
    done = subprocess.run(
        [str(BIN / node), "--ros-args", *extra], capture_output=True, text=True, timeout=60, cwd=folder
    )
    left = sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))
    return {
        "exit_code": done.returncode,
        "stderr": done.stderr,
        "parameter": quoted,
        "left": left,
        "rcl_logs": rcl_logs,
    }


def run_case(folder: Path, node: str, name: str, value: str, others: dict[str, str], policy: str) -> dict[str, object]:
    folder.mkdir()
    if node == "policy_node":  # autostart: the parameters are read at start, not at a later configure
        others = {"autostart": "true", "profile": "rc_car", "policy": policy, **others}
    if node == "recorder":
        others = {"output_dir": str(folder / "bags"), **others}
    params = {**others, name: value}
    argv = [str(BIN / node), "--ros-args", *(arg for key, v in params.items() for arg in ("-p", f"{key}:={v}"))]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=folder)
    left = sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))
    return {"exit_code": done.returncode, "stderr": done.stderr, "parameter": name, "left": left}


if __name__ == "__main__":
    log_dir, policy = Path(sys.argv[1]), sys.argv[2]
    results = {label: run_case(log_dir / label, *case, policy) for label, case in CASES.items()}
    results |= {label: run_arguments_case(log_dir / label, *case) for label, case in ROS_ARGUMENT_CASES.items()}
    finish(results)
