"""The robo-rl command line: help, one-line config errors, train → resume → export → eval on a real run."""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
import torch

from robo_rl.api.configs import preset, preset_names, resolve_config, stale_preset_files
from robo_rl.cli.main import main
from robo_rl.config import load_yaml
from robo_rl.experiment import ExperimentConfig
from robo_rl.export.onnx import read_metadata
from robo_rl.sim.presets import all_presets

ROBO_RL = Path(sys.executable).with_name("robo-rl")


def _main(argv: list[str]) -> tuple[int, str, str]:
    """Run the CLI in-process; returns (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _eval_mean_return(stdout: str) -> float:
    match = re.search(r"return (-?\d+\.\d) ±", " ".join(stdout.split()))
    assert match, stdout
    return float(match.group(1))


@pytest.mark.parametrize(
    ("command", "options"),
    [
        ("train", ["--set", "--seed", "--num-envs", "--max-iterations", "--runs-root", "--resume", "--export"]),
        ("eval", ["--episodes", "--seed", "--checkpoint", "--onnx", "run_dir"]),
        ("export", ["--output", "--checkpoint", "run_dir"]),
        ("demo", ["--runs-root", "--seed", "--device", "--max-iterations"]),
    ],
)
def test_subcommand_help(command: str, options: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: robo-rl {command}")
    for option in options:
        assert option in out


def test_top_level_help_lists_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert all(command in out for command in ("train", "eval", "export", "demo"))


def test_unknown_config_key_is_one_stderr_line(tmp_path: Path) -> None:
    code, _, err = _main(["train", "--set", "ppo.lerning_rate=1", "--runs-root", str(tmp_path), "--quiet"])
    assert code == 2
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert "ppo.lerning_rate" in lines[0] and "learning_rate" in lines[0].split("ppo.lerning_rate", 1)[1]
    assert lines[0].startswith("robo-rl train: error: ")
    assert list(tmp_path.iterdir()) == []  # no run directory for a config that never resolved


def test_yaml_with_wrong_type_names_file_and_key(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("task:\n  num_envs: 8\nppo:\n  learning_rate: fast\n")
    code, _, err = _main(["train", str(config), "--runs-root", str(tmp_path / "runs"), "--quiet"])
    assert code == 2
    assert err.splitlines() == [f"robo-rl train: error: {config}: ppo.learning_rate: expected float, got str 'fast'"]


def test_installed_entry_point_reports_config_error_in_one_line(tmp_path: Path) -> None:
    proc = subprocess.run(
        [str(ROBO_RL), "train", "--set", "ppo.lerning_rate=1", "--runs-root", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert "ppo.lerning_rate" in lines[0]
    assert "Traceback" not in proc.stderr


def test_the_preset_files_are_current() -> None:
    """robo_rl/configs/*.yaml are written from the presets (`python -m robo_rl.api.configs --write`): only what
    differs from the defaults, one file per preset, none without one."""
    assert stale_preset_files() == [], "run python -m robo_rl.api.configs --write"


@pytest.mark.parametrize("name", preset_names())
def test_shipped_yaml_is_the_preset(name: str) -> None:
    """The file `robo-rl train NAME` reads gives the preset's typed config back, the task's settings included."""
    shipped = files("robo_rl") / "configs" / f"{name}.yaml"
    defined = all_presets()[name]()
    assert resolve_config(str(shipped), []) == resolve_config(name, []) == preset(name) == defined
    assert type(preset(name).task.config) is type(defined.task.config)


def test_every_task_folder_preset_has_its_file() -> None:
    assert sorted(all_presets()) == preset_names()


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """train 2 iterations, resume to 3, export: the CLI's whole life cycle on one run directory."""
    root = tmp_path_factory.mktemp("runs")
    train = ["train", "--max-iterations", "2", "--num-envs", "32", "--runs-root", str(root), "--quiet"]
    code, train_out, train_err = _main(train)
    assert code == 0, train_err
    (run,) = (root / "pendulum_ppo").iterdir()
    after_train = {
        "rows": [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()],
        "files": sorted(p.name for p in run.iterdir()),
        "meta": json.loads((run / "meta.json").read_text()),
    }
    resume_code, resume_out, resume_err = _main(["train", "--resume", str(run), "--max-iterations", "3", "--quiet"])
    export_code, export_out, export_err = _main(["export", str(run)])
    return {
        "run": run,
        "train_out": train_out,
        "after_train": after_train,
        "resume": (resume_code, resume_out, resume_err),
        "export": (export_code, export_out, export_err),
    }


def test_train_creates_run_directory(trained_run: dict[str, Any]) -> None:
    run: Path = trained_run["run"]
    assert {"config.yaml", "meta.json", "metrics.jsonl", "checkpoints", "learning_curve.png", "tb"} <= set(
        trained_run["after_train"]["files"]
    )
    assert (run / "checkpoints" / "latest.pt").is_file()
    assert [r["iteration"] for r in trained_run["after_train"]["rows"]] == [1, 2]
    assert trained_run["after_train"]["rows"][-1]["env_steps"] == 2 * 32 * preset("pendulum_ppo").ppo.num_steps
    assert (run / "learning_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert any((run / "tb").iterdir())
    cfg = load_yaml(ExperimentConfig, run / "config.yaml")
    assert cfg.task.num_envs == 32 and cfg.seed == 0
    assert trained_run["after_train"]["meta"]["seed"] == 0
    assert run.name in "".join(trained_run["train_out"].split())  # the run directory is printed


def test_meta_records_the_command_that_was_run(trained_run: dict[str, Any]) -> None:
    command = trained_run["after_train"]["meta"]["command"]
    assert "--max-iterations 2" in command and "--num-envs 32" in command


def test_resume_continues_to_iteration_3(trained_run: dict[str, Any]) -> None:
    code, _, err = trained_run["resume"]
    assert code == 0, err
    run: Path = trained_run["run"]
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == [1, 2, 3]
    assert rows[0] == trained_run["after_train"]["rows"][0]  # earlier rows untouched
    assert rows[2]["env_steps"] == 3 * 32 * preset("pendulum_ppo").ppo.num_steps
    assert load_yaml(ExperimentConfig, run / "config.yaml").runner.loop.max_iterations == 3


def test_resume_rejects_overrides(trained_run: dict[str, Any]) -> None:
    code, _, err = _main(["train", "--resume", str(trained_run["run"]), "--set", "seed=3", "--quiet"])
    assert code == 2
    assert len(err.splitlines()) == 1 and "--resume" in err


def test_export_writes_policy_onnx(trained_run: dict[str, Any]) -> None:
    code, out, err = trained_run["export"]
    assert code == 0, err
    path: Path = trained_run["run"] / "policy.onnx"
    assert path.is_file()
    assert "(ok)" in " ".join(out.split())
    # the policy of the best evaluation (checkpoints/best.pt), not the last iteration's
    best = torch.load(trained_run["run"] / "checkpoints" / "best.pt", weights_only=False)
    assert f"(iteration {best['iteration']})" in " ".join(out.split())
    meta = read_metadata(path)
    assert meta["robo_rl.git_hash"] == trained_run["after_train"]["meta"]["git_hash"]


def test_eval_torch_and_onnx_print_the_same_return(trained_run: dict[str, Any]) -> None:
    run = str(trained_run["run"])
    code_torch, out_torch, _ = _main(["eval", run, "--episodes", "5"])
    code_onnx, out_onnx, _ = _main(["eval", run, "--episodes", "5", "--onnx"])
    assert code_torch == code_onnx == 0
    assert "best.pt (torch)" in out_torch and "policy.onnx (onnxruntime)" in out_onnx
    assert "over 5 episodes" in " ".join(out_torch.split())
    assert _eval_mean_return(out_torch) == _eval_mean_return(out_onnx)


def test_eval_of_missing_run_is_one_line(tmp_path: Path) -> None:
    code, _, err = _main(["eval", str(tmp_path), "--episodes", "2"])
    assert code == 2
    assert len(err.splitlines()) == 1 and "not a run directory" in err
