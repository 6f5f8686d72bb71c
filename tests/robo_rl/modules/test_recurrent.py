"""Policies with memory (robo_rl.modules.recurrent): the state's reset rule, the sequence form PPO trains with, and
the exported graph `(obs, h_in) -> (action, h_out)` against onnxruntime (Microsoft's runtime, which implements the
ONNX GRU operator from the ONNX specification, not from our code) over whole episodes with resets in between."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import onnx
import pytest
import torch

from robo_rl.artifact import PolicyArtifact
from robo_rl.export.onnx import PolicyMetadata, export_onnx, onnx_episode_parity, read_metadata
from robo_rl.modules.actor_critic import PolicyConfig
from robo_rl.modules.recurrent import RecurrentActorCritic
from robo_rl.spaces import SpaceSpec

OBS, ACT = 5, 3
GRU = PolicyConfig(actor_hidden=(16,), memory="gru", memory_size=8)
HISTORY = PolicyConfig(actor_hidden=(16,), memory="history", history_length=3)


def _policy(cfg: PolicyConfig, seed: int = 0) -> RecurrentActorCritic:
    torch.manual_seed(seed)
    policy = RecurrentActorCritic(OBS, -torch.ones(ACT), torch.ones(ACT), cfg)
    with torch.no_grad():  # a trained-looking head and statistics (the init's 0.01 output gain hides errors)
        for p in policy.head.parameters():
            p.normal_(0.0, 0.5)
        policy.obs_normalizer.update(torch.randn(64, OBS) * 3 + 1)
    return policy


def _episodes(steps: int = 200, batch: int = 3, seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    obs = torch.randn(steps, batch, OBS, generator=g) * 2
    starts = torch.rand(steps, batch, generator=g) < 0.03
    starts[0] = True
    return obs, starts


@pytest.mark.parametrize("cfg", [GRU, HISTORY], ids=["gru", "history"])
def test_sequence_matches_stepping_with_the_state_zeroed_at_episode_starts(cfg: PolicyConfig) -> None:
    policy = _policy(cfg)
    obs, starts = _episodes(40)
    h = torch.randn(3, policy.state_size)
    with torch.no_grad():
        sequence = policy.sequence(obs, h, starts).mean
        means = []
        for t in range(obs.shape[0]):
            h = torch.where(starts[t].unsqueeze(-1), torch.zeros_like(h), h)
            mean, _, h = policy.step(obs[t], h)
            means.append(mean)
    torch.testing.assert_close(sequence, torch.stack(means), rtol=1e-5, atol=1e-6)


def test_the_state_changes_the_action() -> None:
    """Memory is real: the same observation after different pasts gives different actions."""
    actor = _policy(GRU).deterministic_actor()
    obs = torch.randn(1, OBS)
    with torch.no_grad():
        a0, h1 = actor(obs, actor.initial_state(1))
        a1, _ = actor(obs, h1)
    assert not torch.allclose(a0, a1, atol=1e-4)


@pytest.mark.parametrize("cfg", [GRU, HISTORY], ids=["gru", "history"])
def test_exported_policy_with_memory_matches_torch_over_200_step_episodes(cfg: PolicyConfig, tmp_path: Path) -> None:
    policy = _policy(cfg)
    actor = policy.deterministic_actor()
    specs = (
        SpaceSpec.unnamed("obs", OBS),
        SpaceSpec(tuple(f"a{i}" for i in range(ACT)), (-1.0,) * ACT, (1.0,) * ACT, ("",) * ACT),
    )
    metadata = PolicyMetadata(*specs, 0.01, "test/task", "c", "g", memory=policy.memory)
    path = export_onnx(actor, metadata, tmp_path / "policy.onnx")
    model = onnx.load(str(path))
    assert [i.name for i in model.graph.input] == ["obs", "h_in"]
    assert [o.name for o in model.graph.output] == ["action", "h_out"]
    if cfg.memory == "gru":
        assert "GRU" in [n.op_type for n in model.graph.node]  # one ONNX GRU node, as firmware export reads it
    artifact = PolicyArtifact.from_props(read_metadata(path))
    assert artifact.memory == policy.memory and artifact.memory.size == policy.state_size
    obs, starts = _episodes()
    assert onnx_episode_parity(actor, path, obs, starts) < 1e-4


def test_export_refuses_a_memory_size_the_policy_does_not_have(tmp_path: Path) -> None:
    policy = _policy(GRU)
    specs = SpaceSpec.unnamed("obs", OBS), SpaceSpec.unnamed("action", ACT)
    memory = replace(policy.memory, size=policy.state_size + 1)
    with pytest.raises(ValueError, match=r"must be the actor.s state"):
        export_onnx(
            policy.deterministic_actor(),
            PolicyMetadata(*specs, 0.01, "t", "c", "g", memory=memory),
            tmp_path / "p.onnx",
        )
