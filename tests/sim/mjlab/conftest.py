"""mjlab tests: scenario scripts run by .venv-mjlab's Python (mjlab pins mujoco 3.11; the main venv has mujoco 4).

Each scenario (scenarios/*.py) prints its measurements as one JSON line; the tests assert on them. They skip, saying
why, when .venv-mjlab is missing (`make mjlab-venv` did not build it) or cannot import mjlab.
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
MJLAB_PYTHON = ROOT / ".venv-mjlab" / "bin" / "python"
SCENARIOS = Path(__file__).resolve().parent / "scenarios"


def _unavailable() -> str:
    if not MJLAB_PYTHON.is_file():
        return f"{MJLAB_PYTHON} is missing: `make mjlab-venv` did not build the mjlab venv"
    if not (ROOT / ".venv-mjlab" / ".installed").is_file():
        return "`make mjlab-venv` did not finish building .venv-mjlab (no .installed stamp)"
    probe = subprocess.run([str(MJLAB_PYTHON), "-c", "import mjlab, robo_rl.sim"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f".venv-mjlab cannot import mjlab and robo_rl.sim: {probe.stderr.strip()[-300:]}"
    return ""


@pytest.fixture(scope="session")
def mjlab_scenario(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., dict[str, Any]]:
    """`mjlab_scenario(script, *args, timeout=...)` → the scenario's JSON result (skips without .venv-mjlab)."""
    reason = _unavailable()
    if reason:
        pytest.skip(reason)

    def run(script: str, *args: str, timeout: float = 300.0) -> dict[str, Any]:
        out_dir = tmp_path_factory.mktemp(Path(script).stem)
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1"}
        argv = [str(MJLAB_PYTHON), str(SCENARIOS / script), str(out_dir), *args]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)
        lines = done.stdout.strip().splitlines()
        if done.returncode != 0 or not lines or not lines[-1].startswith("{"):
            pytest.fail(f"{script} failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        return json.loads(lines[-1])

    return run
