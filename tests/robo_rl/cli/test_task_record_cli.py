"""`robo-rl train` records what the task resolved to (RUN/task.yaml); export and eval read the specs from there,
export writes the resolved config into policy.onnx, and the config hash covers it."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import onnx
import pytest
import yaml

import robo_rl.api.runs
from robo_rl.cli.main import main
from robo_rl.config import config_hash, load_yaml
from robo_rl.experiment import ExperimentConfig
from robo_rl.task_record import TASK_FILE


def _cli(argv: list[str]) -> str:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    assert code == 0, f"{argv}: {err.getvalue()}"
    return out.getvalue()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    tiny = ["--set", "runner.loop.eval_interval=0", "--set", "runner.loop.eval_episodes=1", "--quiet"]
    _cli(["train", "--max-iterations", "1", "--num-envs", "4", "--runs-root", str(root), *tiny,
          "--set", "task.max_torque=2.5"])  # fmt: skip
    return next((root / "pendulum_ppo").iterdir())


def _no_simulator(*args: object, **kwargs: object) -> None:
    raise AssertionError("the simulator was rebuilt")


def test_the_run_records_the_resolved_task_config_and_specs(run: Path) -> None:
    record = yaml.safe_load((run / TASK_FILE).read_text())
    assert record["name"] == "pendulum"
    assert record["config"]["max_torque"] == 2.5  # the task shorthand applied
    assert record["config"]["max_speed"] == 8.0  # a default, recorded too
    assert record["specs"]["action"] == {"names": ["torque"], "low": [-2.5], "high": [2.5], "units": ["N*m"]}
    assert record["specs"]["dt"] == 0.05 and record["specs"]["critic_obs_dim"] == 3


def test_export_reads_the_recorded_specs_and_writes_the_task_config(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(robo_rl.api.runs, "make_env", _no_simulator)
    _cli(["export", str(run)])
    props = {p.key: p.value for p in onnx.load(run / "policy.onnx").metadata_props}
    record = yaml.safe_load((run / TASK_FILE).read_text())
    assert json.loads(props["robo_rl.task_config"]) == record["config"]
    assert json.loads(props["robo_rl.action_high"]) == [2.5]
    cfg = load_yaml(ExperimentConfig, run / "config.yaml")
    assert props["robo_rl.config_hash"] == config_hash(cfg, record["config"]) != config_hash(cfg)


def test_a_run_without_a_record_rebuilds_its_task_to_export(run: Path, tmp_path: Path) -> None:
    old = tmp_path / "old_run"
    shutil.copytree(run, old)
    (old / TASK_FILE).unlink()
    (old / "policy.onnx").unlink(missing_ok=True)
    _cli(["export", str(old)])
    props = {p.key: p.value for p in onnx.load(old / "policy.onnx").metadata_props}
    assert json.loads(props["robo_rl.task_config"])["max_torque"] == 2.5
