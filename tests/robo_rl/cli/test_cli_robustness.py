"""Bad input fails with one line and leaves nothing behind; Ctrl-C during training loses nothing."""

from __future__ import annotations

import contextlib
import io
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from robo_rl.cli.main import main

ROBO_RL = str(Path(sys.executable).with_name("robo-rl"))


def _run(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    return code, err.getvalue()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--num-envs", "0"], "task: num_envs must be between 1 and 1,048,576 (2**20), got 0"),
        (["--set", "ppo.gamma=1.5"], "ppo: gamma must lie in [0, 1], got 1.5"),
        (["--set", "ppo.num_minibatches=0"], "ppo: num_minibatches must be at least 1, got 0"),
        (["--set", "runner.loop.eval_episodes=0"], "runner.loop: eval_episodes must be at least 1, got 0"),
        (["--set", "task.name=no_such_task"], "unknown task 'no_such_task'"),
        (["--device", "cuda:x"], "task.device: 'cuda:x' is not a torch device"),
        (["missing_file.yaml"], "missing_file.yaml: cannot read"),
    ],
)
def test_bad_input_is_one_line_and_creates_no_run(args: list[str], expected: str, tmp_path: Path) -> None:
    code, err = _run(["train", *args, "--runs-root", str(tmp_path / "runs"), "--quiet"])
    assert code == 2
    assert err.count("\n") == 1 and expected in err, err
    assert not (tmp_path / "runs").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without CUDA")
def test_cuda_request_without_cuda_is_a_clear_error(tmp_path: Path) -> None:
    code, err = _run(["train", "--device", "cuda", "--runs-root", str(tmp_path), "--quiet"])
    assert code == 2 and "CUDA is not available" in err and err.count("\n") == 1


def _metrics_rows(run: Path) -> list[dict]:
    path = run / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _wait_for_run_dir(root: Path, proc: subprocess.Popen, timeout: float, rows: int = 3) -> Path:
    """The run directory once its config is written and `rows` iterations are logged."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        runs = list(root.glob("pendulum_ppo/*"))
        if runs and (runs[0] / "config.yaml").is_file() and len(_metrics_rows(runs[0])) >= rows:
            return runs[0]
        time.sleep(0.01)
    proc.kill()
    raise AssertionError(f"training did not log {rows} iterations in {timeout} s: {proc.communicate()}")


def test_ctrl_c_saves_a_checkpoint_and_resume_continues(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    train = [ROBO_RL, "train", "--num-envs", "16", "--max-iterations", "100000", "--runs-root", str(root)]
    train += ["--set", "runner.loop.target_return=null", "--set", "runner.loop.eval_interval=0", "--quiet"]
    proc = subprocess.Popen(train, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    run = _wait_for_run_dir(root, proc, timeout=120)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert f"robo-rl train --resume {run}\n" in out  # one line, so it can be copied from a log
    saved = torch.load(run / "checkpoints" / "latest.pt", weights_only=False)
    logged = len(_metrics_rows(run))
    assert saved["iteration"] >= logged >= 3  # nothing logged is missing from the checkpoint

    resume = [ROBO_RL, "train", "--resume", str(run), "--max-iterations", str(saved["iteration"] + 2), "--quiet"]
    subprocess.run(resume, check=True, capture_output=True, timeout=120)
    iterations = [row["iteration"] for row in _metrics_rows(run)]
    assert iterations == list(range(1, saved["iteration"] + 3))


@pytest.mark.parametrize(("stop", "logged"), [(signal.SIGTERM, 0), (signal.SIGINT, 3)])
def test_a_stop_signal_ends_the_run_as_its_end_would(stop: signal.Signals, logged: int, tmp_path: Path) -> None:
    """SIGTERM before the first iteration, or SIGINT mid-run (what ros2 launch and robo-rl launch send): the run ends
    by itself with its checkpoint, learning curve and the policy.onnx that --export writes at a normal end. The
    deadline is generous (a loaded 2-core machine); bench/launch_stop.py measures the time."""
    root = tmp_path / "runs"
    train = [ROBO_RL, "train", "--num-envs", "16", "--max-iterations", "100000", "--runs-root", str(root), "--export"]
    train += ["--set", "runner.loop.target_return=null", "--set", "runner.loop.eval_interval=0", "--quiet"]
    proc = subprocess.Popen(train, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    run = _wait_for_run_dir(root, proc, timeout=120, rows=logged)
    proc.send_signal(stop)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert f"stopped by {stop.name}" in out and f"robo-rl train --resume {run}\n" in out
    assert "Traceback" not in err, err
    saved = torch.load(run / "checkpoints" / "latest.pt", weights_only=False)
    assert saved["iteration"] >= len(_metrics_rows(run)) >= logged
    assert (run / "policy.onnx").is_file() and (run / "learning_curve.png").is_file()
