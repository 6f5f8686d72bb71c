"""The peg policy on the (simulated) arm (issue 36): policy_node runs the exported peg_insert_sac policy with the
arm_peg profile against sim_bridge (mujoco/peg_insert) standing in for the arm, through a probe that relays the
arm's JointStates (scenario_sim_peg.py). Each command is the measured pose plus steps of at most 0.05 rad; the
simulated arm moves; nothing goes out before a complete JointState; a silent arm is held where it was last measured.

Load-proof: the scenario's phases last until their effects show, and the assertions count messages, never time.
"""

from __future__ import annotations

import itertools
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

JOINTS = ["yaw", "shoulder", "elbow", "wrist"]
MAX_STEP = 0.05  # rad, the profile's action bounds
TOL = 1e-6  # float32 through the policy and the command map
ROS_PYTHON = os.environ.get("ROBO_RL_ROS_PYTHON", str(Path(__file__).resolve().parents[3] / ".venv-ros/bin/python"))


@pytest.fixture(scope="module")
def peg(ros_scenario: Callable[..., dict[str, Any]], trained_peg_run: Path) -> dict[str, Any]:
    # sim_bridge runs mujoco/peg_insert in the ROS venv, which `make ros-venv` builds without the simulators' extra.
    if subprocess.run([str(ROS_PYTHON), "-c", "import mujoco"], capture_output=True).returncode != 0:
        pytest.skip(f"{ROS_PYTHON} cannot import mujoco: sim_bridge cannot simulate mujoco/peg_insert there")
    result = ros_scenario("scenario_sim_peg.py", str(trained_peg_run / "policy.onnx"), timeout=500.0)
    assert result["ready"], result["logs"]
    unseen = [key for key, seen in result["marks"].items() if key.endswith("_seen") and not seen]
    assert not unseen, (unseen, result["logs"])
    return result


def _between(result: dict[str, Any], start: str, end: str | None = None) -> list[list[Any]]:
    marks = result["marks"]
    stop = marks[end] if end else float("inf")
    return [c for c in result["commands"] if marks[start] <= c[0] < stop]


def _offsets(command: list[Any], pose: list[float]) -> list[float]:
    return [a - b for a, b in zip(command[3], pose, strict=True)]


def test_sim_bridge_names_the_joints_and_nothing_is_sent_before_a_complete_joint_state(peg: dict[str, Any]) -> None:
    assert peg["bridge_joint_names"] == JOINTS  # read by name, as policy_node reads a real driver's
    assert peg["marks"]["before_complete"] == 0, peg["commands"][:3]  # waiting and incomplete: not one command
    incomplete = [s for s in peg["statuses"] if peg["marks"]["incomplete"] < s[0] < peg["marks"]["moving"]]
    assert any("nothing sent" in s[2] for s in incomplete)
    assert int(incomplete[-1][3]["skipped_messages"]) >= 5  # the wrist-less JointStates, skipped and counted
    assert all(c[0] >= peg["marks"]["moving"] and c[1] > 0 for c in peg["commands"])


def test_every_command_is_the_measured_pose_plus_steps_within_the_bound(peg: dict[str, Any]) -> None:
    relayed, commands = peg["relayed"], peg["commands"]
    assert all(names == JOINTS for _, names, _ in relayed)
    assert all(c[2] == JOINTS for c in commands)
    # Each command steps from the JointState policy_node received last: normally the last one relayed before the
    # command came back; on a stalled machine the next may have been relayed already (lockstep bounds it to one).
    lagged = 0
    for command in commands:
        latest = relayed[command[1] - 1][2]
        if all(abs(d) <= MAX_STEP + TOL for d in _offsets(command, latest)):
            continue
        lagged += 1
        earlier = relayed[command[1] - 2][2]
        assert all(abs(d) <= MAX_STEP + TOL for d in _offsets(command, earlier)), (command, latest, earlier)
    assert lagged <= len(commands) // 10, lagged
    moving = _between(peg, "moving", "stale")
    assert len(moving) >= 40
    # The policy's steps, not holds: most commands differ from the measured pose (the tiny run's steps are ~1e-3 rad).
    steps = [max(abs(d) for d in _offsets(c, relayed[c[1] - 1][2])) for c in moving]
    assert sum(step > 1e-4 for step in steps) >= len(steps) // 2, steps
    assert all(c[4] == pytest.approx(0.1) for c in moving if c[4] < 0.15)  # time_from_start: one period


def test_the_arm_moves_in_the_simulator(peg: dict[str, Any]) -> None:
    bridge = peg["bridge"]
    assert int(bridge["steps"]) >= 30 and bridge["lockstep"] == "True" and bridge["commanded"] == "True"
    poses = [pose for _, _, pose in peg["relayed"]]
    moved = max(abs(a - b) for first, last in [(poses[0], poses[-1])] for a, b in zip(first, last, strict=True))
    assert moved > 0.01, (poses[0], poses[-1])


def test_a_silent_arm_is_held_at_its_last_measured_pose_without_drift(peg: dict[str, Any]) -> None:
    last = peg["relayed"][peg["marks"]["relayed_before_stale"] - 1][2]
    stale = _between(peg, "stale", "resumed")
    said = [s for s in peg["statuses"] if peg["marks"]["stale"] < s[0] < peg["marks"]["resumed"]]
    assert any("stale observation: no joint_states" in s[2] and s[1] == 1 for s in said)
    holds = [c for c in stale if c[3] == pytest.approx(last, abs=TOL)]
    assert len(holds) >= 8
    # Once holding, every later command of the silence is that same pose (one in flight may precede the first).
    first = stale.index(holds[0])
    assert first <= 1 and all(c[3] == pytest.approx(last, abs=TOL) for c in stale[first:])
    assert all(c[1] == peg["marks"]["relayed_before_stale"] for c in stale)  # nothing relayed meanwhile
    assert not [s for s in peg["statuses"] if s[1] == 2], "an ERROR (e-stop) status"


def test_after_the_silence_the_commands_step_from_the_new_measured_pose(peg: dict[str, Any]) -> None:
    resumed = [c for c in _between(peg, "resumed") if c[1] > peg["marks"]["relayed_before_resume"]]
    assert len(resumed) >= 10
    for command in resumed:
        candidates = [peg["relayed"][command[1] - k][2] for k in (1, 2) if command[1] - k >= 0]
        assert any(all(abs(d) <= MAX_STEP + TOL for d in _offsets(command, pose)) for pose in candidates)
    assert all(a[1] <= b[1] for a, b in itertools.pairwise(peg["commands"]))
