"""The flow-policy life cycle from the command line: demos → train fql / dsrl → ONNX → C verified on the host."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from robo_rl.cli.main import main


@pytest.mark.parametrize("preset", ["point_obstacle_fql", "point_obstacle_dsrl"])
def test_demos_train_export_and_compile(preset: str, tmp_path: Path) -> None:
    demos = tmp_path / "demos.npz"
    assert main(["record-demos", "point/obstacle", "--episodes", "4", "-o", str(demos)]) == 0
    settings = [
        f"off_policy.prior_buffer={demos}",
        "off_policy.bc_pretrain_steps=300",
        "off_policy.loop.eval_episodes=10",
    ]
    argv = ["train", preset, "--max-iterations", "80", "--runs-root", str(tmp_path), "--quiet", "--export"]
    assert main([*argv, *(arg for s in settings for arg in ("--set", s))]) == 0
    (run,) = (tmp_path / preset).iterdir()
    session = ort.InferenceSession(str(run / "policy.onnx"), providers=["CPUExecutionProvider"])
    action = session.run(None, {"obs": np.zeros((3, 8), dtype=np.float32)})[0]
    assert action.shape == (3, 2) and np.all(np.abs(action) <= 1.0)
    out = tmp_path / "c"
    assert main(["export", str(run / "policy.onnx"), "--target", "c", "--verify", "-o", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["ok"] and report["nonfinite_rejected"] and report["host_parity"]["max_abs_error"] < 1e-5
