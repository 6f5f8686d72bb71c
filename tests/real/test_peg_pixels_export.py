"""A camera policy's way to the arm (issue 37): a short pixel-SAC run on mujoco/peg_insert_pixels, exported by
`robo-rl export RUN`, is accepted by the bundled arm_peg_pixels profile's runtime (its cameras and state match the
profile's inputs) and computes there, on the task's own frames, what the trained torch policy computes; the C
export refuses it in one line. The other tests of this path use a hand-built probe; this one uses the exporter."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pytest
import torch

from robo_rl.api.runs import load_trained
from robo_rl.cli.main import main
from robo_rl.image_spec import STATE_KEY
from robo_rl.modules.camera_policy import CameraPolicy
from robo_rl.real.profile import load_profile
from robo_rl.real.runtime import PolicyRuntime
from robo_rl.sim import make

TASK = "mujoco/peg_insert_pixels"


def _cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def camera_run(trained_peg_pixels_run: Path) -> Path:
    return trained_peg_pixels_run


def test_the_exported_camera_policy_fits_arm_peg_pixels_and_acts_as_trained(camera_run: Path) -> None:
    runtime = PolicyRuntime(camera_run / "policy.onnx", load_profile("arm_peg_pixels"))  # any mismatch raises
    assert [spec.name for spec in runtime.cameras] == ["wrist", "side"]
    env = make(TASK, num_envs=1, seed=3, cameras=("wrist", "side"))
    obs = env.reset(seed=3)
    policy = load_trained(camera_run).actor  # the run's own torch policy, rebuilt from its checkpoint
    assert isinstance(policy, CameraPolicy)
    for _ in range(5):
        frames = {name: obs[name][0].numpy() for name in ("wrist", "side")}
        action = runtime(obs[STATE_KEY][0].numpy(), frames)
        with torch.no_grad():
            expected = policy.act(obs)[0].numpy()
        np.testing.assert_allclose(action, expected, atol=1e-5)
        obs = env.step(torch.as_tensor(action)[None])[0]


def test_the_c_export_refuses_the_camera_run_in_one_line(camera_run: Path, tmp_path: Path) -> None:
    code, out, err = _cli(["export", str(camera_run), "--target", "c", "-o", str(tmp_path / "c")])
    assert code == 2 and "C export" not in out  # the run's ONNX file is written first, then refused for C
    assert err.strip().count("\n") == 0 and "policy has camera inputs (wrist, side)" in err
    assert not (tmp_path / "c").exists()
