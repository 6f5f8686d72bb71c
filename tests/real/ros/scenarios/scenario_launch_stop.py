"""A launch file's processes stop by themselves after SIGINT or SIGTERM, under `robo-rl launch` or the real
`ros2 launch` (usage: scenario_launch_stop.py LOG_DIR LAUNCHER CASE SIGNAL [POLICY]).

LAUNCHER: `robo-rl` or `ros2` (`ros2 launch robo_rl FILE`, robo_rl installed as a ROS package in this venv's prefix:
`make ros-launch`). CASE:
- `train` / `train-first`: train_quadrotor_hover, stopped mid-run (after 2 logged iterations) or as soon as the run
  directory exists (set-up's end, the first iteration);
- `sim`: sim_quadrotor with POLICY and teleop_node; policy_node is stopped first, then the rest;
- `robot`: train_on_robot_rc_car with teleop_node and the recorder, and no robot: `robo-rl train --robot` waits.
SIGNAL `INT`: SIGINT to the launcher, which passes it on to every process (both launchers do when they have no
terminal); `TERM`: SIGTERM to each process itself (a launcher's next step). Each process's exit time after its signal
is measured (polled every 10 ms); a process still running 30 s after it is killed. The result also says whether a
launcher escalated, the run directory's files and any traceback in the logs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from harness import BIN

ROOT = Path(__file__).resolve().parents[4]
DEADLINE_S = 30.0
"""How long a process may take to stop before it is killed: generous, for a loaded 2-core machine."""
FILES = {
    "train": "train_quadrotor_hover.launch.yaml",
    "train-first": "train_quadrotor_hover.launch.yaml",
    "sim": "sim_quadrotor.launch.yaml",
    "robot": "train_on_robot_rc_car.launch.yaml",
}
FAILURES = ("Traceback", "RCLError", "KeyboardInterrupt")
ESCALATION = "escalating to"
"""ros2 launch's log line when a process outlived the SIGINT's 5 s (or the SIGTERM's): measured, not a failure."""


def main() -> None:
    log_dir, launcher, case, signame = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    runs = log_dir / "runs"
    arguments = _arguments(case, runs, sys.argv[5] if len(sys.argv) > 5 else "")
    log = open(log_dir / "launch.log", "w")
    process = subprocess.Popen(
        _command(launcher, FILES[case], arguments),
        stdout=log,
        stderr=subprocess.STDOUT,
        env=_environment(launcher, log_dir),
        cwd=log_dir,  # recorder writes its bags into the working directory
        start_new_session=True,
    )
    results: dict[str, Any] = {"ready": _ready(case, runs, log_dir, process), "load": os.getloadavg()[0]}
    children = _children(process.pid)
    results["processes"] = sorted(children.values())
    try:
        results["exit_s"] = _stop(process, children, case, getattr(signal, f"SIG{signame}"))
    finally:
        _kill_group(process)
    results["launcher_code"] = process.wait()
    results["failures"] = _lines(log_dir, FAILURES)
    results["escalations"] = _lines(log_dir, (ESCALATION,))
    results["run_files"] = sorted(str(p.relative_to(runs)) for p in runs.rglob("*") if p.is_file())
    results["log"] = (log_dir / "launch.log").read_text(errors="replace")[-3000:]
    print(json.dumps(results))


def _arguments(case: str, runs: Path, policy: str) -> list[str]:
    if case.startswith("train"):
        return [f"runs_root:={runs}", "num_envs:=256", "max_iterations:=100000"]
    if case == "sim":
        return [f"policy:={policy}", "teleop:=true"]
    return [f"runs_root:={runs}", "sim:=false", "record:=true"]


def _command(launcher: str, file: str, arguments: list[str]) -> list[str]:
    if launcher == "ros2":
        return [str(BIN / "ros2"), "launch", "robo_rl", file, *arguments]
    return [str(BIN / "robo-rl"), "launch", str(ROOT / "launch" / file), *arguments]


def _environment(launcher: str, log_dir: Path) -> dict[str, str]:
    """This venv first on PATH (lib/robo_rl's `#!/usr/bin/env python3`), its prefix on AMENT_PREFIX_PATH, and the
    ROS logs of nodes without `output: screen` in LOG_DIR."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "ROS_LOG_DIR": str(log_dir / "ros")}
    if launcher == "ros2":
        env["AMENT_PREFIX_PATH"] = sys.prefix
    return env


def _ready(case: str, runs: Path, log_dir: Path, process: subprocess.Popen) -> bool:
    """Wait (up to 120 s) until the case's processes are where the signal should find them."""
    started = time.monotonic()
    while time.monotonic() < started + 120.0 and process.poll() is None:
        if _reached(case, runs, log_dir, time.monotonic() - started):
            return True
        time.sleep(0.01)
    return False


def _reached(case: str, runs: Path, log_dir: Path, elapsed_s: float) -> bool:
    if case == "train-first":
        return any(runs.glob("*/*/config.yaml"))
    if case == "train":
        return any(len(p.read_text().splitlines()) >= 2 for p in runs.glob("*/*/metrics.jsonl"))
    if case == "robot":  # the trainer waits for the robot's first messages and the operator
        return "press reset" in (log_dir / "launch.log").read_text(errors="replace")
    return elapsed_s > 10.0  # sim: the quadrotor flies by then


def _children(pid: int) -> dict[int, str]:
    """The launcher's child processes: pid -> the executable's name (lib/robo_rl/NAME or bin/NAME)."""
    found = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            found[int(child)] = _name(int(child))
    return found


def _name(pid: int) -> str:
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    interpreted = len(argv) > 1 and b"python" in Path(argv[0].decode()).name.encode()
    program = Path((argv[1] if interpreted else argv[0]).decode()).name
    if program == "robo-rl" and len(argv) > 2:
        return f"robo-rl {argv[2 if interpreted else 1].decode()}"
    return program


def _stop(process: subprocess.Popen, children: dict[int, str], case: str, stop: int) -> dict[str, float]:
    """Send the signal (policy_node first in `sim`) and time each process's exit; seconds, DEADLINE_S + when killed."""
    exit_s = {}
    order = list(children)
    if case == "sim":
        first = [pid for pid, name in children.items() if name == "policy_node"]
        exit_s.update(_signal_and_time({pid: children[pid] for pid in first}, stop))
        order = [pid for pid in order if pid not in first]
    rest = {pid: children[pid] for pid in order}
    if stop == signal.SIGINT:
        start = time.monotonic()
        process.send_signal(signal.SIGINT)
        exit_s.update(_time_exits(rest, start))
    else:
        exit_s.update(_signal_and_time(rest, stop))
    exit_s["launcher"] = _time_launcher(process)
    return exit_s


def _signal_and_time(pids: dict[int, str], stop: int) -> dict[str, float]:
    start = time.monotonic()
    for pid in pids:
        os.kill(pid, stop)
    return _time_exits(pids, start)


def _time_exits(pids: dict[int, str], start: float) -> dict[str, float]:
    """Seconds from `start` until each process exited (a zombie has exited: its parent reaps it later)."""
    times, running = {}, dict(pids)
    while running and time.monotonic() - start < DEADLINE_S:
        for pid in [pid for pid in running if _exited(pid)]:
            times[running.pop(pid)] = round(time.monotonic() - start, 3)
        time.sleep(0.01)
    for pid, name in running.items():
        os.kill(pid, signal.SIGKILL)
        times[name] = DEADLINE_S
    return times


def _exited(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return True


def _time_launcher(process: subprocess.Popen) -> float:
    start = time.monotonic()
    try:
        process.wait(DEADLINE_S)
    except subprocess.TimeoutExpired:
        return DEADLINE_S
    return round(time.monotonic() - start, 3)


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _lines(log_dir: Path, words: tuple[str, ...]) -> list[str]:
    """The lines of the launcher's log and of the ROS log files (nodes without `output: screen` under ros2 launch)
    that hold one of `words`."""
    files = [log_dir / "launch.log", *sorted((log_dir / "ros").rglob("*.log"))]
    texts = [path.read_text(errors="replace") for path in files]
    return [line[:300] for text in texts for line in text.splitlines() if any(word in line for word in words)]


if __name__ == "__main__":
    main()
