"""policy_node as a process: lifecycle, command rate and bounds, stale and NaN inputs, e-stop, profile mismatch.

argv: LOG_DIR POLICY (a quadrotor_crazyflie policy.onnx). Publishes odom at 100 Hz from a probe node and records
every command (cmd_motors, Float32MultiArray PWM) and diagnostic with its arrival time.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from harness import Processes, change_state, finish, get_state, ros_args, spin_for, spin_until
from nav_msgs.msg import Odometry
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from std_msgs.msg import Bool, Float32MultiArray

PERIOD = 0.01  # the profile's dt
SAFE_PWM = 0.0  # motors off: action -1 -> 32767.5 - 32767.5


def main() -> None:
    log_dir, policy = Path(sys.argv[1]), sys.argv[2]
    processes = Processes(log_dir)
    params = {"policy": policy, "profile": "quadrotor_crazyflie", "diagnostics_period": 0.2}
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

    def publish_odom() -> None:
        message = Odometry()
        message.header.stamp = probe.get_clock().now().to_msg()
        message.pose.pose.position.x = value["x"]
        message.pose.pose.orientation.w = 1.0
        odom_pub.publish(message)

    results: dict = {"states": {}}
    results["states"]["start"] = get_state(probe, "/cf1/policy_node")
    results["configure"] = change_state(probe, "/cf1/policy_node", "configure")
    results["states"]["configured"] = get_state(probe, "/cf1/policy_node")
    spin_until(probe, lambda: odom_pub.get_subscription_count() > 0, 10.0)
    spin_for(probe, 0.5, publish_odom, PERIOD)
    results["commands_while_inactive"] = len(commands)
    results["activate"] = change_state(probe, "/cf1/policy_node", "activate")
    results["states"]["activated"] = get_state(probe, "/cf1/policy_node")

    # 1. Good odometry at 100 Hz for 2 s: one command per message, within PWM bounds.
    start = time.monotonic()
    spin_for(probe, 2.0, publish_odom, PERIOD)
    window = [c for c in commands if c[0] >= start + 0.5]
    results["rate_hz"] = (len(window) - 1) / (window[-1][0] - window[0][0]) if len(window) > 1 else 0.0
    results["pwm_min"] = min(min(c[1]) for c in window)
    results["pwm_max"] = max(max(c[1]) for c in window)
    results["commands_good"] = len(window)
    results["safe_in_good"] = sum(all(v == SAFE_PWM for v in c[1]) for c in window)

    # 2. Odometry stops: safe commands within one period of the staleness timeout, at the control rate.
    last_odom = time.monotonic()
    spin_for(probe, 0.5)
    after = [c for c in commands if c[0] > last_odom]
    first_safe = next((c[0] for c in after if all(v == SAFE_PWM for v in c[1])), None)
    results["stale_first_safe_after_s"] = None if first_safe is None else first_safe - last_odom
    late = [c for c in after if c[0] > last_odom + 0.2]
    results["stale_rate_hz"] = len(late) / 0.3
    results["stale_all_safe"] = all(all(v == SAFE_PWM for v in c[1]) for c in late)
    results["stale_diagnostic"] = _last_message(diagnostics, "/cf1/policy_node")

    # 3. NaN in the odometry: safe command and an ERROR diagnostic.
    value["x"] = float("nan")
    mark = time.monotonic()
    spin_for(probe, 0.3, publish_odom, PERIOD)
    nan_commands = [c for c in commands if c[0] > mark + 0.05]
    results["nan_all_safe"] = bool(nan_commands) and all(all(v == SAFE_PWM for v in c[1]) for c in nan_commands)
    results["nan_diagnostic"] = _last_status(diagnostics, "/cf1/policy_node", after=mark)

    # 4. Good odometry again, then the e-stop: safe from then on although the inputs are fine.
    value["x"] = 0.05
    spin_for(probe, 0.3, publish_odom, PERIOD)
    results["recovered_non_safe"] = sum(not all(v == SAFE_PWM for v in c[1]) for c in commands if c[0] > mark + 0.35)
    estop_pub.publish(Bool(data=True))
    mark = time.monotonic()
    spin_for(probe, 0.5, publish_odom, PERIOD)
    estopped = [c for c in commands if c[0] > mark + 0.1]
    results["estop_commands"] = len(estopped)
    results["estop_all_safe"] = all(all(v == SAFE_PWM for v in c[1]) for c in estopped)
    results["estop_diagnostic"] = _last_status(diagnostics, "/cf1/policy_node", after=mark)

    # 5. Deactivate: one safe command, then silence; activate again clears the e-stop.
    results["deactivate"] = change_state(probe, "/cf1/policy_node", "deactivate")
    mark = time.monotonic()
    spin_for(probe, 0.5, publish_odom, PERIOD)
    results["commands_after_deactivate"] = len([c for c in commands if c[0] > mark + 0.1])
    estop_pub.publish(Bool(data=False))
    results["reactivate"] = change_state(probe, "/cf1/policy_node", "activate")
    mark = time.monotonic()
    spin_for(probe, 0.5, publish_odom, PERIOD)
    resumed = [c for c in commands if c[0] > mark + 0.1]
    results["resumed_non_safe"] = sum(not all(v == SAFE_PWM for v in c[1]) for c in resumed)
    results["states"]["reactivated"] = get_state(probe, "/cf1/policy_node")

    # 6. The node whose profile does not fit the policy refuses to configure, stays unconfigured and says why.
    results["mismatch_configure"] = change_state(probe, "/car/mismatch", "configure")
    spin_for(probe, 0.5)  # its diagnostics
    results["states"]["mismatch"] = get_state(probe, "/car/mismatch")
    results["mismatch_diagnostic"] = _last_status(diagnostics, "/car/mismatch")
    results["cleanup_exit_commands"] = len(commands)
    probe.destroy_node()
    finish(results, processes, ["policy_node", "mismatch"])


def _last_status(diagnostics: list, name: str, after: float = 0.0) -> dict | None:
    found = [d for d in diagnostics if d[1] == name and d[0] > after]
    if not found:
        return None
    _, _, level, message, values = found[-1]
    return {"level": level, "message": message, "values": values}


def _last_message(diagnostics: list, name: str) -> str | None:
    status = _last_status(diagnostics, name)
    return None if status is None else status["message"]


if __name__ == "__main__":
    main()
