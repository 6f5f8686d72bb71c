"""policy_node as a process: lifecycle, one command per odometry message within bounds, stale and NaN inputs, e-stop,
profile mismatch.

argv: LOG_DIR POLICY (a quadrotor_crazyflie policy.onnx). Publishes odom at 100 Hz from a probe node and records
every command (cmd_motors, Float32MultiArray PWM) and diagnostic with its arrival time. The node runs the bundled
profile with a generous staleness timeout (harness.generous_profile) and no deadline latch, and each phase waits for
its effect (the safe command, the e-stop) rather than for a fixed time, so that what it records does not depend on
the machine's speed or load; the wall-clock figures (rates, the first safe command's delay) are measured for
bench/ros_timing.py, not asserted.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from harness import (
    Processes,
    change_state,
    finish,
    generous_profile,
    get_state,
    ros_args,
    spin_for,
    spin_publishing_until,
    spin_until,
)
from nav_msgs.msg import Odometry
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from std_msgs.msg import Bool, Float32MultiArray

PERIOD = 0.01  # the profile's dt
SAFE_PWM = 0.0  # motors off: action -1 -> 32767.5 - 32767.5
GOOD_MESSAGES = 200
"""Odometry messages of the good phase."""
FOLLOWING = 30
"""Commands recorded after an effect (the first stale or e-stop safe command), to check that it holds."""
SETTLE_S = 30.0
"""Bound on waiting for an effect: reached only when it never comes (the check then fails)."""
NODE = "/cf1/policy_node"


def _safe(command: tuple[float, list[float]]) -> bool:
    return all(v == SAFE_PWM for v in command[1])


def _rate_hz(commands: list[tuple[float, list[float]]]) -> float:
    """Wall-clock rate of `commands` (a measurement for the benchmark, never asserted)."""
    return (len(commands) - 1) / (commands[-1][0] - commands[0][0]) if len(commands) > 1 else 0.0


def main() -> None:
    log_dir, policy = Path(sys.argv[1]), sys.argv[2]
    processes = Processes(log_dir)
    profile = generous_profile(log_dir, "quadrotor_crazyflie")
    params = {"policy": policy, "profile": profile, "diagnostics_period": 0.2, "max_missed_deadlines": 0}
    processes.start("policy_node", "policy_node", *ros_args("policy_node", "/cf1", **params))
    processes.start("mismatch", "policy_node", *ros_args("mismatch", "/car", policy=policy, profile="rc_car"))
    rclpy.init()
    probe = rclpy.create_node("probe")
    commands: list[tuple[float, list[float]]] = []
    diagnostics: list[tuple[float, str, int, str, dict[str, str]]] = []
    probe.create_subscription(
        Float32MultiArray, "/cf1/cmd_motors", lambda m: commands.append((time.monotonic(), list(m.data))), 100
    )

    def on_diagnostics(message: DiagnosticArray) -> None:
        for status in message.status:
            values = {kv.key: kv.value for kv in status.values}
            diagnostics.append((time.monotonic(), status.name, status.level[0], status.message, values))

    probe.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 100)
    odom_pub = probe.create_publisher(Odometry, "/cf1/odom", qos_profile_sensor_data)
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    estop_pub = probe.create_publisher(Bool, "/cf1/estop", latched)
    value = {"x": 0.05}
    sent = {"count": 0, "last": 0.0}

    def publish_odom() -> None:
        message = Odometry()
        message.header.stamp = probe.get_clock().now().to_msg()
        message.pose.pose.position.x = value["x"]
        message.pose.pose.orientation.w = 1.0
        odom_pub.publish(message)
        sent["count"] += 1
        sent["last"] = time.monotonic()

    def publish_until(condition: Callable[[], bool]) -> bool:
        return spin_publishing_until(probe, condition, SETTLE_S, publish_odom, PERIOD)

    results: dict = {"states": {}, "staleness_timeout": _staleness(profile)}
    results["states"]["start"] = get_state(probe, NODE)
    results["configure"] = change_state(probe, NODE, "configure")
    results["states"]["configured"] = get_state(probe, NODE)
    spin_until(probe, lambda: odom_pub.get_subscription_count() > 0, 10.0)
    spin_for(probe, 0.5, publish_odom, PERIOD)
    results["commands_while_inactive"] = len(commands)
    results["activate"] = change_state(probe, NODE, "activate")
    results["states"]["activated"] = get_state(probe, NODE)
    if not results["activate"]:  # nothing to measure; the test shows the states and the node's log
        probe.destroy_node()
        finish(results, processes, ["policy_node", "mismatch"])

    # 1. Good odometry: one command per message, the policy's, within PWM bounds. Counted from the policy's first
    # command (safe ones before it: the odometry went stale while the activation took its time).
    mark, first_sent = len(commands), sent["count"]
    publish_until(lambda: sent["count"] - first_sent >= GOOD_MESSAGES)
    spin_for(probe, 0.2)  # the answers still on their way
    phase = commands[mark:]
    window = phase[next((i for i, c in enumerate(phase) if not _safe(c)), len(phase)) :]
    results["odom_sent_good"] = GOOD_MESSAGES
    results["commands_good"] = len(window)
    results["rate_hz"] = _rate_hz(window)
    results["pwm_min"] = min((min(c[1]) for c in window), default=math.nan)
    results["pwm_max"] = max((max(c[1]) for c in window), default=math.nan)
    results["safe_in_good"] = sum(_safe(c) for c in window)

    # 2. Odometry stops: the safe command once the staleness timeout has passed, repeated without input.
    last_odom, mark = sent["last"], len(commands)
    got = spin_until(probe, lambda: any(_safe(c) for c in commands[mark:]), SETTLE_S)
    first = next((i for i in range(mark, len(commands)) if _safe(commands[i])), None) if got else None
    if first is not None:
        spin_until(probe, lambda: len(commands) >= first + FOLLOWING, SETTLE_S)
    stale = commands[first:] if first is not None else []
    results["stale_first_safe_after_s"] = stale[0][0] - last_odom if stale else None
    results["stale_count"] = len(stale)
    results["stale_rate_hz"] = _rate_hz(stale)
    results["stale_all_safe"] = bool(stale) and all(_safe(c) for c in stale)
    spin_until(probe, lambda: _matching(diagnostics, NODE, last_odom, "stale observation") is not None, SETTLE_S)
    stale_status = _matching(diagnostics, NODE, last_odom, "stale observation")
    results["stale_diagnostic"] = None if stale_status is None else stale_status["message"]

    # 3. NaN in the odometry: safe commands (as while stale) and an ERROR diagnostic.
    value["x"] = float("nan")
    mark, nan_at = len(commands), time.monotonic()
    publish_until(lambda: _matching(diagnostics, NODE, nan_at, "non-finite") is not None)
    publish_until(lambda: len(commands) >= mark + FOLLOWING)
    results["nan_all_safe"] = len(commands) > mark and all(_safe(c) for c in commands[mark:])
    results["nan_diagnostic"] = _matching(diagnostics, NODE, nan_at, "non-finite")

    # 4. Good odometry again: the policy's commands come back (nothing latched).
    value["x"] = 0.05
    mark = len(commands)
    publish_until(lambda: sum(not _safe(c) for c in commands[mark:]) >= FOLLOWING)
    results["recovered_non_safe"] = sum(not _safe(c) for c in commands[mark:])

    # 5. The e-stop: from its first safe command on, every command is safe although the odometry is fine.
    estop_pub.publish(Bool(data=True))
    mark, estop_at = len(commands), time.monotonic()
    publish_until(lambda: any(_safe(c) for c in commands[mark:]))
    first = next((i for i in range(mark, len(commands)) if _safe(commands[i])), len(commands))
    publish_until(lambda: len(commands) >= first + FOLLOWING)
    estopped = commands[first:]
    results["estop_commands"] = len(estopped)
    results["estop_all_safe"] = bool(estopped) and all(_safe(c) for c in estopped)
    publish_until(lambda: _matching(diagnostics, NODE, estop_at, "e-stop") is not None)
    results["estop_diagnostic"] = _matching(diagnostics, NODE, estop_at, "e-stop")

    # 6. Deactivate: once the commands already sent have arrived (0.5 s without one), none while odometry flows.
    results["deactivate"] = change_state(probe, NODE, "deactivate")
    results["deactivated_quiet"] = publish_until(lambda: time.monotonic() - commands[-1][0] > 0.5 if commands else True)
    quiet = len(commands)
    spin_for(probe, 0.5, publish_odom, PERIOD)
    results["commands_after_deactivate"] = len(commands) - quiet
    estop_pub.publish(Bool(data=False))
    results["reactivate"] = change_state(probe, NODE, "activate")
    mark = len(commands)
    publish_until(lambda: sum(not _safe(c) for c in commands[mark:]) >= FOLLOWING)
    results["resumed_non_safe"] = sum(not _safe(c) for c in commands[mark:])
    results["states"]["reactivated"] = get_state(probe, NODE)

    # 7. The node whose profile does not fit the policy refuses to configure, stays unconfigured and says why.
    results["mismatch_configure"] = change_state(probe, "/car/mismatch", "configure")
    spin_until(probe, lambda: _matching(diagnostics, "/car/mismatch", 0.0, "configure failed") is not None, SETTLE_S)
    results["states"]["mismatch"] = get_state(probe, "/car/mismatch")
    results["mismatch_diagnostic"] = _matching(diagnostics, "/car/mismatch", 0.0, "configure failed")
    results["cleanup_exit_commands"] = len(commands)
    probe.destroy_node()
    finish(results, processes, ["policy_node", "mismatch"])


def _staleness(profile: str) -> float:
    from robo_rl.real.profile import load_profile

    return load_profile(profile).staleness_timeout


def _matching(diagnostics: list, name: str, after: float, text: str) -> dict | None:
    """The first status of `name` received after `after` whose message contains `text`."""
    for received, status_name, level, message, values in diagnostics:
        if status_name == name and received > after and text in message:
            return {"level": level, "message": message, "values": values}
    return None


if __name__ == "__main__":
    main()
