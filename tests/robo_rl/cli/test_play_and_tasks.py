"""`robo-rl tasks` (registry listing) and `robo-rl play` (headless video of a trained run)."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path
from typing import Any

import imageio.v2 as imageio_v2
import imageio.v3 as iio
import numpy as np
import pytest

from robo_rl.cli.main import main
from robo_rl.sim import make, names


def _main(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_tasks_lists_every_registered_task_with_its_spec_sizes() -> None:
    code, out, _ = _main(["tasks", "--json"])
    assert code == 0
    described = {task["name"]: task for task in json.loads(out)}
    assert sorted(described) == names()
    for name in ("pendulum", "quadrotor/hover"):
        env = make(name, 1, seed=0)
        assert described[name]["obs"]["names"] == list(env.obs_spec.names)
        assert described[name]["action"]["high"] == list(env.action_spec.high)
        assert described[name]["renders"] is True
    privileged = described["quadrotor/hover"]["privileged_obs"]
    assert privileged["units"][privileged["names"].index("action_latency")] == "steps"


def test_tasks_name_shows_elements_with_bounds_and_config_defaults() -> None:
    code, out, _ = _main(["tasks", "quadrotor/hover"])
    assert code == 0
    assert re.search(r"^ +0  position_error_x +\[-inf, inf\]  m$", out, re.MULTILINE)
    assert re.search(r"^ +0  rotor_0 +\[-1, 1\]  1$", out, re.MULTILINE)
    assert "randomization.mass = 0.0" in out and "action_mode = motor" in out
    code, _, err = _main(["tasks", "no/such_task"])
    assert code == 2 and "unknown task 'no/such_task'" in err and len(err.strip().splitlines()) == 1


@pytest.fixture(scope="module")
def pendulum_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    train = ["train", "--max-iterations", "2", "--num-envs", "16", "--runs-root", str(root), "--quiet", "--export"]
    code, _, err = _main(train)
    assert code == 0, err
    (run,) = (root / "pendulum_ppo").iterdir()
    return run


def _play(run: Path, *extra: str) -> tuple[int, str, str]:
    return _main(["play", str(run), "--max-seconds", "3", "--fps", "10", *extra])


def test_play_writes_a_gif_of_the_policy_in_real_time(pendulum_run: Path) -> None:
    code, out, err = _play(pendulum_run)
    assert code == 0, err
    frames = iio.imread(pendulum_run / "play.gif", index=None)
    # dt 0.05 s and 10 fps: a frame every 2 steps; 3 s = 60 steps -> 30 frames at 10.0 fps.
    assert frames.shape == (30, 400, 400, 3)
    assert "30 frames at 10.0 fps" in " ".join(out.split())
    assert np.abs(frames[0].astype(int) - frames[-1].astype(int)).sum() > 0  # the pendulum moved
    metadata: dict[str, Any] = iio.immeta(pendulum_run / "play.gif", index=0)
    assert metadata["duration"] == 100  # ms per frame: plays in real time


def test_play_writes_mp4_and_drives_with_the_onnx_policy(pendulum_run: Path, tmp_path: Path) -> None:
    output = tmp_path / "video.mp4"
    code, _, err = _play(pendulum_run, "--onnx", "--output", str(output), "--episodes", "1")
    assert code == 0, err
    reader = imageio_v2.get_reader(output, format="FFMPEG")
    assert reader.count_frames() == 30 and reader.get_meta_data()["fps"] == pytest.approx(10.0)


@pytest.mark.parametrize(
    "extra, message",
    [(["--output", "x.avi"], "--output must end in one of"), (["--fps", "0"], "finite --fps >= 0.01")],
)
def test_play_rejects_bad_arguments_in_one_line(pendulum_run: Path, extra: list[str], message: str) -> None:
    code, _, err = _play(pendulum_run, *extra)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
