"""Who sent it: policy_node names the publisher of every operator command it acts on.

argv: LOG_DIR POLICY (a quadrotor_crazyflie policy.onnx). policy_node runs active (autostart) on odometry from the
probe. Three other nodes of the probe's process publish: `operator_a` interventions (valid ones) and an `estop
false`; `operator_b` the e-stop; `intruder` an intervention of the wrong size. Each publisher has its own GID
(rmw's publisher GID: the DDS writer's GUID), and the graph knows which node owns which; the node must attribute each
accepted command to the right one, ignore the intruder's malformed one and never act on `estop false`. Everything
waits for effects (the diagnostics naming a sender), not for fixed times.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from harness import Processes, finish, generous_profile, ros_args, spin_publishing_until
from nav_msgs.msg import Odometry
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from std_msgs.msg import Bool, Float32MultiArray, String

PERIOD = 0.01
SETTLE_S = 60.0
NODE = "/cf1/policy_node"


def main() -> None:
    log_dir, policy = Path(sys.argv[1]), sys.argv[2]
    processes = Processes(log_dir)
    profile = generous_profile(log_dir, "quadrotor_crazyflie")
    params = {"policy": policy, "profile": profile, "autostart": True, "diagnostics_period": 0.2}
    processes.start("policy_node", "policy_node", *ros_args("policy_node", "/cf1", **params))
    rclpy.init()
    probe = rclpy.create_node("probe")
    operator_a = rclpy.create_node("operator_a", namespace="/cf1")
    operator_b = rclpy.create_node("operator_b", namespace="/cf1")
    intruder = rclpy.create_node("intruder")
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    interventions = operator_a.create_publisher(Float32MultiArray, "/cf1/intervention", 10)
    release = operator_a.create_publisher(Bool, "/cf1/estop", latched)
    estop = operator_b.create_publisher(Bool, "/cf1/estop", latched)
    bad = intruder.create_publisher(Float32MultiArray, "/cf1/intervention", 10)
    odom = probe.create_publisher(Odometry, "/cf1/odom", qos_profile_sensor_data)
    latest: dict[str, str] = {}
    log: list[dict[str, str]] = []

    def on_diagnostics(message: DiagnosticArray) -> None:
        for status in message.status:
            if status.name == NODE:
                latest.update({kv.key: kv.value for kv in status.values})

    probe.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 100)
    probe.create_subscription(String, "/cf1/operator_log", lambda m: log.append(json.loads(m.data)), 100)

    def publish_odom() -> None:
        message = Odometry()
        message.header.stamp = probe.get_clock().now().to_msg()
        message.pose.pose.position.z = 1.0
        message.pose.pose.orientation.w = 1.0
        odom.publish(message)

    def until(condition, also=None) -> bool:  # type: ignore[no-untyped-def]
        def every() -> None:
            publish_odom()
            if also is not None:
                also()

        return spin_publishing_until(probe, condition, SETTLE_S, every, PERIOD)

    results: dict = {}
    results["active"] = until(lambda: latest.get("commands", "0") not in ("0", ""))
    release.publish(Bool(data=False))  # never acted on, from anyone
    # "?" until the graph names the node, for the accepted ones and the intruder's refused ones alike (its refusal is
    # logged at most once a second): wait until both name their node
    results["intervention_seen"] = until(
        lambda: (
            latest.get("from.intervention", "?").startswith("/cf1/")
            and "intervention from /intruder" in processes.log("policy_node")
        ),
        lambda: (interventions.publish(Float32MultiArray(data=[0.0] * 4)), bad.publish(Float32MultiArray(data=[1.0]))),
    )
    estop.publish(Bool(data=True))
    # the record on operator_log and the diagnostics travel on different topics: wait for both
    results["estop_seen"] = until(
        lambda: latest.get("from.estop", "?").startswith("/cf1/") and any(e["topic"] == "estop" for e in log)
    )
    results["diagnostics"] = {key: value for key, value in latest.items() if key.startswith(("from.", "senders."))}
    results["graph"] = {
        node: [_gid(info.endpoint_gid) for info in probe.get_publishers_info_by_topic(topic) if info.node_name == node]
        for node, topic in (("operator_a", "/cf1/intervention"), ("operator_b", "/cf1/estop"))
    }
    results["operator_log"] = log
    for node in (probe, operator_a, operator_b, intruder):
        node.destroy_node()
    finish(results, processes, ["policy_node"])


def _gid(data: list[int]) -> str:
    raw = bytes(data).rstrip(b"\x00")
    return ".".join(f"{byte:02x}" for byte in raw)


if __name__ == "__main__":
    main()
