"""The peg policy's way to the arm (issue 36): a peg_insert_sac run (trained with the simulated operator's
corrections) exported by `robo-rl export RUN` to ONNX that the arm_peg profile's runtime accepts, and by
`robo-rl export RUN --target c` to C99 that, compiled with the host's gcc, computes what onnxruntime computes.

The SAC actor's last layer computes the action mean and log-std together and its deterministic export slices out
the mean; the firmware exporter folds that Slice into the layer (robo_rl.firmware_export.onnx_ops), so C fits:
11 → 128 → 128 → 4 ReLU MLP, about 75 kB of flash on a Cortex-M4.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from robo_rl.cli.main import main
from robo_rl.real.profile import load_profile
from robo_rl.real.runtime import PolicyRuntime
from robo_rl.sim import make

OBS_NAMES = [
    *(f"{joint}_angle" for joint in ("yaw", "shoulder", "elbow", "wrist")),
    *(f"{joint}_velocity" for joint in ("yaw", "shoulder", "elbow", "wrist")),
    *(f"peg_tip_to_hole_estimate_{axis}" for axis in "xyz"),
]
ACTION_NAMES = [f"{joint}_angle_step" for joint in ("yaw", "shoulder", "elbow", "wrist")]
C_TOLERANCE = 1e-6
"""Largest |C - onnxruntime| per action (rad): float32 sums in another order differ by a few ulp of the hidden
activations; the actions are at most 0.05 rad (measured: 1.5e-08)."""


def _cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _onnxruntime(policy: Path, obs: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(policy), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(["action"], {"obs": obs.astype(np.float32)})[0])


def _peg_observations(policy: Path, steps: int = 300) -> np.ndarray:
    """Observations of mujoco/peg_insert with the exported policy in the loop (two episodes from seed 0)."""
    env = make("mujoco/peg_insert", num_envs=1, seed=0)
    session = ort.InferenceSession(str(policy), providers=["CPUExecutionProvider"])
    obs = env.reset(0)  # (1, 11)
    seen = []
    for _ in range(steps):
        seen.append(obs[0].numpy())
        action = torch.as_tensor(session.run(["action"], {"obs": obs.numpy().astype(np.float32)})[0])
        obs = env.step(action)[0]
    return np.asarray(seen, dtype=np.float32)


def test_the_onnx_export_names_the_tasks_observations_and_actions_and_fits_arm_peg(trained_peg_run: Path) -> None:
    policy = trained_peg_run / "policy.onnx"
    props = {p.key: p.value for p in onnx.load(str(policy)).metadata_props}
    assert props["robo_rl.task"] == "mujoco/peg_insert" and float(props["robo_rl.dt"]) == pytest.approx(0.1)
    assert json.loads(props["robo_rl.obs_names"]) == OBS_NAMES
    assert json.loads(props["robo_rl.obs_units"]) == ["rad"] * 4 + ["rad/s"] * 4 + ["m"] * 3
    assert json.loads(props["robo_rl.action_names"]) == ACTION_NAMES
    assert json.loads(props["robo_rl.action_units"]) == ["rad"] * 4
    assert json.loads(props["robo_rl.action_low"]) == [-0.05] * 4
    assert json.loads(props["robo_rl.action_high"]) == [0.05] * 4
    runtime = PolicyRuntime(policy, load_profile("arm_peg"))  # raises ProfileMismatchError on any mismatch
    obs = _peg_observations(policy, steps=20)
    actions = np.asarray([runtime(o) for o in obs])
    np.testing.assert_allclose(actions, _onnxruntime(policy, obs), atol=1e-7)
    assert np.abs(actions).max() <= 0.05 and np.abs(actions).max() > 0.0  # a trained actor, not all-zero steps


def test_the_c_export_compiled_with_gcc_matches_onnxruntime(trained_peg_run: Path, tmp_path: Path) -> None:
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc is not installed")
    folder = tmp_path / "firmware_c"
    code, out, err = _cli(["export", str(trained_peg_run), "--target", "c", "-o", str(folder)])
    assert code == 0, err
    assert "dense 11→128, relu, dense 128→128, relu, dense 128→4, tanh" in " ".join(out.split())
    header = (folder / "robo_rl_policy.h").read_text()
    assert '#define ROBO_RL_TASK "mujoco/peg_insert"' in header
    assert "#define ROBO_RL_ACTION_WRIST_ANGLE_STEP 3" in header
    library = tmp_path / "libpeg.so"
    flags = ["-O2", "-std=c99", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared"]  # the folder's Makefile's, shared
    subprocess.run([gcc, *flags, "-o", str(library), str(folder / "robo_rl_policy.c"), "-lm"], check=True)
    function = ctypes.CDLL(str(library)).robo_rl_policy
    function.argtypes, function.restype = (ctypes.c_void_p, ctypes.c_void_p), ctypes.c_int
    policy = trained_peg_run / "policy.onnx"
    # The arm's own observations in the loop, and wider ones (far poses, fast joints) that drive tanh to its ends.
    wide = np.random.default_rng(0).normal(0.0, [10.0] * 4 + [30.0] * 4 + [2.0] * 3, (700, 11)).astype(np.float32)
    obs = np.concatenate([_peg_observations(policy), wide])
    actions = np.full((len(obs), 4), np.nan, np.float32)
    for row in range(len(obs)):
        assert function(obs[row].ctypes.data, actions[row].ctypes.data) == 0  # ROBO_RL_OK
    expected = _onnxruntime(policy, obs)
    assert np.abs(actions - expected).max() <= C_TOLERANCE
    assert np.abs(expected).max() > 0.045  # the sample reaches near the ±0.05 rad bounds, not only around zero
    bad = obs[:1].copy()
    bad[0, 8] = np.nan  # a lost hole estimate: the C policy refuses it and writes nothing
    untouched = np.full(4, 7.0, np.float32)
    assert function(bad[0].ctypes.data, untouched.ctypes.data) == 1 and (untouched == 7.0).all()
