"""`robo-rl demo` never exports a policy below the gate: a run that stops before its target says so and what to do,
exits 1 and writes no policy.onnx."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from robo_rl.cli.demo import below_gate_advice


def test_a_stalled_demo_exports_nothing_and_says_what_to_do(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "robo_rl.cli.main", "demo", "--runs-root", str(tmp_path), "--max-iterations", "2"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr[-2000:]
    out = " ".join(done.stdout.split())  # rich wraps long lines
    assert "not exported: training stopped after 2 iterations without reaching its target" in out
    (run,) = tmp_path.glob("quadrotor_hover_ppo/*")
    assert f"robo-rl train --resume {run} --max-iterations 4" in out and "robo-rl demo --seed 1" in out
    assert not list(run.rglob("*.onnx")) and (run / "checkpoints").is_dir()


def test_the_advice_below_the_gate_names_the_rate_and_the_next_steps(tmp_path: Path) -> None:
    text = below_gate_advice(argparse.Namespace(seed=3), tmp_path, 0.931)
    assert "93.1% of the fresh flights pass, below the 95% gate" in text
    assert f"robo-rl train --resume {tmp_path}" in text and "robo-rl demo --seed 4" in text
