"""K-step flow policies (FlowPolicy, DSRL) through policy.onnx to C: torch vs onnxruntime vs host gcc, the error
contract, the target folder and the Cortex-M4F object."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch

from robo_rl.algorithms.dsrl import DSRLConfig, dsrl
from robo_rl.envs import SpaceSpec
from robo_rl.export.onnx import PolicyMetadata, export_onnx, read_metadata
from robo_rl.firmware_export.build import build_cortex_m4, build_host
from robo_rl.firmware_export.flow import evaluate_flow, generate_flow_c, is_flow_policy, load_flow_policy
from robo_rl.firmware_export.onnx_ops import UnsupportedOperatorError
from robo_rl.firmware_export.onnx_reader import load_policy
from robo_rl.firmware_export.targets import export_target
from robo_rl.modules.flow import FlowPolicy

OBS_DIM, ACTION_DIM = 22, 4
TOLERANCE = 1e-5
"""Max |C − torch| allowed, relative to max(1, largest |action|)."""
LOW, HIGH = torch.tensor([-1.0, 0.0, -3.0, 0.5]), torch.tensor([1.0, 2.0, 3.0, 0.75])
needs_arm = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="arm-none-eabi-gcc not installed")


def _metadata() -> PolicyMetadata:
    obs = SpaceSpec(tuple(f"o{i}" for i in range(OBS_DIM)), (-4.0,) * OBS_DIM, (4.0,) * OBS_DIM, ("m",) * OBS_DIM)
    action = SpaceSpec(tuple(f"a{i}" for i in range(ACTION_DIM)), tuple(LOW.tolist()), tuple(HIGH.tolist()), ("N",) * 4)
    return PolicyMetadata(obs, action, 0.01, "toy", "cfg", "git")


def _observations(rows: int = 64) -> torch.Tensor:
    gen = torch.Generator().manual_seed(7)
    obs = 2.0 * torch.randn(rows, OBS_DIM, generator=gen) + torch.linspace(-1, 1, OBS_DIM)
    obs[0, 3] = 80.0  # beyond the normalizer's clip (±10 standard deviations)
    return obs


def _flow_actor(steps: int) -> torch.nn.Module:
    torch.manual_seed(steps)
    policy = FlowPolicy(OBS_DIM, LOW, HIGH, hidden=(64, 64), activation="elu", steps=steps, normalize_obs=True)
    policy.obs_normalizer.update(3.0 * torch.randn(500, OBS_DIM) + torch.arange(OBS_DIM) / 4)
    if steps > 1:  # a standardized flow (demos in a narrow band), folded into the exported net
        policy.fit_action_standardization(0.1 * torch.randn(200, ACTION_DIM) - 0.3)
    return policy.deterministic_actor()


def _dsrl_actor() -> torch.nn.Module:
    torch.manual_seed(0)
    cfg = DSRLConfig(flow_steps=5, actor_hidden=(32, 32), flow_hidden=(64, 64), critic_hidden=(8,), latent_scale=1.5)
    actor = dsrl(OBS_DIM, OBS_DIM, LOW, HIGH, cfg).actor
    actor.fit_action_standardization(0.2 * torch.randn(200, ACTION_DIM) + 0.1)
    return actor.deterministic_actor()


def _check_parity(actor: torch.nn.Module, tmp_path: Path) -> Path:
    path = export_onnx(actor, _metadata(), tmp_path / "policy.onnx")
    obs = _observations()
    with torch.no_grad():
        expected = actor(obs).numpy()
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    scale = max(1.0, float(np.abs(expected).max()))
    assert np.abs(session.run(["action"], {"obs": obs.numpy()})[0] - expected).max() < TOLERANCE * scale
    flow = load_flow_policy(path)
    assert np.abs(evaluate_flow(flow, obs.numpy()) - expected).max() < TOLERANCE * scale
    got, codes = build_host(generate_flow_c(flow, prefix="flow"), tmp_path / "c")(obs.numpy())
    assert np.all(codes == 0)
    assert np.abs(got - expected).max() < TOLERANCE * scale
    return path


@pytest.mark.parametrize("steps", [1, 4, 10])
def test_flow_policy_c_matches_torch_and_onnxruntime(steps: int, tmp_path: Path) -> None:
    path = _check_parity(_flow_actor(steps), tmp_path)
    flow = load_flow_policy(path)
    assert flow.steps == steps and flow.normalizer is not None and flow.noise is not None
    assert read_metadata(path)["robo_rl.flow.steps"] == str(steps)


def test_dsrl_steered_flow_c_matches_torch(tmp_path: Path) -> None:
    path = _check_parity(_dsrl_actor(), tmp_path)
    flow = load_flow_policy(path)
    assert flow.latent is not None and flow.noise is None and flow.normalizer is None


def test_the_unrolled_graph_itself_is_still_refused_as_a_chain(tmp_path: Path) -> None:
    path = export_onnx(_flow_actor(2), _metadata(), tmp_path / "policy.onnx")
    assert is_flow_policy(path)
    with pytest.raises(UnsupportedOperatorError):
        load_policy(path)


def test_nonfinite_observation_is_rejected_and_action_untouched(tmp_path: Path) -> None:
    path = export_onnx(_flow_actor(3), _metadata(), tmp_path / "policy.onnx")
    host = build_host(generate_flow_c(load_flow_policy(path), prefix="flow"), tmp_path / "c")
    obs = np.zeros((3, OBS_DIM), np.float32)
    obs[0, 5], obs[1, 0], obs[2, -1] = np.nan, np.inf, -np.inf
    got, codes = host(obs, fill=123.0)
    assert np.all(codes == 1)
    assert np.all(got == 123.0)


def test_c_target_folder_verifies_a_flow_policy(tmp_path: Path) -> None:
    path = export_onnx(_dsrl_actor(), _metadata(), tmp_path / "policy.onnx")
    report = export_target(path, "c", tmp_path / "firmware_c", verify=True)
    assert report.ok and report.host_parity is not None and report.nonfinite_rejected
    assert report.host_parity.within_tolerance
    assert (tmp_path / "firmware_c" / "robo_rl_policy.c").is_file()


def test_int8_is_refused_for_flow_policies(tmp_path: Path) -> None:
    path = export_onnx(_flow_actor(1), _metadata(), tmp_path / "policy.onnx")
    with pytest.raises(ValueError, match="int8"):
        export_target(path, "c", tmp_path / "out", int8=True)


@needs_arm
def test_cortex_m4_object_builds(tmp_path: Path) -> None:
    path = export_onnx(_dsrl_actor(), _metadata(), tmp_path / "policy.onnx")
    size = build_cortex_m4(generate_flow_c(load_flow_policy(path)), tmp_path / "m4")
    assert size.text > 4 * (OBS_DIM + ACTION_DIM + 1) * 64 and size.bss > 0
