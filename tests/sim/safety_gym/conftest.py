"""Safety-Gymnasium tests: scenario scripts run by .venv-safety's Python (Safety-Gymnasium pins gymnasium 0.28 and
mujoco 2.3.3; the main venv has gymnasium 1.x and mujoco 4).

Each scenario (scenarios/*.py) prints its measurements as one JSON line; the tests assert on them. They skip, saying
why, when .venv-safety is missing (`make safety-venv` did not build it) or cannot import Safety-Gymnasium.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
SAFETY_VENV = ROOT / ".venv-safety"
SAFETY_PYTHON = SAFETY_VENV / "bin" / "python"
SCENARIOS = Path(__file__).resolve().parent / "scenarios"


def _unavailable() -> str:
    if not SAFETY_PYTHON.is_file():
        return f"{SAFETY_PYTHON} is missing: `make safety-venv` did not build the Safety-Gymnasium venv"
    if not (SAFETY_VENV / ".installed").is_file():
        return "`make safety-venv` did not finish building .venv-safety (no .installed stamp)"
    probe = subprocess.run(
        [str(SAFETY_PYTHON), "-c", "import safety_gymnasium, robo_rl.sim"], capture_output=True, text=True, cwd=ROOT
    )
    if probe.returncode != 0:
        return f".venv-safety cannot import safety_gymnasium and robo_rl.sim: {probe.stderr.strip()[-300:]}"
    return ""


def _runner(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., dict[str, Any]]:
    def run(script: str, *args: str, timeout: float = 300.0) -> dict[str, Any]:
        out_dir = tmp_path_factory.mktemp(Path(script).stem)
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1"}
        argv = [str(SAFETY_PYTHON), str(SCENARIOS / script), str(out_dir), *args]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)
        lines = done.stdout.strip().splitlines()
        if done.returncode != 0 or not lines or not lines[-1].startswith("{"):
            pytest.fail(f"{script} failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        return json.loads(lines[-1])

    return run


@pytest.fixture(scope="session")
def safety_scenario(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., dict[str, Any]]:
    """`safety_scenario(script, *args, timeout=...)` → the scenario's JSON result (skips without .venv-safety)."""
    reason = _unavailable()
    if reason:
        pytest.skip(reason)
    return _runner(tmp_path_factory)


@pytest.fixture(scope="session")
def safety_bin() -> Path:
    """.venv-safety's bin/ (its python and robo-rl); skips without the venv."""
    reason = _unavailable()
    if reason:
        pytest.skip(reason)
    return SAFETY_VENV / "bin"
