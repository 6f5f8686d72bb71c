"""`robo-rl train --algo sac|td3`: run directory, checkpoint, export and evaluation work as for PPO."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from robo_rl.cli.main import main
from robo_rl.config import load_yaml
from robo_rl.experiment import ExperimentConfig


def _run(argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(argv) == 0
    return out.getvalue()


def _mean_return(text: str) -> float:
    match = re.search(r"return (-?\d+\.\d)", text)
    assert match, text
    return float(match.group(1))


@pytest.mark.parametrize("algo", ["sac", "td3"])
def test_train_export_eval_with_off_policy_algorithm(algo: str, tmp_path: Path) -> None:
    _run(
        [
            "train",
            "--algo",
            algo,
            "--max-iterations",
            "300",
            "--set",
            "off_policy.learning_starts=100",
            "--set",
            "off_policy.loop.eval_interval=0",
            "--runs-root",
            str(tmp_path),
            "--quiet",
        ]
    )
    (run,) = (tmp_path / f"pendulum_{algo}").iterdir()
    cfg = load_yaml(ExperimentConfig, run / "config.yaml")
    assert cfg.algo == algo and cfg.off_policy.loop.max_iterations == 300 and cfg.runner == ExperimentConfig().runner
    assert (run / "checkpoints" / "latest.pt").is_file() and (run / "learning_curve.png").is_file()
    assert "(ok)" in _run(["export", str(run)])
    torch_eval = _run(["eval", str(run), "--episodes", "4"])
    onnx_eval = _run(["eval", str(run), "--episodes", "4", "--onnx"])
    assert _mean_return(torch_eval) == _mean_return(onnx_eval)


def test_algo_switches_the_default_preset(tmp_path: Path) -> None:
    _run(["train", "--algo", "td3", "--max-iterations", "5", "--runs-root", str(tmp_path), "--quiet"])
    (run,) = (tmp_path / "pendulum_td3").iterdir()
    assert load_yaml(ExperimentConfig, run / "config.yaml").td3.actor_hidden == (64, 64)  # the preset's, not default


def test_algo_without_a_pendulum_preset_names_its_presets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train", "--algo", "dsrl", "--runs-root", str(tmp_path), "--quiet"]) == 2
    assert "--algo dsrl without CONFIG: there is no pendulum_dsrl preset; give a CONFIG (point_obstacle_dsrl)" in (
        capsys.readouterr().err
    )
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


def test_collect_then_train_with_the_demonstrations(tmp_path: Path) -> None:
    _run(["train", "--algo", "td3", "--max-iterations", "5", "--runs-root", str(tmp_path / "expert"), "--quiet"])
    (expert,) = (tmp_path / "expert" / "pendulum_td3").iterdir()
    demos = tmp_path / "demos.pt"
    out = _run(["collect", str(expert), "--transitions", "400", "--envs", "4", "--noise", "0.1", "-o", str(demos)])
    assert "wrote 400 transitions" in out and "off_policy.prior_buffer=" in out
    argv = ["train", "--algo", "sac", "--max-iterations", "5", "--runs-root", str(tmp_path / "rlpd"), "--quiet"]
    _run([*argv, "--set", f"off_policy.prior_buffer={demos}", "--set", "off_policy.learning_starts=0"])
    (run,) = (tmp_path / "rlpd" / "pendulum_sac").iterdir()
    assert load_yaml(ExperimentConfig, run / "config.yaml").off_policy.prior_buffer == str(demos)
    assert re.search(r"success rate \d+\.\d%", _run(["eval", str(run), "--episodes", "3"]))


def test_collect_rejects_bad_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _run(["train", "--algo", "td3", "--max-iterations", "2", "--runs-root", str(tmp_path), "--quiet"])
    (run,) = (tmp_path / "pendulum_td3").iterdir()
    assert main(["collect", str(run), "--envs", "0"]) == 2
    assert main(["collect", str(run), "--transitions", "0"]) == 2
    assert main(["collect", str(run), "--noise", "-1"]) == 2
    assert "error: " in capsys.readouterr().err


def test_a_camera_run_exports_and_evaluates_the_same_in_onnxruntime(tmp_path: Path) -> None:
    """`eval --onnx` feeds a camera policy its state and each camera's uint8 frames (`robo_rl.export.camera`'s
    inputs); its returns equal the torch policy's on the same episodes."""
    settings = ["off_policy.learning_starts=40", "off_policy.batch_size=16", "off_policy.loop.eval_interval=0"]
    settings += ["sac.actor_hidden=[32]", "sac.critic_hidden=[32]", "sac.encoder.channels=8", "task.image_size=16"]
    argv = ["train", "double_integrator_pixels_sac", "--max-iterations", "60", "--runs-root", str(tmp_path), "--quiet"]
    _run(argv + [arg for setting in settings for arg in ("--set", setting)])
    (run,) = (tmp_path / "double_integrator_pixels_sac").iterdir()
    assert "(ok)" in _run(["export", str(run)])
    torch_eval = _run(["eval", str(run), "--episodes", "8"])
    onnx_eval = _run(["eval", str(run), "--episodes", "8", "--onnx"])
    assert "onnxruntime" in onnx_eval and _mean_return(torch_eval) == _mean_return(onnx_eval)
