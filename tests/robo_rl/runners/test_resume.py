"""Resuming from a checkpoint continues bit-for-bit; checkpoints are atomic; the run directory's files."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import matplotlib.image
import pytest
import torch
import yaml

from robo_rl.api.configs import preset
from robo_rl.build import build_runner
from robo_rl.config import load_yaml, to_dict
from robo_rl.experiment import ExperimentConfig, PolicyConfig, TaskConfig
from robo_rl.provenance import git_hash
from robo_rl.runners.on_policy import OnPolicyRunner
from robo_rl.runners.run_dir import RunDirectory
from robo_rl.sim import make
from robo_rl.storage import checkpoint

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _config(max_iterations: int) -> ExperimentConfig:
    base = preset("pendulum_ppo")
    return replace(
        base,
        task=TaskConfig(name="pendulum", num_envs=64),
        policy=PolicyConfig(actor_hidden=(32, 32), critic_hidden=(32, 32)),
        ppo=replace(base.ppo, num_steps=8),
        runner=replace(base.runner, loop=replace(base.runner.loop, max_iterations=max_iterations, target_return=None)),
    )


def _runner(max_iterations: int, run: RunDirectory | None = None) -> OnPolicyRunner:
    return build_runner(_config(max_iterations), make, run=run, evaluate=False)


def _create_run(root: Path, cfg: ExperimentConfig) -> RunDirectory:
    return RunDirectory.create(root, cfg.name, cfg.seed, yaml.safe_dump(to_dict(cfg), sort_keys=False), "pytest")


def _assert_states_equal(a: Any, b: Any, where: str = "state") -> None:
    """Recursive torch.equal over nested dicts/lists of tensors and plain values."""
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b), where
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for key in a:
            _assert_states_equal(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_states_equal(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


@pytest.fixture(scope="module")
def resumed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """4 iterations in one go, and 2 + checkpoint + fresh runner + 2 more, into a real run directory."""
    straight = _runner(4)
    straight.learn()

    root = tmp_path_factory.mktemp("runs")
    run = _create_run(root, _config(2))
    first = _runner(2, run)
    first.learn()
    second = _runner(4, RunDirectory.open(run.path))
    second.load(run.latest_checkpoint)
    second.run.truncate_metrics(second.iteration)
    resumed_at = second.iteration
    second.learn()
    return {"straight": straight, "first": first, "second": second, "run": run, "resumed_at": resumed_at}


def test_resume_gives_bitwise_identical_training(resumed: dict[str, Any]) -> None:
    straight, second = resumed["straight"], resumed["second"]
    assert resumed["resumed_at"] == 2
    assert straight.iteration == second.iteration == 4
    assert straight.env_steps == second.env_steps == 4 * 8 * 64
    for (name, a), (_, b) in zip(straight.policy.state_dict().items(), second.policy.state_dict().items(), strict=True):
        assert torch.equal(a, b), f"{name} differs after resuming"
    # Everything else that continues the stream: optimizer, LR, obs, env, tracker, RNG (wall time differs).
    state, other = straight.state_dict(), second.state_dict()
    assert state.pop("wall_time") > 0 and other.pop("wall_time") > 0
    _assert_states_equal(state, other)


def test_resume_trained_something(resumed: dict[str, Any]) -> None:
    """Guards the test above against comparing two untouched networks."""
    fresh = _runner(4)
    trained = resumed["straight"].policy.state_dict()
    changed = [k for k, v in fresh.policy.state_dict().items() if not torch.equal(v, trained[k])]
    assert "log_std" in changed and "actor.0.weight" in changed and "obs_normalizer.mean" in changed


def test_resumed_run_directory_has_one_metrics_row_per_iteration(resumed: dict[str, Any]) -> None:
    run: RunDirectory = resumed["run"]
    rows = run.metrics()
    assert [r["iteration"] for r in rows] == [1, 2, 3, 4]
    assert [r["env_steps"] for r in rows] == [512, 1024, 1536, 2048]
    assert all(r["eval_return"] is None for r in rows)  # evaluation was off
    assert rows[-1]["wall_time"] >= rows[1]["wall_time"] > 0  # summed across the resume


def test_learning_curve_png_is_valid_after_learn(resumed: dict[str, Any]) -> None:
    curve = resumed["run"].path / "learning_curve.png"
    assert curve.read_bytes()[:8] == PNG_MAGIC
    image = matplotlib.image.imread(curve)
    assert image.shape[:2] == (280, 800)  # one panel (reward per step): no evaluation, no episode ended
    assert not list(resumed["run"].path.glob("*.tmp*"))


def test_run_directory_has_tensorboard_events(resumed: dict[str, Any]) -> None:
    events = list((resumed["run"].path / "tb").glob("events.out.tfevents.*"))
    assert events and all(e.stat().st_size > 0 for e in events)


def test_build_runner_seeds_policy_initialization() -> None:
    """Same config, same seed: same initial network, whatever the global RNG did before."""
    cfg = _config(1)
    torch.manual_seed(123)
    a = build_runner(cfg, make, evaluate=False).policy.state_dict()
    torch.manual_seed(456)
    b = build_runner(cfg, make, evaluate=False).policy.state_dict()
    _assert_states_equal(a, b, "initial policy")


def _policy_state() -> dict[str, Any]:
    runner = _runner(1)
    return {"policy": runner.policy.state_dict(), "iteration": 7, "nested": {"rng": torch.get_rng_state()}}


def test_checkpoint_round_trip(tmp_path: Path) -> None:
    state = _policy_state()
    path = tmp_path / "ckpt" / "latest.pt"  # the parent directory is created
    checkpoint.save_atomic(state, path)
    _assert_states_equal(state, checkpoint.load(path))
    assert [p.name for p in path.parent.iterdir()] == ["latest.pt"]  # no temporary files left behind


class _Unpicklable:
    def __reduce__(self) -> Any:
        raise RuntimeError("simulated crash while writing")


def test_interrupted_write_keeps_previous_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "latest.pt"
    checkpoint.save_atomic({"iteration": 1, "w": torch.arange(4.0)}, path)
    before = path.read_bytes()
    with pytest.raises(RuntimeError, match="simulated crash"):
        checkpoint.save_atomic({"iteration": 2, "w": torch.zeros(4), "bad": _Unpicklable()}, path)
    assert path.read_bytes() == before
    loaded = checkpoint.load(path)
    assert loaded["iteration"] == 1 and torch.equal(loaded["w"], torch.arange(4.0))
    assert [p.name for p in tmp_path.iterdir()] == ["latest.pt"]


def test_interrupted_first_write_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError):
        checkpoint.save_atomic({"bad": _Unpicklable()}, tmp_path / "latest.pt")
    assert list(tmp_path.iterdir()) == []


def test_run_directory_config_and_meta(tmp_path: Path) -> None:
    cfg = replace(_config(3), seed=17)
    run = _create_run(tmp_path, cfg)
    assert run.path.parent == tmp_path / cfg.name
    assert re.fullmatch(r"\d{8}-\d{6}-seed17", run.path.name)
    assert load_yaml(ExperimentConfig, run.config_file) == cfg
    meta = json.loads((run.path / "meta.json").read_text())
    assert meta["seed"] == 17
    assert meta["git_hash"] == git_hash()
    assert re.fullmatch(r"[0-9a-f]{40}(-dirty)?|unknown", meta["git_hash"])
    assert meta["command"] == "pytest"
    assert run.meta() == meta
    # A second run created in the same second gets its own directory.
    other = _create_run(tmp_path, cfg)
    assert other.path != run.path and other.path.is_dir()


def test_run_directory_open_requires_config(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not a run directory"):
        RunDirectory.open(tmp_path)


def _log_rows(run: RunDirectory, iterations: range) -> None:
    for i in iterations:
        run.log({"iteration": i, "env_steps": 100 * i, "mean_return": -10.0 * i, "eval_return": None})


def test_metrics_rows_truncate_and_half_written_line(tmp_path: Path) -> None:
    run = _create_run(tmp_path, _config(3))
    assert run.metrics() == []
    _log_rows(run, range(1, 6))
    rows = run.metrics()
    assert [r["iteration"] for r in rows] == [1, 2, 3, 4, 5]
    assert rows[2] == {"iteration": 3, "env_steps": 300, "mean_return": -30.0, "eval_return": None}

    run.truncate_metrics(3)
    assert [r["iteration"] for r in run.metrics()] == [1, 2, 3]

    # A crash mid-write leaves a partial last line: it is skipped, and truncating (as --resume does) removes it
    # so that the next row is not glued onto it.
    with open(run.path / "metrics.jsonl", "a") as f:
        f.write('{"iteration": 4, "env_st')
    assert [r["iteration"] for r in run.metrics()] == [1, 2, 3]
    run.truncate_metrics(3)
    _log_rows(run, range(4, 5))
    assert [r["iteration"] for r in run.metrics()] == [1, 2, 3, 4]
    run.close()
