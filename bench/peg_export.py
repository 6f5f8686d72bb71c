"""The learned peg policy as it deploys (issue 36, deliver 4): bench/peg_hil.py's setup (b) trained for `--minutes`
robot minutes (seed 0), exported to ONNX (`robo-rl export RUN`) and to C99 (`robo-rl export RUN --target c`), and
each artifact flown in closed loop on 64 random holes of the benchmark's task (seed 12345): the torch checkpoint
and the ONNX file through `robo-rl eval` (`--onnx`), the C code compiled with the host's gcc (the export folder's
flags, as a shared library) and called through ctypes on every step of 64 envs. Also the largest |C - onnxruntime| over
the observations the C policy met. Results in bench/results/peg_export.json.

Usage: `python bench/peg_export.py [--minutes 30]` (about 4 CPU minutes per 30 robot minutes).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import torch
from machine import machine_info

RESULTS = Path(__file__).parent / "results" / "peg_export.json"
ROBO_RL = str(Path(sys.executable).parent / "robo-rl")
EPISODES, SEED = 64, 12345


def _success(output: str) -> float:
    found = re.search(r"success rate ([0-9.]+)%", output)
    if found is None:
        raise RuntimeError(f"no success rate in: {output[-500:]}")
    return float(found[1]) / 100


def _c_policy(folder: Path, library: Path) -> Any:
    flags = ["-O2", "-std=c99", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared"]
    subprocess.run(["gcc", *flags, "-o", str(library), str(folder / "robo_rl_policy.c"), "-lm"], check=True)
    function = ctypes.CDLL(str(library)).robo_rl_policy
    function.argtypes, function.restype = (ctypes.c_void_p, ctypes.c_void_p), ctypes.c_int
    return function


def fly_c(function: Any, onnx_path: Path) -> dict[str, float]:
    """The C policy on EPISODES holes of the benchmark's task (one episode per env): success rate, and the largest
    difference from onnxruntime on the observations it met."""
    from robo_rl.sim.mujoco.peg_insert import PegInsert
    from robo_rl.sim.mujoco.presets import PEG_BENCHMARK_TASK

    session = ort.InferenceSession(str(onnx_path))
    name = session.get_inputs()[0].name
    env = PegInsert(EPISODES, config=PEG_BENCHMARK_TASK, seed=SEED)
    obs = env.reset(SEED).numpy().astype(np.float32)
    done, won, gap = np.zeros(EPISODES, bool), np.zeros(EPISODES, bool), 0.0
    for _ in range(env.max_episode_steps):
        actions = np.zeros((EPISODES, 4), np.float32)
        for row in range(EPISODES):
            if function(np.ascontiguousarray(obs[row]).ctypes.data, actions[row].ctypes.data) != 0:
                raise RuntimeError(f"the C policy refused observation {obs[row]}")
        gap = max(gap, float(np.abs(actions - session.run(None, {name: obs})[0]).max()))
        result = env.step(torch.from_numpy(actions))
        won |= result[4]["success"].numpy() & ~done
        done |= result[2].numpy() | result[3].numpy()
        obs = result[0].numpy().astype(np.float32)
    return {"c_success": float(won.mean()), "c_minus_onnxruntime_max_rad": gap}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=30.0, help="robot minutes of training (default 30)")
    args = parser.parse_args()
    if shutil.which("gcc") is None:
        raise SystemExit("gcc is needed to compile the C export")
    sys.path.insert(0, str(Path(__file__).parent))
    from peg_hil import STEPS_PER_MINUTE, record_demonstrations

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        demos = root / "demos.npz"
        record_demonstrations(demos)
        steps = round(args.minutes * STEPS_PER_MINUTE)
        train = [ROBO_RL, "train", "peg_insert_rlpd", "--seed", "0", "--max-iterations", str(steps), "--quiet"]
        train += ["--runs-root", str(root / "runs"), "--set", f"off_policy.prior_buffer={demos}"]
        subprocess.run(train, check=True, capture_output=True, env=env)
        (run,) = (root / "runs" / "peg_insert_rlpd").iterdir()
        subprocess.run([ROBO_RL, "export", str(run)], check=True, capture_output=True)
        folder = root / "c"
        to_c = [ROBO_RL, "export", str(run), "--target", "c", "-o", str(folder)]
        subprocess.run(to_c, check=True, capture_output=True)
        evaluate = [ROBO_RL, "eval", str(run), "--episodes", str(EPISODES), "--seed", str(SEED), "--threads", "1"]
        torch_out = subprocess.run(evaluate, check=True, capture_output=True, text=True, env=env).stdout
        onnx_out = subprocess.run([*evaluate, "--onnx"], check=True, capture_output=True, text=True, env=env).stdout
        c_result = fly_c(_c_policy(folder, root / "libpeg.so"), run / "policy.onnx")
        sizes = {path.name: path.stat().st_size for path in folder.iterdir() if path.suffix in (".c", ".h")}
    out = {
        "machine": machine_info(),
        "robot_minutes": args.minutes,
        "episodes": EPISODES,
        "torch_success": _success(torch_out),
        "onnx_success": _success(onnx_out),
        **c_result,
        "c_source_bytes": sizes,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
