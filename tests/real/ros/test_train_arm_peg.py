"""Learning peg insertion on the arm through ROS (scenario_train_arm_peg.py): `robo-rl train --robot arm_peg` against
sim_bridge standing in for the arm (mujoco/peg_insert), SAC from random weights with the task expert's
demonstrations in the RLPD prior buffer, the learner in its own process, a simulated operator taking over and
answering reset prompts through teleop_node's topics and pressing the e-stop once; stopped with Ctrl-C after MAX_S
seconds. Learning to insert takes 20-30 robot minutes (bench/peg_hil.py in simulated time, bench/peg_ros_realtime.py
through ROS; docs/BENCHMARKS.md); this test checks that the whole loop holds in real time on the arm's topics."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from robo_rl.real.profile import load_profile
from robo_rl.real.runtime import PolicyRuntime

ROBO_RL = str(Path(sys.executable).parent / "robo-rl")
ROS_PYTHON = Path(os.environ.get("ROBO_RL_ROS_PYTHON", Path(__file__).parents[3] / ".venv-ros" / "bin" / "python"))
"""conftest.py's: sim_bridge and the trainer run from it and make the MuJoCo task."""
MAX_S = 60.0
"""Seconds of robot time from the first episode's start to Ctrl-C: about 600 steps at 10 Hz."""
RECIPE = [
    "off_policy.learning_starts=200",
    "off_policy.batch_size=128",
    "off_policy.prior_fraction=0.5",
]
"""Updates start a third of the way in (the learner process updates while the arm moves); peg_insert_rlpd's half
of every batch from the demonstrations and the operator's takeovers."""


def _record_demo(path: Path) -> None:
    """Two episodes of the task's scripted expert in simulation (robo_rl.sim.mujoco.peg_expert): the task's
    observation and action names, which are the profile's. (`--robot arm_peg --robot-link sim` records only what
    the simulated car driver of robo_rl.robot.operator drives: nothing on the arm.)"""
    cmd = [ROBO_RL, "record-demos", "mujoco/peg_insert", "--episodes", "2", "--param", "num_threads=1"]
    subprocess.run([*cmd, "-o", str(path)], check=True, capture_output=True, timeout=300)


@pytest.mark.slow
def test_sac_with_demos_and_an_operator_trains_on_the_peg_arm_through_ros(
    ros_scenario: Callable[..., dict[str, Any]], tmp_path: Path
) -> None:
    if subprocess.run([str(ROS_PYTHON), "-c", "import mujoco"], capture_output=True).returncode != 0:
        pytest.skip(f"{ROS_PYTHON} has no mujoco (a .venv-ros built before the Makefile added it: make ros-venv)")
    demos = tmp_path / "demo.npz"
    _record_demo(demos)
    meta = json.loads(str(np.load(demos)["meta"]))
    profile = load_profile("arm_peg")
    assert meta["obs_names"] == list(profile.obs_names) and meta["action_names"] == list(profile.action_names)
    result = ros_scenario(
        "scenario_train_arm_peg.py", str(tmp_path), str(demos), str(MAX_S), *RECIPE, timeout=MAX_S + 240
    )
    logs = result["logs"]
    print({k: v for k, v in result.items() if k not in ("logs",)})  # the numbers, with -s
    assert result["train_exit"] in (0, 130), logs["train"]  # 130: stopped with Ctrl-C, checkpoint saved
    assert "checkpoint saved" in logs["train"]
    (run,) = (tmp_path / "robot_arm_peg_sac").iterdir()
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    last = rows[-1]
    print(last)
    # counts that hold at any machine speed (a loaded machine makes more steps invalid and stalls more; none of
    # that is asserted): valid transitions stored, the e-stop seen once, the operator's resets (the start, after the
    # e-stop) answered and seen by sim_bridge, which put the arm back at each press it received
    assert last.get("invalid_steps", 0) < last["env_steps"]
    assert last["estops"] == 1 and last["robot_episodes"] >= 2
    assert result["reset_presses"] >= 2 and last["human_resets"] >= 2
    assert int(result["bridge"]["put_backs"]) >= 2  # the arm is back above the block at each episode's start
    if result["operator_share"] > 0.01:  # the operator's takeovers arrived and were stored as executed actions
        assert last["interventions"] > 0
    assert 0.8 * last["env_steps"] * 0.1 < last["robot_time"]  # real time: never faster than 10 Hz steps
    # the learner process updated from the demos and the arm's steps (learning_starts=200 of about 600 steps) and the
    # actor took its weights: a count, with a wide margin (30 versions by step 500 on an idle machine)
    assert last["policy_version"] >= 1
    record = yaml.safe_load((run / "task.yaml").read_text())
    assert record["specs"]["obs"]["names"] == list(profile.obs_names) and record["specs"]["dt"] == 0.1
    assert (run / "checkpoints" / "latest.pt").is_file()
    # what it learned deploys with policy_node unchanged: the export passes the runtime's profile check and acts on
    # the arm's observations within the profile's step bounds
    subprocess.run([ROBO_RL, "export", str(run)], check=True, capture_output=True, timeout=300)
    runtime = PolicyRuntime(run / "policy.onnx", load_profile("arm_peg"))
    obs = np.load(demos)["obs"][:50]
    actions = np.stack([runtime(o) for o in obs])
    assert actions.shape == (50, 4) and np.isfinite(actions).all() and np.abs(actions).max() <= 0.05 + 1e-6
