"""FQL: the one-step policy distills the flow and climbs Q; its export runs in onnxruntime and as generated C."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from robo_rl.algorithms.fql import FQL, FQLConfig
from robo_rl.envs import SpaceSpec
from robo_rl.export.onnx import PolicyMetadata, export_onnx, onnx_parity
from robo_rl.firmware_export.build import build_host
from robo_rl.firmware_export.codegen import generate_c
from robo_rl.firmware_export.onnx_reader import load_policy
from robo_rl.storage.replay import Transitions

SMALL = FQLConfig(actor_hidden=(32, 32), flow_hidden=(32, 32), critic_hidden=(32, 32), flow_steps=4)


def _batch(n: int, obs_dim: int, action: torch.Tensor, reward: torch.Tensor) -> Transitions:
    obs = torch.randn(n, obs_dim)
    flags = torch.zeros(n, dtype=torch.bool)
    return Transitions(
        obs=obs,
        critic_obs=obs,
        actions=action,
        rewards=reward,
        costs=torch.zeros_like(reward),
        next_obs=obs,
        next_critic_obs=obs,
        terminated=torch.ones(n, dtype=torch.bool),
        truncated=flags,
        intervened=flags,
        is_demo=~flags,
    )


def test_updates_pull_the_one_step_policy_toward_higher_q_and_report_losses() -> None:
    torch.manual_seed(0)
    fql = FQL(3, 3, -torch.ones(1), torch.ones(1), SMALL)
    # one-step episodes whose reward is the action itself: the best action is +1
    actions = torch.rand(512, 1) * 2 - 1
    batch = _batch(512, 3, actions, actions[:, 0])
    before = float(fql.act(batch.obs, deterministic=True).mean())
    for _ in range(300):
        metrics = fql.update(batch)
    after = float(fql.act(batch.obs, deterministic=True).mean())
    assert set(metrics) == {"critic_loss", "flow_loss", "distill_loss", "q_loss"}
    assert after > before + 0.3 and after > 0.4
    critic_only = FQL(3, 3, -torch.ones(1), torch.ones(1), SMALL)
    frozen = [p.clone() for p in critic_only.actor.parameters()]
    critic_only.update(batch, update_actor=False)
    assert all(torch.equal(a, b) for a, b in zip(frozen, critic_only.actor.parameters(), strict=True))


def test_export_matches_torch_in_onnxruntime_and_generated_c(tmp_path: Path) -> None:
    torch.manual_seed(0)
    low, high = torch.tensor([-2.0, 0.0]), torch.tensor([2.0, 1.0])
    fql = FQL(4, 4, low, high, SMALL)
    obs = torch.randn(32, 4)
    actor = fql.actor.deterministic_actor().eval()
    with torch.no_grad():
        torch.testing.assert_close(actor(obs), fql.actor.scaler(fql.act(obs, deterministic=True)))
    metadata = PolicyMetadata(
        SpaceSpec(("a", "b", "c", "d"), (-5.0,) * 4, (5.0,) * 4, ("m",) * 4),
        SpaceSpec(("u", "v"), (-2.0, 0.0), (2.0, 1.0), ("N", "N")),
        0.05,
        "toy",
        "cfg",
        "git",
    )
    path = export_onnx(actor, metadata, tmp_path / "fql.onnx")
    assert onnx_parity(actor, path, obs) < 1e-5
    host = build_host(generate_c(load_policy(path)), tmp_path / "c")
    got, _status = host(obs.numpy().astype(np.float32))
    with torch.no_grad():
        expected = actor(obs).numpy()
    assert float(np.abs(got - expected).max()) < 1e-5


def test_fine_tuning_a_half_cloned_flow_policy_raises_success_on_the_multimodal_task(tmp_path: Path) -> None:
    from robo_rl.api.configs import resolve_config
    from robo_rl.api.envs import env_factory
    from robo_rl.build import build_runner
    from robo_rl.cli.main import main

    demos = tmp_path / "demos.npz"
    assert main(["record-demos", "point/obstacle", "--episodes", "10", "-o", str(demos)]) == 0
    overrides = [
        f"off_policy.prior_buffer={demos}",
        "off_policy.bc_pretrain_steps=1200",  # short of the 2,000 that clone the expert fully
        "off_policy.loop.max_iterations=300",
        "off_policy.loop.eval_interval=0",
        "off_policy.loop.eval_episodes=100",
        "off_policy.loop.target_success_rate=null",
    ]
    runner = build_runner(resolve_config("point_obstacle_fql", overrides), env_factory())
    before = runner.evaluate()
    result = runner.learn()
    after = result.final_eval
    assert after is not None
    assert before.success_rate <= 0.7
    assert after.success_rate >= max(0.8, before.success_rate + 0.25)
    assert after.mean_return > before.mean_return
