"""The executor the robo_rl nodes spin in: rclpy's EventsExecutor where this rclpy has it, else the single-threaded one.

rclpy's SingleThreadedExecutor rebuilds its wait set in Python for every batch of ready callbacks (about half of a
policy_node's CPU time at 500 Hz, and most of its tail latency). The EventsExecutor (rclpy.experimental, from
Kilted on) keeps its queue in C++ and runs callbacks in the order their events arrived; both run every callback in
the thread that spins, so the nodes' callbacks never run concurrently either way.
"""

from __future__ import annotations

from typing import Any


def make_executor() -> Any:  # rclpy.executors.Executor or the EventsExecutor, which only looks like one
    """A new executor for one node process (needs rclpy initialized)."""
    try:
        from rclpy.experimental import EventsExecutor
    except ImportError:  # Humble, Jazzy
        from rclpy.executors import SingleThreadedExecutor

        return SingleThreadedExecutor()
    return EventsExecutor()
