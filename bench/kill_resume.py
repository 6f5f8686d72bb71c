"""SIGKILL `robo-rl train` at random moments and resume it: does every resume succeed, and how much is lost?

For each algorithm (PPO and SAC on the pendulum, small batches, the SAC replay ring wrapping), one run is
started with `robo-rl train` and killed with SIGKILL `--kills / 2` times, each time `--resume`d with
`robo-rl train --resume RUN`. A kill falls after the process under test has written its first checkpoint, plus a
random (seeded) delay of up to twice `save_every_s`, so that kills also land during saves. After each kill:

- latest.pt and previous.pt must load, with the replay chunk files they name (SAC), and a buffer that belongs to
  its checkpoint (as many transitions as the checkpoint's env steps);
- the seconds lost are the kill time minus the `saved_at` of the latest.pt the resume starts from (the training
  done since that checkpoint's state was taken);
- the next resume must write a checkpoint of its own (else it failed), and print no warning (no fallback).

At the end each run is resumed to completion (exit code 0), and its metric rows must be strictly increasing in
iteration (PPO: exactly 1, 2, ..., N). The two runs are killed in parallel threads, each process with one torch
thread. `--launcher fork` (what the test uses) runs each command as `robo_rl.cli.main.main(argv)` in a process
forked from a server that imported torch and robo_rl once, which saves the ~3-8 s of imports per process (a child
is still a process of its own, killed with SIGKILL); `--launcher exec` runs the installed `robo-rl` executable.

    python bench/kill_resume.py [--kills 20] [--save-every-s 1.0] [--seed 0] [--launcher exec]

Writes bench/results/kill_resume.json and prints the table.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

RESULTS = Path(__file__).parent / "results" / "kill_resume.json"
ROBO_RL = Path(sys.executable).with_name("robo-rl")
CHILD_ENV = {"OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE"}
"""One torch thread per training process: the two runs train side by side."""
FINISH_ITERATIONS = {"ppo": 5, "sac": 200}
"""Iterations the last resume trains past its checkpoint before it ends on its own."""


def train_argv(algo: str, root: Path, save_every_s: float) -> list[str]:
    """`robo-rl train` of a small pendulum run that never stops on its own (no target, no periodic evaluation)."""
    common = ["--max-iterations", "1000000", "--runs-root", str(root), "--quiet"]
    if algo == "ppo":
        sets = [
            "runner.loop.target_return=null",
            "runner.loop.eval_interval=0",
            f"runner.loop.save_every_s={save_every_s}",
        ]
        return ["train", "pendulum_ppo", "--num-envs", "16", *common, *_sets(sets)]
    sets = [
        "off_policy.loop.target_return=null",
        "off_policy.loop.eval_interval=0",
        f"off_policy.loop.save_every_s={save_every_s}",
        "off_policy.learning_starts=100",
        "off_policy.buffer_capacity=3000",  # the ring wraps within a few seconds
    ]
    return ["train", "pendulum_sac", "--num-envs", "4", *common, *_sets(sets)]


def _sets(pairs: list[str]) -> list[str]:
    return [arg for pair in pairs for arg in ("--set", pair)]


def resume_argv(run: Path, max_iterations: int | None = None) -> list[str]:
    extra = [] if max_iterations is None else ["--max-iterations", str(max_iterations)]
    return ["train", "--resume", str(run), "--quiet", *extra]


# Launching and killing training processes


class Process(Protocol):
    pid: int

    def poll(self) -> int | None: ...
    def wait(self, timeout: float) -> int: ...


class Launcher(Protocol):
    def start(self, argv: list[str], log: Path) -> Process: ...
    def close(self) -> None: ...


class ExecLauncher:
    """Runs the installed `robo-rl` executable."""

    def start(self, argv: list[str], log: Path) -> Process:
        with open(log, "a") as out:
            env = {**os.environ, **CHILD_ENV}
            return subprocess.Popen([str(ROBO_RL), *argv], stdout=out, stderr=subprocess.STDOUT, env=env)

    def close(self) -> None:
        pass


class ForkServer:
    """A warm Python process that forks one child per command; the child runs `robo_rl.cli.main.main(argv)`."""

    def __init__(self) -> None:
        command = [sys.executable, str(Path(__file__).resolve()), "--serve"]
        env = {**os.environ, **CHILD_ENV}
        self._server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self._lock = threading.Lock()
        self.ask({"ping": True})  # wait for its imports

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self._server.stdin is not None and self._server.stdout is not None
        with self._lock:
            self._server.stdin.write(json.dumps(request) + "\n")
            self._server.stdin.flush()
            line = self._server.stdout.readline()
        if not line:
            raise RuntimeError(f"the fork server exited with code {self._server.wait()}")
        return json.loads(line)

    def start(self, argv: list[str], log: Path) -> Process:
        return ForkedProcess(self, self.ask({"run": argv, "log": str(log)})["pid"])

    def close(self) -> None:
        if self._server.stdin is not None:
            self._server.stdin.close()
        self._server.wait(timeout=30)


class ForkedProcess:
    """A child of the fork server (which reaps it, so its pid stays valid until `poll` reports its end)."""

    def __init__(self, server: ForkServer, pid: int) -> None:
        self.server, self.pid = server, pid

    def poll(self) -> int | None:
        return self.server.ask({"poll": self.pid})["code"]

    def wait(self, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while (code := self.poll()) is None:
            if time.monotonic() > deadline:
                raise TimeoutError(f"process {self.pid} still runs after {timeout} s")
            time.sleep(0.02)
        return code


def serve() -> None:
    """The fork server's loop: one JSON request per stdin line, one JSON answer per stdout line."""
    import torch

    from robo_rl.cli.main import build_parser

    build_parser()  # imports every command's module
    torch.optim.Adam([torch.zeros(1, requires_grad=True)])  # the first optimizer imports torch._dynamo (seconds)
    codes: dict[int, int] = {}
    for line in sys.stdin:
        request = json.loads(line)
        if "run" in request:
            answer: dict[str, Any] = {"pid": _fork(request["run"], Path(request["log"]))}
        elif "poll" in request:
            answer = {"code": _poll(int(request["poll"]), codes)}
        else:
            answer = {"ok": True}
        print(json.dumps(answer), flush=True)


def _fork(argv: list[str], log: Path) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _run_child(argv, log)
    return pid


def _run_child(argv: list[str], log: Path) -> None:
    """In the forked child: output to `log`, run the command, exit with its code (never returns)."""
    code = 1
    try:
        out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        from robo_rl.cli.main import main

        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _poll(pid: int, codes: dict[int, int]) -> int | None:
    if pid not in codes:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == 0:
            return None
        codes[pid] = os.waitstatus_to_exitcode(status)
    return codes[pid]


# One run, killed and resumed


@dataclass
class Kill:
    number: int
    algo: str
    last_row: int
    """Iteration of the last metrics row at the kill (SAC logs every 100 iterations)."""
    resumed_from: int
    """Iteration of the latest.pt the next resume starts from."""
    seconds_lost: float
    """Kill time minus the time that checkpoint's state was taken."""
    iteration_s: float | None
    """Mean seconds per iteration between previous.pt and latest.pt."""


class Numbering:
    """Kill numbers in the order the kills happen, across threads."""

    def __init__(self) -> None:
        self._next = 1
        self._lock = threading.Lock()

    def take(self) -> int:
        with self._lock:
            self._next += 1
            return self._next - 1


def kill_run(
    algo: str, kills: int, save_every_s: float, seed: int, root: Path, launcher: Launcher, numbering: Numbering
) -> tuple[list[Kill], Path]:
    """Start one run, SIGKILL and resume it `kills` times, then resume it to completion; its kills and directory."""
    rng = random.Random(f"{seed}-{algo}")
    logs = root / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    run: Path | None = None
    records: list[Kill] = []
    for k in range(kills):
        log = logs / f"{algo}-{k:02d}.log"
        before = None if run is None else _inode(run)
        process = launcher.start(train_argv(algo, root, save_every_s) if run is None else resume_argv(run), log)
        try:
            run = run or _wait_for_run(root / f"pendulum_{algo}", process, log)
            _wait_for_new_checkpoint(run, before, process, log)
            time.sleep(rng.uniform(0.0, 2.0 * save_every_s))
        finally:  # also when something failed: no training process outlives the experiment
            killed_at = _kill(process)
        records.append(_inspect(run, killed_at, algo, numbering.take()))
    assert run is not None
    _finish(run, records[-1].resumed_from + FINISH_ITERATIONS[algo], launcher, logs / f"{algo}-finish.log")
    return records, run


TIMEOUT_S = 180.0
"""Longest wait for a process to create its run directory or its first checkpoint."""


def _kill(process: Process) -> float:
    """SIGKILL `process` unless it ended; the time of the kill."""
    if process.poll() is None:
        os.kill(process.pid, signal.SIGKILL)
    killed_at = time.time()
    process.wait(timeout=60)
    return killed_at


def _inode(run: Path) -> int | None:
    try:
        return (run / "checkpoints" / "latest.pt").stat().st_ino
    except FileNotFoundError:
        return None


def _wait_for_run(parent: Path, process: Process, log: Path) -> Path:
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        runs = sorted(parent.glob("*")) if parent.is_dir() else []
        if runs:
            return runs[0]
        _check_alive(process, log)
        time.sleep(0.02)
    raise TimeoutError(f"no run directory under {parent} after {TIMEOUT_S} s; {log}: {_tail(log)}")


def _wait_for_new_checkpoint(run: Path, before: int | None, process: Process, log: Path) -> None:
    """Until latest.pt is a file this process wrote (every save makes a new file, so a new inode)."""
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        inode = _inode(run)
        if inode is not None and inode != before:
            return
        _check_alive(process, log)
        time.sleep(0.01)
    raise TimeoutError(f"{run}: no new checkpoint after {TIMEOUT_S} s; {log}: {_tail(log)}")


def _check_alive(process: Process, log: Path) -> None:
    code = process.poll()
    if code is not None:
        raise RuntimeError(f"`robo-rl train` exited with code {code} before its first checkpoint: {_tail(log)}")


def _tail(log: Path, lines: int = 8) -> str:
    return " | ".join(log.read_text().splitlines()[-lines:]) if log.is_file() else "(no output)"


def _inspect(run: Path, killed_at: float, algo: str, number: int) -> Kill:
    """Check what a kill left (checkpoints load, rows in order) and measure what it cost."""
    rows = metric_iterations(run)
    assert_increasing(rows, run)
    latest = load_checked(run / "checkpoints" / "latest.pt")
    previous_path = run / "checkpoints" / "previous.pt"
    previous = load_checked(previous_path) if previous_path.is_file() else None
    iteration_s = None
    if previous is not None and latest["iteration"] > previous["iteration"]:
        iteration_s = (latest["wall_time"] - previous["wall_time"]) / (latest["iteration"] - previous["iteration"])
    lost = killed_at - latest["saved_at"]
    return Kill(number, algo, rows[-1] if rows else 0, int(latest["iteration"]), lost, iteration_s)


def load_checked(path: Path) -> dict[str, Any]:
    """A checkpoint and the replay chunk files it names must load; its buffer must hold its env steps."""
    from robo_rl.storage import checkpoint
    from robo_rl.storage.replay_log import ReplayLog, is_manifest, replay_directory

    state = checkpoint.load(path, "cpu", required=("iteration", checkpoint.SAVED_AT))
    if is_manifest(state.get("buffer")):
        history = ReplayLog(replay_directory(path)).restore(state["buffer"])
        if history.added != state["env_steps"]:
            raise AssertionError(f"{path}: replay buffer of {history.added} transitions, {state['env_steps']} steps")
    return state


def metric_iterations(run: Path) -> list[int]:
    path = run / "metrics.jsonl"
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(int(json.loads(line)["iteration"]))
        except json.JSONDecodeError:  # a row the kill cut short: --resume drops it
            continue
    return rows


def assert_increasing(rows: list[int], run: Path) -> None:
    bad = [(a, b) for a, b in itertools.pairwise(rows) if b <= a]
    if bad:
        raise AssertionError(f"{run}/metrics.jsonl: rows out of order or repeated: {bad[:5]}")


def _finish(run: Path, max_iterations: int, launcher: Launcher, log: Path) -> None:
    process = launcher.start(resume_argv(run, max_iterations), log)
    try:
        code = process.wait(timeout=TIMEOUT_S)
    finally:
        _kill(process)
    if code != 0:
        raise AssertionError(f"the final resume of {run} exited with code {code}: {_tail(log)}")
    assert int(load_checked(run / "checkpoints" / "latest.pt")["iteration"]) == max_iterations


def run_experiment(
    kills: int, save_every_s: float, seed: int, root: Path, launcher: Launcher, algos: tuple[str, ...] = ("ppo", "sac")
) -> tuple[list[Kill], dict[str, Path]]:
    """`kills` SIGKILLs split between one run per algorithm, the runs side by side; every kill, and the runs."""
    numbering = Numbering()
    results: dict[str, tuple[list[Kill], Path]] = {}
    errors: list[BaseException] = []

    def one(algo: str, count: int) -> None:
        try:
            results[algo] = kill_run(algo, count, save_every_s, seed, root, launcher, numbering)
        except BaseException as err:
            errors.append(err)

    counts = [kills // len(algos) + (i < kills % len(algos)) for i in range(len(algos))]
    threads = [threading.Thread(target=one, args=pair) for pair in zip(algos, counts, strict=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    records = sorted((kill for algo in algos for kill in results[algo][0]), key=lambda kill: kill.number)
    return records, {algo: results[algo][1] for algo in algos}


def check_runs(runs: dict[str, Path]) -> None:
    """After the final resumes: rows strictly increasing, PPO's exactly 1..N, and no resume fell back."""
    for algo, run in runs.items():
        rows = metric_iterations(run)
        assert_increasing(rows, run)
        if algo == "ppo":
            assert rows == list(range(1, rows[-1] + 1)), f"{run}: PPO rows are not 1..{rows[-1]}"
    for log in sorted(next(iter(runs.values())).parent.parent.glob("logs/*.log")):
        warnings = [line for line in log.read_text().splitlines() if "warning" in line]
        assert not warnings, f"{log}: {warnings}"


def table(records: list[Kill]) -> str:
    lines = [f"{'kill':>4}  {'algo':<4}  {'last row at kill':>16}  {'resumed from':>12}  {'s lost':>6}  {'s/iter':>6}"]
    for k in records:
        per = "-" if k.iteration_s is None else f"{k.iteration_s:.3f}"
        lines.append(
            f"{k.number:>4}  {k.algo:<4}  {k.last_row:>16}  {k.resumed_from:>12}  {k.seconds_lost:>6.2f}  {per:>6}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--save-every-s", type=float, default=1.0, help="runner/off_policy.loop.save_every_s")
    parser.add_argument("--seed", type=int, default=0, help="seeds the kill delays")
    parser.add_argument("--launcher", choices=("fork", "exec"), default="exec")
    parser.add_argument("--root", type=Path, help="where the runs go (default: a temporary directory)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
        return
    import tempfile

    from machine import machine_info, warn_if_busy

    load = warn_if_busy()
    root = args.root or Path(tempfile.mkdtemp(prefix="kill_resume-"))
    launcher: Launcher = ForkServer() if args.launcher == "fork" else ExecLauncher()
    started = time.monotonic()
    try:
        records, runs = run_experiment(args.kills, args.save_every_s, args.seed, root, launcher)
    finally:
        launcher.close()
    check_runs(runs)
    print(table(records))
    lost = [k.seconds_lost for k in records]
    print(f"{len(records)} kills, every resume succeeded; most seconds lost {max(lost):.2f}", end="")
    print(f" (save_every_s {args.save_every_s})")
    result = {
        "machine": machine_info(),
        "load_average_at_start": load,
        "save_every_s": args.save_every_s,
        "seed": args.seed,
        "launcher": args.launcher,
        "wall_s": time.monotonic() - started,
        "max_seconds_lost": max(lost),
        "kills": [asdict(k) for k in records],
        "runs": {algo: str(run) for algo, run in runs.items()},
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
