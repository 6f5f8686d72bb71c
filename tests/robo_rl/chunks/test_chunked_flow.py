"""A flow policy that outputs action chunks: cloned on chunked demonstrations of the multimodal point/obstacle
task, it passes the obstacle through the chunk env, and its export is a chunked artifact that onnxruntime and the
generated C agree on."""

from __future__ import annotations

from pathlib import Path

import torch

from robo_rl.chunks.demos import chunk_demos
from robo_rl.chunks.env import ChunkEnv
from robo_rl.export.onnx import PolicyMetadata, export_onnx, onnx_parity, read_metadata
from robo_rl.hil.demos import load_demos
from robo_rl.modules.flow import FlowPolicy
from robo_rl.runners.evaluate import evaluate
from robo_rl.sim import make

HORIZON = 4


def _clone(demos_path: Path, env: ChunkEnv, steps: int = 1500) -> FlowPolicy:
    chunked = chunk_demos(load_demos(demos_path, env.env), HORIZON)
    obs, actions = chunked.transitions.obs, chunked.transitions.actions
    torch.manual_seed(0)
    flow = FlowPolicy(
        env.obs_spec.dim, env.action_spec.low_tensor(), env.action_spec.high_tensor(), (128, 128), steps=4
    )
    flow.fit_action_standardization(actions)
    optimizer = torch.optim.Adam(flow.parameters(), lr=1e-3)
    for _ in range(steps):
        batch = torch.randint(len(obs), (256,))
        loss = flow.bc_loss(obs[batch], actions[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return flow


def test_a_chunked_flow_clones_the_expert_and_exports_its_chunks(tmp_path: Path) -> None:
    from robo_rl.cli.main import main

    demos = tmp_path / "demos.npz"
    assert main(["record-demos", "point/obstacle", "--episodes", "10", "-o", str(demos)]) == 0
    env = ChunkEnv(make("point/obstacle", num_envs=200, seed=1), HORIZON)
    flow = _clone(demos, env)
    actor = flow.deterministic_actor().eval()
    result = evaluate(env, actor, seed=5)
    assert result.success_rate is not None and result.success_rate >= 0.8  # chunks of 4 pass the obstacle
    step = env.env
    metadata = PolicyMetadata(
        step.obs_spec, step.action_spec, step.dt, "point/obstacle", "h", "g", action_chunk=HORIZON
    )
    path = export_onnx(actor, metadata, tmp_path / "policy.onnx")
    obs = torch.randn(64, step.obs_spec.dim)
    assert onnx_parity(actor, path, obs) < 1e-5 and read_metadata(path)["robo_rl.action_chunk"] == str(HORIZON)
    # a K-step flow goes to C through its parts (robo_rl.flow.* metadata); --verify compares it with onnxruntime
    assert main(["export", str(path), "--target", "c", "--verify", "-o", str(tmp_path / "c")]) == 0
    header = next((tmp_path / "c").rglob("*.h")).read_text()
    assert f"ACTION_CHUNK {HORIZON}" in header
