"""ONNX export of the pendulum policy: a valid single file, parity with torch, dynamic batch, metadata."""

from __future__ import annotations

import copy
import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx.external_data_helper import uses_external_data

import robo_rl
from robo_rl.api.configs import preset
from robo_rl.build import build_policy
from robo_rl.config import config_hash
from robo_rl.export.onnx import ACTION_OUTPUT, OBS_INPUT, PolicyMetadata, export_onnx, onnx_parity, read_metadata
from robo_rl.modules.actor_critic import ActorCritic
from robo_rl.provenance import git_hash
from robo_rl.sim import make

OBS_MEAN = torch.tensor([0.2, -0.1, 1.5])
OBS_VAR = torch.tensor([0.3, 0.6, 9.0])


def _policy_with_statistics() -> tuple[ActorCritic, Any, Any]:
    """The pendulum policy, with non-trivial normalizer statistics and an output layer large enough to saturate."""
    cfg = replace(preset("pendulum_ppo"), task=replace(preset("pendulum_ppo").task, num_envs=1))
    env = make(cfg.task.name, num_envs=1, seed=0)
    torch.manual_seed(0)
    policy = build_policy(cfg, env)
    with torch.no_grad():
        policy.obs_normalizer.mean.copy_(OBS_MEAN)
        policy.obs_normalizer.var.copy_(OBS_VAR)
        policy.obs_normalizer.count.fill_(1000.0)
        policy.actor[-1].weight.mul_(150.0)
    return policy, cfg, env


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    policy, cfg, env = _policy_with_statistics()
    metadata = PolicyMetadata(
        obs_spec=env.obs_spec,
        action_spec=env.action_spec,
        dt=env.dt,
        task=cfg.task.name,
        config_hash=config_hash(cfg),
        git_hash=git_hash(),
    )
    out_dir = tmp_path_factory.mktemp("export")
    path = export_onnx(policy.deterministic_actor(), metadata, out_dir / "policy.onnx")
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return {"policy": policy, "cfg": cfg, "env": env, "path": path, "dir": out_dir, "session": session}


def _observations(count: int, seed: int) -> torch.Tensor:
    """Observations over three times the spec's range (so two thirds lie out of bounds), plus extremes."""
    gen = torch.Generator().manual_seed(seed)
    high = torch.tensor([1.0, 1.0, 8.0])
    obs = (2 * torch.rand(count, 3, generator=gen) - 1) * 3 * high
    extremes = torch.tensor([[1.0, 0.0, 0.0], [-1.0, 0.0, 8.0], [1e6, -1e6, 1e6], [0.0, 0.0, -1e4]])
    n = min(count, len(extremes))
    obs[:n] = extremes[:n]
    return obs


def _run(session: ort.InferenceSession, obs: torch.Tensor) -> np.ndarray:
    return session.run([ACTION_OUTPUT], {OBS_INPUT: obs.numpy().astype(np.float32)})[0]


def test_exported_file_is_a_valid_single_file(exported: dict[str, Any]) -> None:
    path: Path = exported["path"]
    assert path.name == "policy.onnx"
    assert [p.name for p in exported["dir"].iterdir()] == ["policy.onnx"]  # no external data, no temp file
    onnx.checker.check_model(str(path), full_check=True)
    model = onnx.load(str(path), load_external_data=False)
    assert model.graph.initializer, "weights should be initializers inside the file"
    assert not any(uses_external_data(t) for t in model.graph.initializer)
    assert [i.name for i in model.graph.input] == [OBS_INPUT]
    assert [o.name for o in model.graph.output] == [ACTION_OUTPUT]


def test_onnxruntime_matches_torch_on_1000_observations(exported: dict[str, Any]) -> None:
    obs = _observations(1000, seed=3)
    actor = exported["policy"].deterministic_actor().eval()
    with torch.no_grad():
        expected = actor(obs).numpy()
    got = _run(exported["session"], obs)
    assert got.shape == (1000, 1)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5)
    assert onnx_parity(actor, exported["path"], obs) <= 1e-5
    # The sample exercises the action clip at both bounds and the interior.
    assert (got == -2.0).any() and (got == 2.0).any() and (np.abs(got) < 1.9).any()


def test_normalizer_statistics_are_inside_the_file(exported: dict[str, Any]) -> None:
    obs = _observations(200, seed=4)
    without_stats = copy.deepcopy(exported["policy"])
    with torch.no_grad():
        without_stats.obs_normalizer.mean.zero_()
        without_stats.obs_normalizer.var.fill_(1.0)
        unnormalized = without_stats.deterministic_actor()(obs).numpy()
    got = _run(exported["session"], obs)
    assert np.abs(got - unnormalized).max() > 0.1


def test_dynamic_batch(exported: dict[str, Any]) -> None:
    model = onnx.load(str(exported["path"]), load_external_data=False)
    batch_dim = model.graph.input[0].type.tensor_type.shape.dim[0]
    assert batch_dim.dim_param and not batch_dim.HasField("dim_value")
    actor = exported["policy"].deterministic_actor().eval()
    for batch in (1, 37):
        obs = _observations(batch, seed=batch)
        got = _run(exported["session"], obs)
        assert got.shape == (batch, 1)
        with torch.no_grad():
            np.testing.assert_allclose(got, actor(obs).numpy(), rtol=0, atol=1e-5)


def test_metadata_props(exported: dict[str, Any]) -> None:
    props = read_metadata(exported["path"])
    env, cfg = exported["env"], exported["cfg"]
    assert json.loads(props["robo_rl.obs_names"]) == ["cos_theta", "sin_theta", "theta_dot"]
    assert json.loads(props["robo_rl.obs_units"]) == ["1", "1", "rad/s"]
    assert json.loads(props["robo_rl.obs_low"]) == [-1.0, -1.0, -8.0]
    assert json.loads(props["robo_rl.obs_high"]) == [1.0, 1.0, 8.0]
    assert json.loads(props["robo_rl.action_names"]) == ["torque"]
    assert json.loads(props["robo_rl.action_units"]) == ["N*m"]
    assert json.loads(props["robo_rl.action_low"]) == [-2.0]
    assert json.loads(props["robo_rl.action_high"]) == [2.0]
    assert float(props["robo_rl.dt"]) == env.dt == 0.05
    assert props["robo_rl.task"] == "pendulum"
    assert props["robo_rl.config_hash"] == config_hash(cfg)
    assert len(props["robo_rl.config_hash"]) == 12
    assert props["robo_rl.git_hash"] == git_hash()
    assert props["robo_rl.version"] == robo_rl.__version__
    model = onnx.load(str(exported["path"]), load_external_data=False)
    assert model.producer_name == "robo_rl"
    assert all(math.isfinite(v) for key in ("obs_low", "obs_high") for v in json.loads(props[f"robo_rl.{key}"]))
