"""Process entry for the robo_rl nodes: init rclpy, spin until SIGINT/SIGTERM, then let the node stop safely.

rclpy's own signal handlers shut the context down first, after which a node can no longer publish; these nodes
install their own, so `node.stop()` still runs (policy_node sends the safe command, recorder closes its bag).
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable, Sequence
from typing import Any

from robo_rl.real.profile import ProfileError, RobotProfile, load_profile

SPIN_PERIOD_S = 0.05


def run(make_node: Callable[[], Any], argv: Sequence[str] | None = None) -> int:
    """Create the node with `make_node()`, spin it, and return the exit code (1 when it failed to start)."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.signals import SignalHandlerOptions

    rclpy.init(args=list(sys.argv if argv is None else argv), signal_handler_options=SignalHandlerOptions.NO)
    stopping: list[int] = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda number, _frame: stopping.append(number))
    node = None
    try:
        node = make_node()
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        while not stopping and rclpy.ok():
            executor.spin_once(timeout_sec=SPIN_PERIOD_S)
        return 0
    except StartupError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    finally:
        if node is not None:
            stop = getattr(node, "stop", None)
            if stop is not None:
                stop()
            node.destroy_node()
        rclpy.try_shutdown()


class StartupError(RuntimeError):
    """A node cannot start (bad parameter, missing file); the message says what to fix."""


def profile_parameter(name: str) -> RobotProfile:
    """The robot profile a node's `profile` parameter names; StartupError when it is empty or bad."""
    if not name:
        raise StartupError("parameter 'profile' is empty (a bundled profile name or a profile YAML path)")
    try:
        return load_profile(name)
    except ProfileError as err:
        raise StartupError(str(err)) from None
