"""C export of a chunked policy: the header states the horizon and one step's action size, the host build
matches onnxruntime on every step of the chunk, and it writes exactly H steps."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch

from robo_rl.api.configs import preset
from robo_rl.build import build_policy
from robo_rl.chunks.env import ChunkEnv, action_chunking
from robo_rl.config import config_hash
from robo_rl.export.onnx import PolicyMetadata, export_onnx
from robo_rl.firmware_export.build import build_host
from robo_rl.firmware_export.codegen import generate_c
from robo_rl.firmware_export.onnx_reader import load_policy
from robo_rl.firmware_export.quantize import sample_observations
from robo_rl.firmware_export.targets import export_target
from robo_rl.sim import make

HORIZON = 8


@pytest.fixture(scope="module")
def chunked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The hover PPO actor trained on a chunk env (random weights): 22 observations → 8 steps × 4 rotors."""
    cfg = preset("quadrotor_hover_ppo")
    env = ChunkEnv(make(cfg.task.name, num_envs=1), HORIZON)
    torch.manual_seed(0)
    actor = build_policy(cfg, env).deterministic_actor()
    chunking = action_chunking(env)
    metadata = PolicyMetadata(
        env.obs_spec, chunking.step_action, chunking.step_dt, cfg.task.name, config_hash(cfg), "test", None, HORIZON
    )
    return export_onnx(actor, metadata, tmp_path_factory.mktemp("chunked") / "policy.onnx")


def test_the_header_states_the_horizon_and_one_steps_actions_and_the_c_matches_onnxruntime(
    chunked: Path, tmp_path: Path
) -> None:
    ir = load_policy(chunked)
    assert (ir.info.action_chunk, len(ir.info.action_names), ir.action_dim) == (HORIZON, 4, HORIZON * 4)
    sources = generate_c(ir, "hover")
    assert re.search(r"^#define HOVER_ACTION_DIM 4\b", sources.header, re.MULTILINE)
    assert re.search(r"^#define HOVER_ACTION_CHUNK 8\b", sources.header, re.MULTILINE)
    assert "#define HOVER_ACTION_ROTOR_3 3" in sources.header  # index macros of one step
    assert "writes action[HOVER_ACTION_CHUNK * HOVER_ACTION_DIM]" in sources.header
    host = build_host(sources, tmp_path)
    obs = sample_observations(ir.info, 512)
    session = ort.InferenceSession(str(chunked), providers=["CPUExecutionProvider"])
    expected = session.run(["action"], {"obs": obs})[0]
    actions, codes = host(obs)
    assert actions.shape == (512, HORIZON * 4) and not codes.any()
    assert np.max(np.abs(actions - expected)) <= 1e-5 * max(1.0, float(np.abs(expected).max()))
    assert np.ptp(expected.reshape(512, HORIZON, 4), axis=1).max() > 1e-3  # the steps differ: a real chunk
    wide = replace(host, action_dim=HORIZON * 4 + 4)  # a longer buffer: nothing is written past the chunk
    padded, _ = wide(obs[:3])
    assert np.isnan(padded[:, HORIZON * 4 :]).all() and not np.isnan(padded[:, : HORIZON * 4]).any()


def test_the_c_target_verifies_a_chunked_policy_and_the_crazyflie_refuses_it(chunked: Path, tmp_path: Path) -> None:
    report = export_target(chunked, "c", tmp_path / "c", verify=True)
    assert report.ok and report.host_parity is not None and report.host_parity.within_tolerance
    with pytest.raises(ValueError, match=r"crazyflie target: the policy outputs chunks of 8 actions"):
        export_target(chunked, "crazyflie", tmp_path / "cf")
    assert not (tmp_path / "cf").exists()
