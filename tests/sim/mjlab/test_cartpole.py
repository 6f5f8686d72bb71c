"""mjlab's cart-pole as a robo_rl BatchedEnv (`robo_rl.sim.from_mjlab`), run in .venv-mjlab (scenarios/cartpole.py).

One scenario run does everything (the contract on 25 steps, the episode boundary against a twin env, 2 PPO
iterations, ONNX export parity); the tests below assert on its report.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
import torch

from robo_rl.artifact import PolicyArtifact
from robo_rl.cli.main import main
from robo_rl.export.onnx import read_metadata
from robo_rl.real.profile import load_profile
from robo_rl.real.runtime import PolicyRuntime

OBS_NAMES = ["cart_pos", "pole_angle[0]", "pole_angle[1]", "cart_vel", "pole_vel"]


@pytest.fixture(scope="module")
def report(mjlab_scenario: Callable[..., dict[str, Any]], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    go1 = tmp_path_factory.mktemp("mjlab_export") / "go1_velocity.onnx"
    return mjlab_scenario("cartpole.py", "--mjlab-onnx-go1", str(go1))


def test_specs_come_from_the_task(report: dict[str, Any]) -> None:
    assert report["obs_names"] == OBS_NAMES
    assert report["privileged_names"] == OBS_NAMES  # the cart-pole's critic group has the actor's terms
    assert report["action_names"] == ["slider"]
    assert (report["action_low"], report["action_high"]) == ([-1.0], [1.0])
    assert report["dt"] == pytest.approx(0.05)
    assert report["max_episode_steps"] == 20
    assert report["final_obs_source"] == "manual_reset"


def test_final_obs_is_the_last_observation_of_the_episode(report: dict[str, Any]) -> None:
    """Every env times out at step 20 (check_step_result held on all 25 steps, or the scenario would have failed)."""
    boundary = report["boundary"]
    assert (boundary["step"], boundary["done"], boundary["terminated"]) == (20, 16, 0)
    final, following = torch.tensor(boundary["final_obs"]), torch.tensor(boundary["next_obs"])
    # the final observation is where the twin (whose episodes go on) was at that step
    torch.testing.assert_close(final, torch.tensor(report["twin_obs"]), rtol=0.0, atol=1e-5)
    # the next one starts a new episode: pole upright within mjlab's reset range (±0.034 rad), nearly at rest
    assert boundary["min_row_diff"] > 1e-3
    assert torch.all(following[:, 1] > math.cos(0.04))
    assert torch.all(following[:, 3:].abs() < 0.05)
    assert boundary["final_privileged_equals_final_obs"]


def test_two_ppo_iterations_train_and_export_with_parity(report: dict[str, Any]) -> None:
    ppo = report["ppo"]
    assert ppo["iterations"] == 2
    assert ppo["env_steps"] == 2 * ppo["ppo_num_steps"] * 16
    assert ppo["parameters_changed"]
    assert ppo["parity"] < 1e-5
    artifact = PolicyArtifact.from_props(ppo["metadata"])
    assert list(artifact.obs.names) == OBS_NAMES
    assert list(artifact.action.names) == ["slider"]
    assert artifact.dt == pytest.approx(0.05)


def test_an_unknown_task_lists_the_registered_ones(report: dict[str, Any]) -> None:
    message = report["unknown_task_error"]
    assert message is not None and "'Mjlab-No-Such-Task'" in message and "Mjlab-Cartpole-Balance" in message


def _csv(text: str) -> np.ndarray:
    return np.array([float(v) for v in text.split(",")])


def test_a_policy_exported_by_mjlab_itself_imports_with_its_folds(report: dict[str, Any], tmp_path: Path) -> None:
    """mjlab's own exporter (Go1 velocity, untrained) → `robo-rl import`: the artifact takes absolute joint angles and
    the last targets sent, and outputs default + scale × the file's output, as mjlab's metadata says."""
    source = Path(report["mjlab_onnx_go1"]["path"])
    meta = report["mjlab_onnx_go1"]["metadata"]
    out = tmp_path / "go1.onnx"
    assert main(["import", str(source), *"--dt 0.02 --action-low -3 --action-high 3".split(), "-o", str(out)]) == 0
    pose, scale = _csv(meta["default_joint_pos"]), _csv(meta["action_scale"])
    terms = meta["observation_names"].split(",")
    widths = {"base_lin_vel": 3, "base_ang_vel": 3, "projected_gravity": 3, "command": 3}
    starts = np.cumsum([0] + [widths.get(t, len(pose)) for t in terms])
    at = dict(zip(terms, starts, strict=False))
    rng = np.random.default_rng(0)
    robot = rng.normal(0, 0.5, size=(32, int(starts[-1])))
    robot[:, at["joint_pos"] : at["joint_pos"] + len(pose)] += pose
    robot[:, at["actions"] : at["actions"] + len(pose)] += pose
    policy_input = robot.copy()
    policy_input[:, at["joint_pos"] : at["joint_pos"] + len(pose)] -= pose  # joint_pos_rel
    policy_input[:, at["actions"] : at["actions"] + len(pose)] -= pose  # last_action: the raw output
    policy_input[:, at["actions"] : at["actions"] + len(pose)] /= scale
    original = ort.InferenceSession(str(source), providers=["CPUExecutionProvider"])
    imported = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    for row, given in zip(policy_input.astype(np.float32), robot.astype(np.float32), strict=True):
        raw = original.run(None, {"obs": row[None]})[0][0]
        expected = np.clip(pose + scale * raw, -3, 3)
        assert np.abs(imported.run(["action"], {"obs": given[None]})[0][0] - expected).max() <= 1e-5
    artifact = PolicyArtifact.from_props(read_metadata(out))
    assert artifact.action.names[0] == meta["joint_names"].split(",")[0] + "_target"
    PolicyRuntime(out, load_profile(out.with_suffix(".profile.yaml")))  # policy_node's check passes with the draft
