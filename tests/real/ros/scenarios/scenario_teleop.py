"""teleop_node → policy_node: the dead-man button hands the robot to the joystick; the e-stop button latches.

argv: LOG_DIR POLICY (a quadrotor_crazyflie policy.onnx). Odometry at 100 Hz and Joy at 50 Hz from a probe. Each
phase (policy, takeover, released, success, reset, estop) lasts until its effect has shown and PHASE_COMMANDS
commands have followed, not for a fixed time, and the nodes run the profile with a generous staleness timeout
(harness.generous_profile): what a phase records is the order of the command kinds (the policy's, the operator's,
the safe one), which does not depend on the machine's speed or load. The takeover's timing logic (the operator's
action used while fresh, the policy's after) runs on stepped time in tests/real/test_node_core.py.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import rclpy
from harness import Processes, finish, generous_profile, ros_args, spin_publishing_until, spin_until
from nav_msgs.msg import Odometry
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import Joy
from std_msgs.msg import Bool, Float32MultiArray, String

AXES = [0.5, -0.5, 0.25, 2.0]
PHASE_COMMANDS = 30
"""Commands recorded in each phase once its effect has shown."""
SETTLE_S = 30.0
"""Bound on waiting for an effect: reached only when it never comes (the check then fails)."""
EXPECTED = [32767.5 + 32767.5 * min(max(a, -1.0), 1.0) for a in AXES]
"""The operator's command: the axes clipped to the action bounds, as PWM."""


def main() -> None:
    log_dir, policy = Path(sys.argv[1]), sys.argv[2]
    processes = Processes(log_dir)
    profile = generous_profile(log_dir, "quadrotor_crazyflie")
    policy_params = {"policy": policy, "profile": profile, "autostart": True, "max_missed_deadlines": 0}
    processes.start("policy_node", "policy_node", *ros_args("policy_node", "/cf1", **policy_params))
    processes.start("teleop_node", "teleop_node", *ros_args("teleop_node", "/cf1", profile=profile))
    rclpy.init()
    probe = rclpy.create_node("probe")
    commands: list[str] = []  # the kind of each command received: policy, operator or safe
    intervening: list[bool] = []
    probe.create_subscription(Float32MultiArray, "/cf1/cmd_motors", lambda m: commands.append(_kind(m.data)), 100)
    probe.create_subscription(Bool, "/cf1/intervening", lambda m: intervening.append(bool(m.data)), 100)
    events: list[str] = []
    probe.create_subscription(String, "/cf1/episode_event", lambda m: events.append(str(m.data)), 100)
    odom_pub = probe.create_publisher(Odometry, "/cf1/odom", qos_profile_sensor_data)
    joy_pub = probe.create_publisher(Joy, "/cf1/joy", 10)
    buttons = [0, 0, 0, 0]  # estop, takeover, success, reset (teleop_node's defaults)
    tick = [0]

    def publish() -> None:
        odom = Odometry()
        odom.header.stamp = probe.get_clock().now().to_msg()
        odom.pose.pose.orientation.w = 1.0
        odom_pub.publish(odom)
        tick[0] += 1
        if tick[0] % 2 == 0:
            joy_pub.publish(Joy(axes=AXES, buttons=list(buttons)))

    ready = spin_until(probe, lambda: joy_pub.get_subscription_count() > 0 and len(commands) > 0, SETTLE_S)
    ready = ready and spin_publishing_until(probe, lambda: "policy" in commands, SETTLE_S, publish, 0.01)
    phases: dict[str, list[list[object]]] = {}
    reached: dict[str, bool] = {}
    steps: list[tuple[str, list[int], Callable[[list[str]], bool]]] = [
        ("policy", [0, 0, 0, 0], lambda found: found.count("policy") >= PHASE_COMMANDS),
        ("takeover", [0, 1, 0, 0], lambda found: _after(found, "operator") >= PHASE_COMMANDS),
        ("released", [0, 0, 0, 0], lambda found: _after(found, "policy") >= PHASE_COMMANDS),
        ("success", [0, 0, 1, 0], lambda found: "success" in events and len(found) >= PHASE_COMMANDS),
        ("reset", [0, 0, 0, 1], lambda found: "reset" in events and len(found) >= PHASE_COMMANDS),
        ("estop", [1, 0, 0, 0], lambda found: _after(found, "safe") >= PHASE_COMMANDS),
    ]
    for name, pressed, done in steps:
        buttons[:] = pressed
        mark = len(commands)
        reached[name] = ready and spin_publishing_until(
            probe, lambda d=done, m=mark: d(commands[m:]), SETTLE_S, publish, 0.01
        )
        phases[name] = _runs(commands[mark:])
    spin_until(probe, lambda: bool(intervening) and intervening[-1] is False, 5.0)
    results = {
        "ready": ready,
        "reached": reached,
        "phases": phases,
        "intervening_seen": True in intervening,
        "intervening_last": intervening[-1] if intervening else None,
        "episode_events": events,
    }
    probe.destroy_node()
    finish(results, processes, ["policy_node", "teleop_node"])


def _kind(data: object) -> str:
    command = list(data)  # type: ignore[call-overload]
    if all(v == 0.0 for v in command):
        return "safe"
    if all(abs(a - b) < 0.01 for a, b in zip(command, EXPECTED, strict=True)):
        return "operator"
    return "policy"


def _after(found: list[str], kind: str) -> int:
    """Commands from the first of `kind` on (0 when none is)."""
    return len(found) - found.index(kind) if kind in found else 0


def _runs(found: list[str]) -> list[list[object]]:
    """The kinds in order, with their run lengths: [["policy", 3], ["operator", 30]]."""
    runs: list[list[object]] = []
    for kind in found:
        if runs and runs[-1][0] == kind:
            runs[-1][1] = int(runs[-1][1]) + 1  # type: ignore[call-overload]
        else:
            runs.append([kind, 1])
    return runs


if __name__ == "__main__":
    main()
