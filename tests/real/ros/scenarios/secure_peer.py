"""One participant of scenario_secure_mode.py, run as its own process (one enclave per process, as rcl has it).

argv: ROLE KEYSTORE SECONDS OUT. Roles: `driver` (enclave /cf1/driver: odometry at 100 Hz), `operator`
(/cf1/teleop_node: interventions), `observer` (/cf1/recorder: reads /diagnostics and operator_log, writes them to OUT
as JSON),
`rogue_plain` (no credentials at all) and `rogue_enclave` (/cf1/recorder, which may not publish): both send
`estop true` and interventions of 1.0. Runs SECONDS s, then writes OUT (what it saw, or the error that stopped it).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from robo_rl.real.security.secure_mode import prepare, secure_mode

ENCLAVES = {"driver": "/cf1/driver", "operator": "/cf1/teleop_node", "observer": "/cf1/recorder"}
ENCLAVES["rogue_enclave"] = "/cf1/recorder"


def main() -> None:
    role, keystore, seconds, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), Path(sys.argv[4])
    if role in ENCLAVES:
        mode = secure_mode(True, keystore, ENCLAVES[role])
        assert mode is not None
        prepare(mode)
    import rclpy

    rclpy.init()
    report: dict = {"role": role}
    try:
        node = rclpy.create_node(role, namespace="/cf1")
        report |= run(role, node, seconds)
    except Exception as err:  # what refused this peer (an rcl error for a rogue), reported, not raised
        report["error"] = " ".join(str(err).split())[:400]
    out.write_text(json.dumps(report))
    rclpy.try_shutdown()


def run(role: str, node: object, seconds: float) -> dict:
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from nav_msgs.msg import Odometry
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
    from std_msgs.msg import Bool, Float32MultiArray, String

    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    seen: dict = {"diagnostics": {}, "operator_log": []}
    sends = []
    if role == "driver":
        odom = node.create_publisher(Odometry, "odom", qos_profile_sensor_data)  # type: ignore[attr-defined]

        def send_odom() -> None:
            message = Odometry()
            message.header.stamp = node.get_clock().now().to_msg()  # type: ignore[attr-defined]
            message.pose.pose.position.z = 1.0
            message.pose.pose.orientation.w = 1.0
            odom.publish(message)

        sends.append(send_odom)
    elif role == "observer":

        def on_diagnostics(message: DiagnosticArray) -> None:
            for status in message.status:
                if status.name == "/cf1/policy_node":
                    seen["diagnostics"].update({kv.key: kv.value for kv in status.values})

        node.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 100)  # type: ignore[attr-defined]
        node.create_subscription(  # type: ignore[attr-defined]
            String, "operator_log", lambda m: seen["operator_log"].append(json.loads(m.data)), 100
        )
    else:
        value = 0.0 if role == "operator" else 1.0
        intervention = node.create_publisher(Float32MultiArray, "intervention", 10)  # type: ignore[attr-defined]
        sends.append(lambda: intervention.publish(Float32MultiArray(data=[value] * 4)))
        if role != "operator":
            estop = node.create_publisher(Bool, "estop", latched)  # type: ignore[attr-defined]
            sends.append(lambda: estop.publish(Bool(data=True)))
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for send in sends:
            send()
        rclpy.spin_once(node, timeout_sec=0.01)  # type: ignore[arg-type]
    return seen if role == "observer" else {"sent": True}


if __name__ == "__main__":
    main()
