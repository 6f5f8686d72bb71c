"""Turn a Plan into command lines and run them as child processes.

robo_rl's `train` runs `robo-rl train` with its parameters as flags; every other robo_rl executable is a console
script of the same name (as `ros2 run robo_rl NAME` would find it) taking the ROS arguments launch_ros 0.28.0 gives
a node (`ARGS --ros-args -r __node:=NAME -r __ns:=/NS --params-file FILE... -r FROM:=TO`), inline parameters
written to parameter files of their own as launch_ros writes them. Nodes of other packages need ROS and are never
run here.
"""

from __future__ import annotations

import contextlib
import importlib.util
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from robo_rl.launch.errors import LaunchError, Location
from robo_rl.launch.param_file import SECTION_KEY, ParamValue, Section
from robo_rl.launch.resolver import Plan, Process

PACKAGE = "robo_rl"
# `train` parameter -> `robo-rl train` flag; `preset` is the positional CONFIG. An empty string leaves the
# preset's own value, so launch files can declare optional arguments with default "".
TRAIN_FLAGS = {
    "seed": "--seed",
    "num_envs": "--num-envs",
    "max_iterations": "--max-iterations",
    "device": "--device",
    "algo": "--algo",
    "runs_root": "--runs-root",
    "robot": "--robot",
    "robot_namespace": "--robot-namespace",
    "keystore": "--keystore",
}
TRAIN_SWITCHES = {"export": "--export", "quiet": "--quiet", "secure": "--secure"}


@dataclass(frozen=True)
class Command:
    """A process of the plan as a command line.

    Attributes:
        process: the resolved process.
        argv: the command line (program first).
        missing: why it cannot run here ("" when it can).
        written: the parameter files written for the node's inline parameters, with their section.
    """

    process: Process
    argv: tuple[str, ...]
    missing: str
    written: tuple[tuple[Path, Section], ...] = ()


def plan_commands(
    plan: Plan, scripts_dir: Path, params_dir: Path, rclpy_available: bool | None = None
) -> tuple[Command, ...]:
    """The command line of every process; `scripts_dir` holds the console scripts (robo-rl, policy_node, ...);
    the nodes' inline parameters are written to files in `params_dir`, which must exist while they run.

    robo_rl's ROS nodes need rclpy in the Python of `scripts_dir`; `rclpy_available` (None: look it up in this
    Python) marks them not runnable otherwise.
    """
    if rclpy_available is None:
        rclpy_available = importlib.util.find_spec("rclpy") is not None
    commands = [
        _command(process, scripts_dir, _write_inline_params(index, process, params_dir))
        for index, process in enumerate(plan.processes, start=1)
    ]
    return tuple(command if rclpy_available else _needs_rclpy(command) for command in commands)


def _write_inline_params(index: int, process: Process, params_dir: Path) -> tuple[tuple[Path, Section], ...]:
    """Each inline section of process number `index` as launch_ros writes it: `KEY: {ros__parameters: {...}}`."""
    written = []
    if process.kind == "node" and not (process.pkg == PACKAGE and process.executable == "train"):
        for number, source in enumerate(process.param_sources):
            if isinstance(source, Path):
                continue
            path = params_dir / f"launch_params_{index}_{number}.yaml"
            key, params = source
            document = {key: {SECTION_KEY: {name: _yaml_value(value) for name, value in params.items()}}}
            path.write_text(yaml.safe_dump(document, default_flow_style=False, sort_keys=False), encoding="utf-8")
            written.append((path, source))
    return tuple(written)


def _yaml_value(value: ParamValue) -> str | bool | int | float | list[str | bool | int | float]:
    return list(value) if isinstance(value, tuple) else value


def _needs_rclpy(command: Command) -> Command:
    process = command.process
    if command.missing or process.kind != "node" or process.pkg != PACKAGE or process.executable == "train":
        return command
    reason = f"{process.executable} needs rclpy, which this Python lacks (use .venv-ros/bin/robo-rl or a ROS 2 env)"
    return Command(process, command.argv, reason, command.written)


def _command(process: Process, scripts_dir: Path, written: tuple[tuple[Path, Section], ...]) -> Command:
    if process.kind == "executable":
        return Command(process, (process.executable, *process.args), "")
    if process.pkg == PACKAGE and process.executable == "train":
        return _script_command(process, scripts_dir / "robo-rl", train_arguments(process), ())
    inline = iter(path for path, _ in written)
    files = tuple(source if isinstance(source, Path) else next(inline) for source in process.param_sources)
    node_arguments = (*process.args, *ros_arguments(process, files))
    if not process.pkg:
        found = shutil.which(process.executable) is not None
        missing = "" if found else f"{process.executable} is not on PATH"
        return Command(process, (process.executable, *node_arguments), missing, written)
    if process.pkg != PACKAGE:
        argv = ("ros2", "run", process.pkg, process.executable, *node_arguments)
        return Command(process, argv, f"package {process.pkg} needs ROS (only {PACKAGE} nodes run without it)")
    return _script_command(process, scripts_dir / process.executable, node_arguments, written)


def _script_command(
    process: Process, script: Path, arguments: tuple[str, ...], written: tuple[tuple[Path, Section], ...]
) -> Command:
    missing = "" if script.is_file() else f"{script.name} is not installed (no console script {script})"
    return Command(process, (str(script), *arguments), missing, written)


def train_arguments(process: Process) -> tuple[str, ...]:
    """`robo-rl train` arguments from a train node's parameters (`preset`, `seed`, `set`, ...)."""
    where = process.where
    if process.remaps:
        raise LaunchError("train: takes no remaps (it is not a ROS node)", where)
    argv = ["train"]
    for name, value in process.params.items():
        if value == "":
            continue
        argv += train_flag(name, value, where)
    return (*argv, *process.args)


def train_flag(name: str, value: ParamValue, where: Location | None) -> list[str]:
    """The `robo-rl train` flags of one train-node parameter."""
    if name == "preset":
        return [format_value(value)]
    if name in TRAIN_FLAGS:
        return [TRAIN_FLAGS[name], format_value(value)]
    if name in TRAIN_SWITCHES:
        return [TRAIN_SWITCHES[name]] if value is True else []
    if name == "set":
        items = value if isinstance(value, tuple) else (value,)
        return [word for item in items for word in ("--set", format_value(item))]
    known = ", ".join(sorted(["preset", "set", *TRAIN_FLAGS, *TRAIN_SWITCHES]))
    raise LaunchError(f"train: unknown parameter '{name}' (known: {known})", where)


def ros_arguments(process: Process, params_files: Sequence[Path]) -> tuple[str, ...]:
    """ROS 2 command-line arguments for a node, in launch_ros's order: its own `ros_args`, then name, namespace,
    parameter files (`params_files`: the `from:` files and the written inline ones, in declaration order), remaps."""
    argv = ["--ros-args", *process.ros_args] if process.ros_args else []
    argv.append("--ros-args")
    if process.name is not None:
        argv += ["-r", f"__node:={process.name}"]
    if process.namespace != "/":
        argv += ["-r", f"__ns:={process.namespace}"]
    for path in params_files:
        argv += ["--params-file", str(path)]
    for source, target in process.remaps:
        argv += ["-r", f"{source}:={target}"]
    return tuple(argv)


def format_value(value: ParamValue) -> str:
    """A parameter value as ROS writes it on a command line: true/false, numbers, strings, [a, b] lists."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return "[" + ", ".join(format_value(item) for item in value) + "]"
    return str(value)


def describe(commands: Sequence[Command]) -> str:
    """The plan as text: one header line and one `$ command` line per process."""
    lines = []
    for index, command in enumerate(commands, start=1):
        process = command.process
        label = process.name or process.executable
        origin = f"{process.pkg}/{process.executable}" if process.kind == "node" else "executable"
        status = f"  [not runnable: {command.missing}]" if command.missing else ""
        lines.append(f"[{index}] {label} ({origin}, namespace {process.namespace}) from {process.where}{status}")
        lines.append(f"    $ {shlex.join(command.argv)}")
        for path, (key, params) in command.written:
            values = ", ".join(f"{name}: {format_value(value)}" for name, value in params.items())
            lines.append(f"    {path.name}: {key}: {{{values}}}")
    return "\n".join(lines)


def run_commands(commands: Sequence[Command], stop_timeout_s: float = 5.0, terminal_sigint: bool = False) -> int:
    """Start every command, wait for all; Ctrl-C or SIGTERM stops the children (SIGINT, then SIGTERM, then
    SIGKILL, `stop_timeout_s` apart), as `ros2 launch` does.

    `terminal_sigint`: the launcher runs in the foreground of a terminal, whose Ctrl-C reaches every child already;
    the children then get no second SIGINT from here (a train node takes a second one as "stop at once"), only the
    SIGTERM and SIGKILL that follow if they are still running (ros2 launch's `due_to_sigint`). Returns the first
    non-zero exit status (0 when all succeed; 130 after Ctrl-C or SIGTERM).
    """
    children: list[subprocess.Popen] = []
    main_thread = threading.current_thread() is threading.main_thread()  # only it may set signal handlers
    previous = signal.signal(signal.SIGTERM, _raise_terminated) if main_thread else None
    try:
        for command in commands:
            with _signals_held(main_thread):  # a stop signal lands once the child is in `children`, never between
                children.append(_start(command, children, stop_timeout_s))
        codes = [child.wait() for child in children]
    except KeyboardInterrupt:
        stop_processes(children, stop_timeout_s, send_sigint=not terminal_sigint)
        return 130
    except Terminated:
        stop_processes(children, stop_timeout_s)
        return 130
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
    return next((code for code in codes if code != 0), 0)


@contextlib.contextmanager
def _signals_held(main_thread: bool) -> Iterator[None]:
    """SIGINT and SIGTERM held back while the block runs (in the main thread, where their handlers run), delivered
    after it. The children started meanwhile unblock them (`_release_stop_signals`)."""
    if not main_thread:
        yield
        return
    held = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _release_stop_signals() -> None:
    """In a child before it runs its program: unblock what `_signals_held` blocked (a signal mask is inherited)."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})


class Terminated(Exception):
    """The launcher received SIGTERM (raised in the main thread by its handler)."""


def _raise_terminated(_signum: int, _frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one stop sequence; a second SIGTERM must not cut it short
    raise Terminated


def _start(command: Command, started: Sequence[subprocess.Popen], stop_timeout_s: float) -> subprocess.Popen:
    """Start one command; if it cannot start, stop the ones already running and raise LaunchError."""
    try:
        return subprocess.Popen(command.argv, preexec_fn=_release_stop_signals)  # the launcher runs no threads
    except OSError as err:
        stop_processes(started, stop_timeout_s)
        raise LaunchError(f"cannot start {command.argv[0]}: {err.strerror or err}", command.process.where) from None


def stop_processes(children: Sequence[subprocess.Popen], timeout_s: float, send_sigint: bool = True) -> None:
    """Stop running children: SIGINT (as Ctrl-C would; skipped without `send_sigint`, where they already got the
    terminal's), then SIGTERM, then SIGKILL, each after `timeout_s`."""
    steps: list[Callable[[subprocess.Popen], None]] = [lambda c: c.terminate(), lambda c: c.kill()]
    if send_sigint:
        steps.insert(0, lambda c: c.send_signal(signal.SIGINT))
    else:
        _wait_all(children, timeout_s)
    for stop in steps:
        running = [child for child in children if child.poll() is None]
        for child in running:
            stop(child)
        _wait_all(running, timeout_s)


def _wait_all(children: Sequence[subprocess.Popen], timeout_s: float) -> None:
    """Wait for each child for up to `timeout_s` (from the start of the wait for all)."""
    deadline = time.monotonic() + timeout_s
    for child in children:
        try:
            child.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
