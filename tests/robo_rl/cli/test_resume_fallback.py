"""`robo-rl train --resume` with a damaged checkpoints/latest.pt: previous.pt and one warning line; with both
damaged: one error line naming both files, exit code 2."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from robo_rl.cli.main import main

TRAIN = [
    "train",
    "pendulum_ppo",
    "--num-envs",
    "16",
    "--quiet",
    "--set",
    "runner.loop.target_return=null",
    "--set",
    "runner.loop.eval_interval=0",
    "--set",
    "runner.loop.eval_episodes=2",
    "--set",
    "runner.loop.save_every_s=1e-9",  # latest.pt after every iteration
]


def _main(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    return code, err.getvalue()


@pytest.fixture
def run(tmp_path: Path) -> Path:
    code, err = _main([*TRAIN, "--max-iterations", "3", "--runs-root", str(tmp_path)])
    assert code == 0, err
    (path,) = (tmp_path / "pendulum_ppo").iterdir()
    return path


def _iterations(run: Path) -> list[int]:
    return [json.loads(line)["iteration"] for line in (run / "metrics.jsonl").read_text().splitlines()]


def test_truncated_latest_resumes_from_previous_with_one_warning(run: Path) -> None:
    latest = run / "checkpoints" / "latest.pt"
    latest.write_bytes(latest.read_bytes()[:1000])
    code, err = _main(["train", "--resume", str(run), "--max-iterations", "5", "--quiet"])
    assert code == 0, err
    assert err.count("\n") == 1 and err.startswith("robo-rl train: warning: ")
    assert f"{latest} is truncated or corrupt" in err and "previous.pt" in err
    assert _iterations(run) == [1, 2, 3, 4, 5]  # iteration 3's row went with latest.pt; 3 was trained again
    assert (run / "checkpoints" / "latest.pt.corrupt").is_file()


def test_empty_latest_and_truncated_previous_is_one_error_line(run: Path) -> None:
    latest, previous = run / "checkpoints" / "latest.pt", run / "checkpoints" / "previous.pt"
    latest.write_bytes(b"")
    previous.write_bytes(previous.read_bytes()[:1000])
    code, err = _main(["train", "--resume", str(run), "--quiet"])
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{latest} is empty (0 bytes)" in err and f"{previous} is truncated or corrupt" in err
