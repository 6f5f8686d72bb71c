"""`normalize_obs` of FQL and PA-RL: every normalizer (flow, one-step policy, critics) is fitted once to the first
data and then stays; the exported policy carries it (FQL's one-step MLP as a chain of layers, PA-RL's flow through
the flow sampler's C), so onnxruntime and the generated C agree with torch on observations of very different scales
(millimetres beside metres, as the peg's)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from robo_rl.algorithms.fql import FQL, FQLConfig
from robo_rl.algorithms.pa_rl import PARL, PARLConfig
from robo_rl.envs import SpaceSpec
from robo_rl.export.onnx import PolicyMetadata, export_onnx, onnx_parity
from robo_rl.firmware_export.build import build_host
from robo_rl.firmware_export.codegen import generate_c
from robo_rl.firmware_export.flow import generate_flow_c, is_flow_policy, load_flow_policy
from robo_rl.firmware_export.onnx_reader import load_policy
from robo_rl.storage.replay import Transitions

SCALES, OFFSETS = torch.tensor([0.002, 1.0, 50.0]), torch.tensor([0.01, -3.0, 200.0])
LOW, HIGH = torch.tensor([-2.0, 0.0]), torch.tensor([2.0, 1.0])


def _observations(n: int, seed: int) -> torch.Tensor:
    return torch.randn(n, 3, generator=torch.Generator().manual_seed(seed)) * SCALES + OFFSETS


def _batch(obs: torch.Tensor) -> Transitions:
    n = len(obs)
    flags = torch.zeros(n, dtype=torch.bool)
    zeros = torch.zeros(n)
    return Transitions(obs, obs, torch.zeros(n, 2), zeros, zeros, obs, obs, flags, flags, flags, ~flags)


def _fql(normalize: bool) -> FQL:
    cfg = FQLConfig(actor_hidden=(32, 32), flow_hidden=(32, 32), critic_hidden=(32, 32), flow_steps=4)
    return FQL(3, 3, LOW, HIGH, replace(cfg, normalize_obs=normalize))


def _pa_rl(normalize: bool) -> PARL:
    cfg = PARLConfig(flow_hidden=(32, 32), critic_hidden=(32, 32), flow_steps=4)
    return PARL(3, 3, LOW, HIGH, replace(cfg, normalize_obs=normalize))


def _normalizers(algorithm: FQL | PARL) -> list[nn.Module]:
    critics = [algorithm.critic.obs_normalizer, algorithm.target_critic.obs_normalizer]
    if isinstance(algorithm, FQL):
        return [algorithm.actor.flow.obs_normalizer, algorithm.actor.one_step.obs_normalizer, *critics]
    return [algorithm.actor.obs_normalizer, *critics]


@pytest.mark.parametrize("build", [_fql, _pa_rl], ids=["fql", "pa_rl"])
def test_every_normalizer_is_fitted_once_to_the_first_data(build) -> None:
    assert not build(False).needs_normalizers  # off: nothing to fit
    algorithm = build(True)
    assert algorithm.needs_normalizers
    first = _observations(4096, seed=0)
    algorithm.fit_normalizers(_batch(first))
    assert not algorithm.needs_normalizers
    for normalizer in _normalizers(algorithm):
        torch.testing.assert_close(normalizer.mean, first.mean(dim=0), rtol=1e-4, atol=1e-6)
        torch.testing.assert_close(normalizer.var.sqrt(), first.std(dim=0), rtol=1e-3, atol=0.0)
        standardized = normalizer(first)
        assert (
            float(standardized.mean(dim=0).abs().max()) < 1e-3
            and float((standardized.std(dim=0) - 1).abs().max()) < 1e-2
        )
    means = [normalizer.mean.clone() for normalizer in _normalizers(algorithm)]
    algorithm.fit_normalizers(_batch(_observations(100, seed=1) * 3))  # later data leaves them alone
    assert all(torch.equal(m, n.mean) for m, n in zip(means, _normalizers(algorithm), strict=True))


@pytest.mark.parametrize("build", [_fql, _pa_rl], ids=["fql", "pa_rl"])
def test_the_export_carries_the_normalizer_into_onnx_and_c(build, tmp_path: Path) -> None:
    torch.manual_seed(0)
    algorithm = build(True)
    algorithm.fit_normalizers(_batch(_observations(1024, seed=0)))
    obs = _observations(32, seed=2)
    actor = (algorithm.actor.deterministic_actor()).eval()
    with torch.no_grad():
        expected = actor(obs)
        in_training = algorithm.act(obs, deterministic=True)
    torch.testing.assert_close(expected, (in_training + 1) / 2 * (HIGH - LOW) + LOW)
    spec = SpaceSpec(("x", "y", "z"), (-1e3,) * 3, (1e3,) * 3, ("m",) * 3)
    metadata = PolicyMetadata(
        spec, SpaceSpec(("u", "v"), (-2.0, 0.0), (2.0, 1.0), ("N", "N")), 0.05, "toy", "cfg", "git"
    )
    path = export_onnx(actor, metadata, tmp_path / "policy.onnx")
    assert onnx_parity(actor, path, obs) < 1e-5
    sources = generate_flow_c(load_flow_policy(path)) if is_flow_policy(path) else generate_c(load_policy(path))
    got, _status = build_host(sources, tmp_path / "c")(obs.numpy().astype(np.float32))
    assert float(np.abs(got - expected.numpy()).max()) < 1e-4
