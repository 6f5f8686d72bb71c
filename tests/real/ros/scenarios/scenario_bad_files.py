"""Scenario: the node entry points started with a bad file (parameter file, robot profile, policy) exit 2 at once,
with one line on stderr naming the file, and leave nothing in their working folder.

argv: LOG_DIR. Reports, per case, the exit code, stderr and the files the run left in its (otherwise empty) working
folder, which also holds the bad file.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

from harness import BIN, finish

REPO = Path(__file__).resolve().parents[4]
PROFILE = (REPO / "robo_rl" / "real" / "profiles" / "rc_car.yaml").read_bytes()
PARAMS = (REPO / "launch" / "params" / "rc_car.yaml").read_bytes()
TRUNCATED_PROFILE = PROFILE[: PROFILE.index(b"observations:") + 5]  # inside a key
TRUNCATED_PARAMS = PARAMS[: PARAMS.index(b"ros__param") + 4]
CASES = {
    # label: (node, bad file name, its bytes, how the node gets it: a params file, or the profile parameter)
    "sim_bridge-truncated-params": ("sim_bridge", "params.yaml", TRUNCATED_PARAMS, "params"),
    "recorder-random-params": ("recorder", "params.yaml", random.Random(0).randbytes(300), "params"),
    "teleop_node-list-params": ("teleop_node", "params.yaml", b"- ros__parameters: {}\n", "params"),
    "teleop_node-random-profile": ("teleop_node", "robot.yaml", random.Random(1).randbytes(300), "profile"),
    "sim_bridge-truncated-profile": ("sim_bridge", "robot.yaml", TRUNCATED_PROFILE, "profile"),
    "policy_node-truncated-profile": ("policy_node", "robot.yaml", TRUNCATED_PROFILE, "profile"),
    "policy_node-random-policy": ("policy_node", "policy.onnx", random.Random(2).randbytes(300), "policy"),
    "policy_node-empty-policy": ("policy_node", "policy.onnx", b"", "policy"),
}
# policy_node configures at start only with autostart (otherwise a lifecycle manager configures it later, and a
# failed configure leaves it unconfigured, waiting for another try).
AUTOSTART = ["-p", "autostart:=true", "-p", "profile:=rc_car"]


def run_case(folder: Path, node: str, name: str, data: bytes, role: str) -> dict[str, object]:
    folder.mkdir()
    bad = folder / name
    bad.write_bytes(data)
    ros_args = {
        "params": ["--params-file", str(bad)],
        "profile": ["-p", f"profile:={bad}"],
        "policy": ["-p", f"policy:={bad}"],
    }[role]
    if node == "policy_node":
        ros_args = [*AUTOSTART, *ros_args]  # a later profile:= overrides the default one
    argv = [str(BIN / node), "--ros-args", *ros_args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=folder)
    left = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p != bad)
    return {"exit_code": done.returncode, "stderr": done.stderr, "file": str(bad), "left": left}


if __name__ == "__main__":
    log_dir = Path(sys.argv[1])
    finish({label: run_case(log_dir / label, *case) for label, case in CASES.items()})
