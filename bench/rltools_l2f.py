"""Wall-clock of RLtools' "Learning to Fly in Seconds" TD3 training (Crazyflie hover, 1 env, 300k steps) here.

Eschmann et al., "Learning to Fly in Seconds" (RA-L 2024, arXiv:2311.13081) train a Crazyflie hover policy with
TD3 in C++ (RLtools) and report ~18 s for 300k env steps on a 2020 MacBook Pro (M1). This script times their own
training program, built from source outside this repository, so our numbers can be put next to theirs on the same
machine. It runs the executable `--runs` times, one at a time, and writes JSON (`--json`) with, per run: the load
average just before it, the exact command, the whole-run wall-clock, the wall-clock when the program printed
`Step: 300000` (it prints `Step: N` every 10 000 steps, flushed, so every such line gets a timestamp here), the
program's own `Training took: X s`, user/system CPU seconds, and (for `training_headless`) its deterministic
evaluations (`Step: N (mean return: R, mean episode length: L)`: 1000 episodes of at most 500 steps every 10 000
steps; there is no success flag or success rate, only mean return and mean episode length).

The programs take no arguments: 300 001 loop iterations (STEP_LIMIT in src/config/config.h), seed 0 every run
(BASE_SEED 0 + run 0), so repeated runs train the same policy and only the time varies. Both targets also run a
10-episode validation every 50 000 steps (results go only to the Tensorboard logger, which is off here).
- `training_benchmark`: the paper's "fastest configuration, without logging, UI, checkpointing"; prints only
  `Step: N` lines and `Training took`.
- `training_headless`: also evaluates 1000 episodes every 10 000 steps and writes actor checkpoints (C++ headers)
  every 100 000 steps to `checkpoints/` under the working directory (`--cwd`, default a fresh temporary folder).
  Tensorboard logging is compiled in only when CMake finds Protobuf (not installed below), HDF5 checkpoints only
  when it finds HDF5 (likewise).

Nothing here is fetched by CI and nothing fetched may go into this repository: build it by hand, outside the repo
(here /work/rltools_build), with the commits used for bench/results/rltools_l2f.json:

    # 1. Sources: learning-to-fly (the paper's repo) and the two submodules its build needs.
    #    learning-to-fly d07592d5c5dea3c90954d2be6f04cfa68581ebe8 pins
    #    rl-tools 3a612e29582aa7b509bd4df8a04fb3a9dd2b2721, which pins
    #    nlohmann/json a0c1318830519eac027a31edec1a99ce1ae5670e (learning-to-fly's CMakeLists forces
    #    RL_TOOLS_ENABLE_JSON on and rl-tools add_subdirectory()s external/json). No other submodule is needed.
    mkdir -p /work/rltools_build && cd /work/rltools_build
    git clone https://github.com/arplaboratory/learning-to-fly learning_to_fly
    git -C learning_to_fly checkout d07592d5c5dea3c90954d2be6f04cfa68581ebe8
    git -C learning_to_fly submodule update --init -- external/rl_tools
    git -C learning_to_fly/external/rl_tools submodule update --init -- external/json
    #    (Without network to GitHub: `git archive <commit> | tar -x -C <dir>` of each of the three repositories at
    #    those commits into learning_to_fly/, learning_to_fly/external/rl_tools/ and
    #    learning_to_fly/external/rl_tools/external/json/ gives the same tree.)

    # 2. Packages (Debian 12). Boost headers only because the UI target's find_package(Boost REQUIRED) runs at
    #    configure time; OpenBLAS is the README's Ubuntu backend (MKL, the faster one, is not in Debian's main
    #    archive). Do NOT install libhdf5-dev / libprotobuf-dev: that keeps HDF5 and Tensorboard off.
    apt-get install -y --no-install-recommends build-essential cmake libboost-dev libopenblas-dev

    # 3. Configure and build (Release adds -O3 -march=native -mtune=native -mavx2). `-include cassert`: rl-tools
    #    3a612e29 uses assert() in rl/algorithms/td3/loop.h without including <cassert>, which g++ 12 rejects.
    mkdir build_openblas && cd build_openblas
    cmake ../learning_to_fly -DCMAKE_BUILD_TYPE=Release -DRL_TOOLS_BACKEND_ENABLE_OPENBLAS:BOOL=ON \
        -DCMAKE_CXX_FLAGS="-include cassert"
    cmake --build . -j2 --target training_benchmark training_headless
    #    -> build_openblas/src/training_benchmark, build_openblas/src/training_headless (~11 s to build)

    # 4. Time it (from the robo_rl checkout):
    python bench/rltools_l2f.py --build /work/rltools_build/build_openblas/src --exe training_benchmark --runs 3

Without a BLAS backend (no RL_TOOLS_BACKEND_ENABLE_* option) RLtools falls back to its generic matrix multiply,
which was ~15× slower here (593 s instead of ~40 s). The runs set OPENBLAS_NUM_THREADS=1 and MKL_NUM_THREADS=1
(the README runs `MKL_NUM_THREADS=1 ./build/src/training_headless`); `--threads` changes that.

Usage: `python bench/rltools_l2f.py --build DIR [--exe training_benchmark] [--runs 1] [--json PATH] [--cwd DIR]`.
Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results" / "rltools_l2f.json"
TARGET_STEPS = 300_000
"""The paper's step budget; the program prints `Step: 300000` when 300 000 env steps are done."""
STEP_LINE = re.compile(r"^Step: (\d+)\s*$")
EVAL_LINE = re.compile(r"^Step: (\d+) \(mean return: ([-+0-9.eE]+|nan|-?inf), mean episode length: ([-+0-9.eE]+)\)")
TOOK_LINE = re.compile(r"^Training took: ([0-9.eE+-]+)s")


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (Linux), else platform.processor()."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def run_once(command: list[str], cwd: Path, env: dict[str, str], echo: bool) -> dict[str, Any]:
    """Runs the training once; timestamps every output line relative to the start of the process."""
    load_before = os.getloadavg()
    usage_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    step_times: dict[int, float] = {}
    evaluations: list[dict[str, float]] = []
    program_seconds: float | None = None
    tail: list[str] = []
    proc = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
    )
    assert proc.stdout is not None
    for raw in proc.stdout:
        now = time.monotonic() - start
        line = raw.rstrip("\n")
        if echo:
            print(f"[{now:8.2f}s] {line}", flush=True)
        tail = [*tail[-19:], line]
        if m := STEP_LINE.match(line):
            step_times.setdefault(int(m.group(1)), round(now, 3))
        elif m := EVAL_LINE.match(line):
            evaluations.append(
                {
                    "step": int(m.group(1)),
                    "mean_return": float(m.group(2)),
                    "mean_episode_length": float(m.group(3)),
                    "t_s": round(now, 3),
                }
            )
        elif m := TOOK_LINE.match(line):
            program_seconds = float(m.group(1))
    returncode = proc.wait()
    wall = time.monotonic() - start
    usage_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "loadavg_before": [round(x, 2) for x in load_before],
        "returncode": returncode,
        "wall_s": round(wall, 3),
        "wall_at_300k_steps_s": step_times.get(TARGET_STEPS),
        "program_reported_s": program_seconds,
        "last_step_logged": max(step_times) if step_times else None,
        "user_cpu_s": round(usage_after.ru_utime - usage_before.ru_utime, 2),
        "sys_cpu_s": round(usage_after.ru_stime - usage_before.ru_stime, 2),
        "max_rss_mib": round(usage_after.ru_maxrss / 1024, 1),
        "step_times_s": {str(k): v for k, v in sorted(step_times.items())},
        "evaluations": evaluations,
        "output_tail": tail,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", type=Path, required=True, help="folder holding the executable (e.g. build/src)")
    parser.add_argument("--exe", default="training_benchmark", help="training_benchmark or training_headless")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--json", type=Path, default=RESULTS)
    parser.add_argument("--cwd", type=Path, default=None, help="working directory (default: a fresh temp folder)")
    parser.add_argument("--threads", type=int, default=1, help="OPENBLAS_NUM_THREADS / MKL_NUM_THREADS")
    parser.add_argument("--quiet", action="store_true", help="do not echo the program's output")
    args = parser.parse_args()

    exe = (args.build / args.exe).resolve()
    if not os.access(exe, os.X_OK):
        print(f"not an executable: {exe} (build it as described in this script's docstring)", file=sys.stderr)
        return 2
    threads = str(args.threads)
    env = {**os.environ, "OPENBLAS_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
    command = [str(exe)]
    shown = f"OPENBLAS_NUM_THREADS={threads} MKL_NUM_THREADS={threads} {shlex.join(command)}"

    runs = []
    for i in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="rltools_l2f_") as tmp:
            cwd = args.cwd if args.cwd is not None else Path(tmp)
            cwd.mkdir(parents=True, exist_ok=True)
            print(f"run {i + 1}/{args.runs}: {shown} (cwd {cwd}), load average {os.getloadavg()}", flush=True)
            result = run_once(command, cwd, env, echo=not args.quiet)
        result["cwd"] = str(cwd) if args.cwd is not None else "<temporary>"
        runs.append(result)
        print(
            f"run {i + 1}: wall {result['wall_s']:.2f} s, at 300k steps {result['wall_at_300k_steps_s']} s, "
            f"program says {result['program_reported_s']} s, rc {result['returncode']}",
            flush=True,
        )

    at_300k = [r["wall_at_300k_steps_s"] for r in runs if r["wall_at_300k_steps_s"] is not None]
    report = {
        "what": "RLtools Learning-to-Fly TD3 (Crazyflie hover, 1 env, 300k steps), wall-clock per run",
        "command": shown,
        "executable": str(exe),
        "executable_mtime": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(exe.stat().st_mtime)),
        "seed": "fixed: BASE_SEED 0 + run 0 inside the program (no command-line options)",
        "machine": {
            "cpu": cpu_model(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
        },
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "summary": {
            "runs": len(runs),
            "wall_at_300k_steps_s": at_300k,
            "median_wall_at_300k_steps_s": statistics.median(at_300k) if at_300k else None,
            "wall_s": [r["wall_s"] for r in runs],
        },
        "runs": runs,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.json}; wall-clock at 300k steps: {at_300k}")
    return 0 if all(r["returncode"] == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
