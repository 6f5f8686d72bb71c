"""How long each process a launch file starts takes to stop after SIGINT or SIGTERM (issue 52's benchmark).

Runs tests/real/ros/scenarios/scenario_launch_stop.py (one launch, one signal, each process's exit time polled every
10 ms) for every launcher, case and signal, in a loopback-only network namespace with .venv-ros's Python:
`robo-rl launch` always, the real `ros2 launch` where `make ros-launch` installed it. Cases: `train` (mid-run) and
`train-first` (as soon as the run directory exists) of train_quadrotor_hover; `sim` (sim_quadrotor, policy_node
stopped first, then sim_bridge and teleop_node); `robot` (train_on_robot_rc_car with no robot: the trainer waits,
teleop_node and recorder run). SIGINT goes to the launcher, which passes it on; SIGTERM to each process. The target:
every process gone within 2 s, inside the launchers' 5 s before SIGTERM, with the trainer's checkpoint and
policy.onnx. The 1-minute load average is recorded with each run: the numbers grow with it.

Usage: `python bench/launch_stop.py [--repeats 1] [--launchers robo-rl ros2] [--cases train ...] [--policy P.onnx]`
(a quadrotor_crazyflie policy for the `sim` case; without it one is trained and exported for 1 iteration: its flying
does not matter here). Results go to bench/results/launch_stop.json (`--out` elsewhere).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from machine import machine_info, warn_if_busy

from robo_rl.real.ros.netns import LOOPBACK_NETNS

ROOT = Path(__file__).resolve().parents[1]
ROS_PYTHON = ROOT / ".venv-ros" / "bin" / "python"
SCENARIO = ROOT / "tests" / "real" / "ros" / "scenarios" / "scenario_launch_stop.py"
CASES = (("train", "INT"), ("train", "TERM"), ("train-first", "INT"), ("sim", "INT"), ("sim", "TERM"))
CASES += (("robot", "INT"), ("robot", "TERM"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--launchers", nargs="+", default=["robo-rl", "ros2"], choices=["robo-rl", "ros2"])
    parser.add_argument("--policy", type=Path, help="a quadrotor_crazyflie policy.onnx for the sim case")
    parser.add_argument("--ros-python", type=Path, default=ROS_PYTHON)
    parser.add_argument("--cases", nargs="+", default=sorted({case for case, _ in CASES}), help="a subset of the cases")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "launch_stop.json")
    args = parser.parse_args()
    load = warn_if_busy()
    with tempfile.TemporaryDirectory(prefix="launch_stop_") as folder:
        policy = args.policy or _policy(Path(folder))
        runs = [
            _run(args.ros_python, Path(folder), launcher, case, signame, policy)
            for launcher in args.launchers
            for case, signame in CASES
            if case in args.cases
            for _ in range(args.repeats)
        ]
    args.out.write_text(json.dumps({"machine": machine_info(), "load_at_start": load, "runs": runs}, indent=1) + "\n")
    print(f"wrote {args.out}")


def _policy(folder: Path) -> Path:
    """A quadrotor_hover_ppo policy after 1 iteration (its flight does not matter for stopping)."""
    robo_rl = Path(sys.executable).with_name("robo-rl")
    command = [str(robo_rl), "train", "quadrotor_hover_ppo", "--max-iterations", "1", "--export", "--quiet"]
    subprocess.run([*command, "--runs-root", str(folder / "runs")], check=True, capture_output=True)
    return next((folder / "runs").rglob("policy.onnx"))


def _run(ros_python: Path, folder: Path, launcher: str, case: str, signame: str, policy: Path) -> dict[str, Any]:
    log_dir = Path(tempfile.mkdtemp(dir=folder))
    argv = [*LOOPBACK_NETNS, str(ros_python), str(SCENARIO), str(log_dir), launcher, case, signame, str(policy)]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        print(f"{launcher} {case} SIG{signame}: failed (exit {done.returncode}): {done.stderr[-500:]}", flush=True)
        return {"launcher": launcher, "case": case, "signal": signame, "error": done.stderr[-2000:]}
    result = json.loads(lines[-1])
    files = result.pop("run_files")
    result.pop("log")
    result |= {"launcher": launcher, "case": case, "signal": signame}
    result["checkpoint"] = any(f.endswith("checkpoints/latest.pt") for f in files)
    result["policy_onnx"] = any(f.endswith("/policy.onnx") for f in files)
    print(f"{launcher} {case} SIG{signame} (load {result['load']:.1f}): {result['exit_s']}", flush=True)
    return result


if __name__ == "__main__":
    main()
