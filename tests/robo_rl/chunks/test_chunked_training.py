"""A chunked policy end to end: PPO trains it on the chunk env unchanged, it exports as a chunked artifact (one
step's spec + H, schema 2) with onnxruntime parity, and the deploy runtime reads its chunks."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from robo_rl.api.configs import preset
from robo_rl.build import build_runner
from robo_rl.chunks.env import ChunkEnv, action_chunking
from robo_rl.export.onnx import PolicyMetadata, export_onnx, onnx_parity, read_metadata
from robo_rl.real.runtime import PolicyRuntime
from robo_rl.sim import make

HORIZON, EXECUTE = 4, 2


def chunked_pendulum(
    name: str,
    num_envs: int,
    device: str = "cpu",
    seed: int | None = None,
    params: Sequence[str] = (),
    config: Any = None,
) -> ChunkEnv:
    return ChunkEnv(make(name, num_envs, device, seed, params, config), HORIZON, EXECUTE)


def test_ppo_trains_on_the_chunk_env_and_the_run_exports_a_chunked_artifact(tmp_path: Path) -> None:
    base = preset("pendulum_ppo")
    cfg = replace(
        base,
        task=replace(base.task, num_envs=16),
        ppo=replace(base.ppo, num_steps=8),
        runner=replace(
            base.runner, loop=replace(base.runner.loop, max_iterations=2, eval_interval=0, target_return=None)
        ),
    )
    runner = build_runner(cfg, chunked_pendulum, evaluate=False)
    before = [p.detach().clone() for p in runner.policy.parameters()]
    result = runner.learn()
    assert result.iterations == 2 and runner.env_steps == 2 * 8 * 16  # macro steps
    assert any(not torch.equal(a, b) for a, b in zip(before, runner.policy.parameters(), strict=True))
    chunking = action_chunking(runner.env)
    step = make("pendulum", num_envs=1)
    assert (chunking.step_action, chunking.step_dt, chunking.horizon) == (step.action_spec, step.dt, HORIZON)

    actor = runner.policy.deterministic_actor()
    metadata = PolicyMetadata(
        step.obs_spec, chunking.step_action, chunking.step_dt, "pendulum", "c" * 16, "g", action_chunk=HORIZON
    )
    path = export_onnx(actor, metadata, tmp_path / "policy.onnx")
    obs = torch.randn(256, step.obs_spec.dim) * 3
    assert onnx_parity(actor, path, obs) < 1e-5
    props = read_metadata(path)
    assert props["robo_rl.schema"] == "2" and props["robo_rl.action_chunk"] == str(HORIZON)
    assert json.loads(props["robo_rl.action_names"]) == list(step.action_spec.names)
    assert float(props["robo_rl.dt"]) == step.dt  # one step's period, not the macro step's

    runtime = PolicyRuntime(path)
    assert (runtime.action_chunk, runtime.action_dim) == (HORIZON, 1)
    with torch.no_grad():
        expected = actor(obs[:1]).numpy().reshape(HORIZON, 1)
    np.testing.assert_allclose(runtime.chunk(obs[0].numpy()), expected, atol=1e-5)

    with pytest.raises(ValueError, match=r"outputs 4 values, its metadata describes 1 actions"):
        export_onnx(actor, replace(metadata, action_chunk=1), tmp_path / "wrong.onnx")
    assert not (tmp_path / "wrong.onnx").exists()


def test_robo_rl_train_with_task_action_chunk_makes_a_chunked_run_that_exports_and_evaluates(tmp_path: Path) -> None:
    """`--set task.action_chunk=4 --set task.chunk_execute=2`: the run trains on the chunk env, `robo-rl export`
    writes a chunked artifact (one step's names and dt, H, schema 2) and `robo-rl eval --onnx` runs it."""
    from robo_rl.cli.main import main

    flags = ["--set", "task.action_chunk=4", "--set", "task.chunk_execute=2", "--set", "task.num_envs=16"]
    assert main(["train", "pendulum_ppo", *flags, "--max-iterations", "2", "--runs-root", str(tmp_path)]) == 0
    run = next((tmp_path / "pendulum_ppo").iterdir())
    assert main(["export", str(run)]) == 0
    props = read_metadata(run / "policy.onnx")
    step = make("pendulum", num_envs=1)
    assert props["robo_rl.schema"] == "2" and props["robo_rl.action_chunk"] == "4"
    assert json.loads(props["robo_rl.action_names"]) == list(step.action_spec.names)
    assert float(props["robo_rl.dt"]) == pytest.approx(step.dt)
    assert main(["eval", str(run), "--onnx", "--episodes", "4"]) == 0
    assert PolicyRuntime(run / "policy.onnx").chunk(np.zeros(step.obs_spec.dim, dtype=np.float32)).shape == (4, 1)


def test_a_chunk_longer_than_its_horizon_is_refused() -> None:
    from robo_rl.experiment import TaskConfig

    with pytest.raises(ValueError, match="executed actions per chunk"):
        TaskConfig(action_chunk=2, chunk_execute=3)
