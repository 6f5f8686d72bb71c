"""DSRL: SAC over the noise of a frozen bimodal flow policy picks the better mode and never averages the two."""

from __future__ import annotations

from pathlib import Path

import torch

from robo_rl.algorithms.dsrl import DSRLConfig, dsrl
from robo_rl.envs import SpaceSpec
from robo_rl.export.onnx import PolicyMetadata, export_onnx, onnx_parity
from robo_rl.hil.pretrain import behaviour_clone
from robo_rl.storage.replay import Transitions

SMALL = DSRLConfig(actor_hidden=(32, 32), flow_hidden=(64, 64), critic_hidden=(64, 64), flow_steps=8, init_alpha=0.01)


def _bandit(n: int, actions: torch.Tensor, is_demo: bool) -> Transitions:
    """One-step episodes from a constant observation whose reward is the action: +0.6 beats -0.6."""
    obs = torch.zeros(n, 2)
    flags = torch.zeros(n, dtype=torch.bool)
    return Transitions(
        obs=obs,
        critic_obs=obs,
        actions=actions,
        rewards=actions[:, 0],
        costs=torch.zeros_like(actions[:, 0]),
        next_obs=obs,
        next_critic_obs=obs,
        terminated=~flags,
        truncated=flags,
        intervened=flags,
        is_demo=flags | is_demo,
    )


def test_steering_picks_the_better_demonstrated_mode() -> None:
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(0)
    side = torch.randint(0, 2, (2000, 1), generator=generator) * 2.0 - 1.0
    demos = _bandit(2000, 0.6 * side + 0.03 * torch.randn(2000, 1, generator=generator), is_demo=True)
    steer = dsrl(2, 2, -torch.ones(1), torch.ones(1), SMALL)
    behaviour_clone(steer.actor, demos, steps=1500)
    flow_before = [p.clone() for p in steer.actor.flow.parameters()]
    before = steer.act(torch.zeros(1000, 2))[:, 0]
    assert 0.3 < float((before > 0).float().mean()) < 0.7  # the cloned flow plays both modes
    for _ in range(400):
        online = _bandit(256, steer.act(torch.zeros(256, 2)), is_demo=False)
        steer.update(online)
    after = steer.act(torch.zeros(1000, 2))[:, 0]
    assert float((after > 0).float().mean()) > 0.9  # steered to the rewarding mode
    assert float(((after.abs() - 0.6).abs() < 0.15).float().mean()) > 0.95  # ... and still on a mode, never 0
    assert all(torch.equal(a, b) for a, b in zip(flow_before, steer.actor.flow.parameters(), strict=True))


def test_export_matches_torch_in_onnxruntime(tmp_path: Path) -> None:
    torch.manual_seed(0)
    steer = dsrl(3, 3, torch.tensor([-2.0, 0.0]), torch.tensor([2.0, 1.0]), SMALL)
    obs = torch.randn(16, 3)
    actor = steer.actor.deterministic_actor().eval()
    with torch.no_grad():
        torch.testing.assert_close(actor(obs), steer.actor.scaler(steer.act(obs, deterministic=True)))
    metadata = PolicyMetadata(
        SpaceSpec(("a", "b", "c"), (-5.0,) * 3, (5.0,) * 3, ("m",) * 3),
        SpaceSpec(("u", "v"), (-2.0, 0.0), (2.0, 1.0), ("N", "N")),
        0.05,
        "toy",
        "cfg",
        "git",
    )
    path = export_onnx(actor, metadata, tmp_path / "dsrl.onnx")
    assert onnx_parity(actor, path, obs) < 1e-5
