"""A policy imported from mjlab (`robo-rl import`, tests/robo_rl/importers) runs in policy_node unchanged, with the
draft profile the import wrote (scenario_imported_policy.py): every command is the imported policy's output on the
observation the profile assembles from the robot's topics, with the previous command as the last action."""

from __future__ import annotations

import importlib.util
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from robo_rl.cli.main import main
from robo_rl.real.runtime import PolicyRuntime

HELPERS = Path(__file__).resolve().parents[2] / "robo_rl" / "importers" / "foreign_policies.py"


def _helpers() -> Any:
    spec = importlib.util.spec_from_file_location("foreign_policies", HELPERS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _observation(inputs: dict[str, Any], joints: tuple[str, ...], previous: list[float]) -> np.ndarray:
    positions = [inputs["positions"][j] for j in joints]
    base = [*inputs["lin"], *inputs["ang"], *inputs["gravity"], *inputs["command"]]
    return np.array([*base, *positions, *[0.1] * len(joints), *previous], dtype=np.float32)


def test_policy_node_drives_an_imported_mjlab_policy_with_its_draft_profile(
    ros_scenario: Callable[..., dict[str, Any]], tmp_path: Path
) -> None:
    foreign = _helpers()
    foreign.export_rsl_rl(tmp_path / "mjlab.onnx")
    foreign.add_mjlab_metadata(tmp_path / "mjlab.onnx")
    policy = tmp_path / "go.onnx"
    flags = "--dt 0.02 --action-low -3 --action-high 3".split()
    assert main(["import", str(tmp_path / "mjlab.onnx"), *flags, "-o", str(policy)]) == 0
    profile = policy.with_suffix(".profile.yaml")
    joints = foreign.JOINTS
    result = ros_scenario("scenario_imported_policy.py", str(policy), str(profile), ",".join(joints), timeout=120.0)
    logs = result["logs"]["policy_node"]
    commands = result["commands"]
    assert result["ready"] and len(commands) >= 60, logs
    assert all(c[1] == list(joints) for c in commands)  # the profile's joint order
    runtime = PolicyRuntime(policy)
    pose = np.round(foreign.default_pose(), 3)
    safe = [bool(np.abs(np.array(c[2]) - pose).max() <= 1e-3) for c in commands]  # the safe command: default pose
    matched = [
        np.allclose(now[2], runtime(_observation(result["inputs"], joints, before[2])), atol=1e-4)
        for before, now in itertools.pairwise(commands)
    ]
    # Each command is the policy's answer to the inputs and the previous command, or the safe command (a stale
    # input on a busy machine); only the command right after a safe one may be neither.
    unexplained = [k for k, ok in enumerate(matched) if not (ok or safe[k + 1] or safe[k])]
    assert not unexplained, (unexplained, logs)
    # and the policy drives: most commands are not the safe one.
    assert sum(matched) >= 20, (sum(matched), sum(safe), logs)
