"""Process entry for the robo_rl nodes: init rclpy, spin until SIGINT/SIGTERM, then let the node stop safely.

rclpy's own signal handlers shut the context down first, after which a node can no longer publish; these nodes
install their own, so `node.stop()` still runs (policy_node sends the safe command, recorder closes its bag). A node
stopped by a signal then ends its process at once, without the interpreter's finalization (launchers escalate to
SIGTERM and SIGKILL after a few seconds).
Before rclpy.init, `run` gives Fast DDS the nodes' settings (real/ros/dds.py) unless the user configured it; the
node spins in real/ros/executor.py's executor.
"""

from __future__ import annotations

import math
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from robo_rl.real.profile import ProfileError, RobotProfile, load_profile
from robo_rl.real.ros.dds import dds_environment
from robo_rl.real.ros.executor import make_executor
from robo_rl.real.ros.params_file import ParamsFileError, check_params_file, params_files
from robo_rl.real.ros.startup import startup_arguments
from robo_rl.real.security.keystore import KeystoreError
from robo_rl.real.security.secure_mode import ENCLAVE_OVERRIDE, SecureMode, prepare, refusal, secure_mode

SPIN_PERIOD_S = 0.05
BAD_INPUT_EXIT = 2
"""Exit code of a node that cannot start because a file (profile, parameter file) or argument it was given is
bad, as for command-line usage errors."""


def run(make_node: Callable[[], Any], argv: Sequence[str] | None = None, name: str = "") -> int:
    """Create the node with `make_node()`, spin it, and return the exit code (1 when it failed to start, 2 when a
    file, ROS argument or parameter value it was given is bad, or its secure mode's keystore is; one line on stderr).
    `name`: the node's default name, whose full name is its enclave in the secure mode (real/security)."""
    args = list(sys.argv if argv is None else argv)
    os.environ.update(dds_environment(os.environ, Path.cwd()))  # the process's own environment, as a CLI's
    try:
        for path in params_files(args):
            check_params_file(path)
        mode = _secure_mode(args, name)
    except (ParamsFileError, StartupInputError, KeystoreError) as err:
        print(f"error: {err}", file=sys.stderr)
        return BAD_INPUT_EXIT
    held = HeldStderr() if mode is not None else None  # rcl's notes on the secure participant, until it is taken
    try:
        _init(args)
    except StartupInputError as err:
        if held is not None:
            held.release(show=False)
        print(f"error: {err}", file=sys.stderr)
        return BAD_INPUT_EXIT
    except BaseException:
        if held is not None:
            held.release(show=True)
        raise
    stopping: list[int] = []
    code = _spin(make_node, stopping, mode, held)
    if stopping:  # stopped, closed and shut down; a launcher's SIGTERM and SIGKILL follow within seconds
        _exit_now(code)
    return code


def _exit_now(code: int) -> None:
    """End the process without the interpreter's finalization, which takes most of a second once torch is loaded
    (sim_bridge) and longer on a busy machine."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _secure_mode(args: list[str], name: str) -> SecureMode | None:
    """The secure mode the arguments or the environment ask for, its enclave checked and its environment set."""
    start = startup_arguments(args, name or "node", ("secure", "keystore"))
    secure, keystore = start.parameters.get("secure", False), start.parameters.get("keystore", "")
    if not isinstance(secure, bool) or not isinstance(keystore, str):
        raise StartupInputError("parameters 'secure' (true/false) and 'keystore' (a folder) have the wrong type")
    mode = secure_mode(secure, keystore, start.enclave or os.environ.get(ENCLAVE_OVERRIDE, "") or start.full_name)
    if mode is not None:
        prepare(mode)
    return mode


def _init(args: list[str]) -> None:
    import rclpy
    from rclpy.impl.implementation_singleton import rclpy_implementation
    from rclpy.signals import SignalHandlerOptions

    try:
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    except rclpy_implementation.RCLError as err:  # rcl refused its arguments, e.g. a parameter file
        raise StartupInputError(" ".join(str(err).split())) from None
    except rclpy_implementation.UnknownROSArgsError as err:  # e.g. `--ros-args -x`
        raise StartupInputError(f"unknown ROS argument(s) {err}") from None


def _spin(
    make_node: Callable[[], Any], stopping: list[int], mode: SecureMode | None = None, held: HeldStderr | None = None
) -> int:
    """Spin until SIGINT or SIGTERM (appended to `stopping`) or rclpy's shutdown; the exit code."""
    import rclpy
    from rclpy.exceptions import ParameterException
    from rclpy.impl.implementation_singleton import rclpy_implementation

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda number, _frame: stopping.append(number))
    node = None
    try:
        node = _create(make_node, mode, held)
        executor = make_executor()
        executor.add_node(node)
        while not stopping and rclpy.ok():
            executor.spin_once(timeout_sec=SPIN_PERIOD_S)
        return 0
    except StartupError as err:
        print(f"error: {err}", file=sys.stderr)
        return err.exit_code
    except ParameterException as err:  # rclpy refused a `-p NAME:=VALUE` of another type than the declared one
        print(f"error: {' '.join(str(err).split())}", file=sys.stderr)
        return BAD_INPUT_EXIT
    except rclpy_implementation.RCLError as err:
        if node is not None or mode is None:
            raise
        print(f"error: {refusal(str(err), mode)}", file=sys.stderr)  # the RMW refused the secure participant
        return BAD_INPUT_EXIT
    finally:
        if node is not None:
            stop = getattr(node, "stop", None)
            if stop is not None:
                stop()
            node.destroy_node()
        rclpy.try_shutdown()


def _create(make_node: Callable[[], Any], mode: SecureMode | None, held: HeldStderr | None) -> Any:
    """`make_node()`; in the secure mode rclpy's warnings about a refused participant are dropped (the refusal is one
    line, from `_spin`), and once the RMW has taken it, what rcl printed is shown with a line naming the enclave."""
    if mode is None or held is None:
        return make_node()
    import warnings

    from rclpy.impl.implementation_singleton import rclpy_implementation

    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Failed to fini rosout publisher")
            node = make_node()
    except rclpy_implementation.RCLError:
        held.release(show=False)
        raise
    except BaseException:
        held.release(show=True)
        raise
    held.release(show=True)
    node.get_logger().info(f"secure mode: enclave {mode.enclave} of {mode.keystore} (DDS-Security, Enforce)")
    return node


class HeldStderr:
    """File descriptor 2 (where rcl logs) redirected to a temporary file until `release`."""

    def __init__(self) -> None:
        import tempfile

        self.file = tempfile.TemporaryFile()
        sys.stderr.flush()
        self.saved = os.dup(2)
        os.dup2(self.file.fileno(), 2)

    def release(self, show: bool) -> None:
        sys.stderr.flush()
        os.dup2(self.saved, 2)
        os.close(self.saved)
        self.file.seek(0)
        if show:
            sys.stderr.write(self.file.read().decode(errors="replace"))
        self.file.close()


class StartupError(RuntimeError):
    """A node cannot start (bad parameter, missing file); the message says what to fix."""

    exit_code = 1


class StartupInputError(StartupError):
    """A node cannot start because a file it reads (unreadable, malformed, wrong content) or an argument is bad."""

    exit_code = BAD_INPUT_EXIT


def positive_seconds(name: str, value: float) -> float:
    """A period parameter `name` (s): StartupInputError naming it unless finite and > 0."""
    if not 0.0 < value < math.inf:
        raise StartupInputError(f"parameter '{name}': must be a finite number of seconds > 0, got {value}")
    return value


def profile_parameter(name: str) -> RobotProfile:
    """The robot profile a node's `profile` parameter names; StartupError when it is empty or bad."""
    if not name:
        raise StartupInputError("parameter 'profile' is empty (a bundled profile name or a profile YAML path)")
    try:
        return load_profile(name)
    except ProfileError as err:
        raise StartupInputError(str(err)) from None
