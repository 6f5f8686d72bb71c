"""`robo-rl export --target ...`: a trained run and foreign ONNX files to firmware folders through the CLI, with
one-line errors for a bad target, a missing file and an unsupported operator."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from robo_rl.cli.main import main

PARITY_TOLERANCE = 1e-5


def _main(argv: list[str]) -> tuple[int, str, str]:
    """Run the CLI in-process; returns (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _mlp_onnx(path: Path, activation: str = "Tanh", seed: int = 0) -> Path:
    """An SB3-style actor without robo_rl metadata: MatMul+Add, `activation`, MatMul+Add (6 → 16 → 3)."""
    rng = np.random.default_rng(seed)
    nodes = [
        helper.make_node("MatMul", ["input", "w1"], ["m1"], name="/mlp/0/MatMul"),
        helper.make_node("Add", ["m1", "b1"], ["z1"], name="/mlp/0/Add"),
        helper.make_node(activation, ["z1"], ["h1"], name=f"/mlp/1/{activation}"),
        helper.make_node("MatMul", ["h1", "w2"], ["m2"], name="/action/MatMul"),
        helper.make_node("Add", ["m2", "b2"], ["output"], name="/action/Add"),
    ]
    arrays = {"w1": (6, 16), "b1": (16,), "w2": (16, 3), "b2": (3,)}
    initializers = [
        numpy_helper.from_array(rng.normal(0, 0.5, shape).astype(np.float32), name) for name, shape in arrays.items()
    ]
    graph = helper.make_graph(
        nodes,
        "sb3_actor",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 6])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 3])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10  # what the installed onnxruntime reads
    onnx.save_model(model, str(path))
    return path


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real pendulum PPO run: 2 iterations of training (its policy is exported by the tests)."""
    root = tmp_path_factory.mktemp("runs")
    code, _, err = _main(["train", "--max-iterations", "2", "--num-envs", "16", "--runs-root", str(root), "--quiet"])
    assert code == 0, err
    (run,) = (root / "pendulum_ppo").iterdir()
    return run


def test_run_dir_to_c_with_verify_reports_parity(run_dir: Path) -> None:
    code, out, err = _main(["export", str(run_dir), "--target", "c", "--verify"])
    assert code == 0, err
    assert (run_dir / "policy.onnx").is_file()  # the run's policy is exported to ONNX first
    folder = run_dir / "firmware_c"
    assert {"robo_rl_policy.c", "robo_rl_policy.h", "main.c", "Makefile", "README.md"} <= {
        p.name for p in folder.iterdir()
    }
    report = json.loads((folder / "report.json").read_text())
    assert report["ok"] and report["nonfinite_rejected"] is True
    assert report["host_parity"]["samples"] >= 1000
    assert report["host_parity"]["relative_error"] <= PARITY_TOLERANCE
    text = " ".join(out.split())
    assert "host C (float) vs onnxruntime" in text and "(ok)" in text


def test_run_dir_int8_reports_error_on_task_observations(run_dir: Path, tmp_path: Path) -> None:
    out_dir = tmp_path / "m4_int8"
    code, out, err = _main(["export", str(run_dir), "--target", "cortex-m4", "--int8-activations", "-o", str(out_dir)])
    assert code == 0, err
    report = json.loads((out_dir / "report.json").read_text())
    assert "int8 activations" in report["numerics"]
    error = report["int8_error"]
    assert error["samples"] == 1024  # closed-loop observations of the task, not the bounds sampler's
    assert 0 < error["max_abs_error"] < 2.0  # pendulum torque is within [-2, 2]
    assert "host C (int8) vs onnxruntime" in " ".join(out.split())


def test_foreign_onnx_exports_next_to_the_file(tmp_path: Path) -> None:
    path = _mlp_onnx(tmp_path / "sb3_actor.onnx")
    code, _, err = _main(["export", str(path), "--target", "arduino", "--verify"])
    assert code == 0, err
    folder = tmp_path / "firmware_arduino"
    assert (folder / "examples" / "RoboRlPolicy" / "RoboRlPolicy.ino").is_file()
    report = json.loads((folder / "report.json").read_text())
    assert report["obs_dim"] == 6 and report["action_dim"] == 3 and report["ok"]
    assert report["host_parity"]["relative_error"] <= PARITY_TOLERANCE
    assert "action_0" in (folder / "src" / "robo_rl_policy.h").read_text()  # default names without metadata


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--target", "stm32"], "unknown --target 'stm32'; choose one of onnx, c, cortex-m4, crazyflie, arduino"),
        (["--target", "onnx"], "is already an ONNX file"),
        (["--target", "crazyflie"], "crazyflie target: the controller cannot compute observation(s) obs_0"),
        (["--target", "c", "--checkpoint", "latest.pt"], "--checkpoint applies to a run directory"),
    ],
)
def test_bad_requests_are_one_line_errors(argv: list[str], message: str, tmp_path: Path) -> None:
    code, _, err = _main(["export", str(_mlp_onnx(tmp_path / "actor.onnx")), *argv])
    assert code == 2
    assert len(err.splitlines()) == 1 and err.startswith("robo-rl export: error: ") and message in err


def test_unsupported_operator_is_one_line_naming_op_and_node(tmp_path: Path) -> None:
    path = _mlp_onnx(tmp_path / "softplus.onnx", activation="Softplus")
    code, _, err = _main(["export", str(path), "--target", "c"])
    assert code == 2
    assert len(err.splitlines()) == 1 and "Softplus node '/mlp/1/Softplus'" in err


def test_missing_path_is_one_line(tmp_path: Path) -> None:
    code, _, err = _main(["export", str(tmp_path / "nowhere.onnx"), "--target", "c"])
    assert code == 2 and len(err.splitlines()) == 1 and "no such run directory or ONNX file" in err


def test_help_lists_targets_and_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["export", "--help"])
    out = capsys.readouterr().out
    for option in ("--target", "--int8", "--int8-activations", "--verify", "--prefix", "crazyflie", "arduino"):
        assert option in out
