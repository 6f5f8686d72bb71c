"""Scenario: recorder in /r1 records odom and cmd from a probe, is stopped with SIGINT, and the bag is read back.

argv: LOG_DIR [MODE]. MODE `record` (default): 50 nav_msgs/Odometry on /r1/odom (pose.position.x = i) and 50
std_msgs/Float32MultiArray on /r1/cmd (data = [i, -i]), published once the recorder has subscribed both; reports
what the bag holds. MODE `kill`: the same, but the recorder is killed (SIGKILL) once its flush is on disk;
reports the bag's files and sizes (no metadata.yaml, but the flushed messages in the .mcap). Both wait until the
.mcap on disk holds the payload and has not grown for STABLE_S, not for a fixed time. MODE `bad-storage`:
the recorder with storage `zip`, which must exit 2 at once.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import rclpy
from harness import Processes, finish, ros_args, spin_for, spin_until
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.serialization import serialize_message
from std_msgs.msg import Float32MultiArray

MESSAGES = 50
SETTLE_S = 60.0
STABLE_S = 1.5


def record(log_dir: Path, kill: bool = False) -> None:
    output_dir = log_dir / "bags"
    processes = Processes(log_dir)
    topics = ["odom", "cmd", "/diagnostics_test"]
    recorder = processes.start(
        "recorder", "recorder", *ros_args("recorder", "/r1", topics=topics, output_dir=str(output_dir))
    )
    rclpy.init()
    probe = Node("probe")
    reliable = QoSProfile(depth=MESSAGES, reliability=ReliabilityPolicy.RELIABLE)
    odom = probe.create_publisher(Odometry, "/r1/odom", reliable)
    cmd = probe.create_publisher(Float32MultiArray, "/r1/cmd", reliable)
    results: dict[str, Any] = {}
    started = time.monotonic()
    subscribed = spin_until(probe, lambda: odom.get_subscription_count() > 0 and cmd.get_subscription_count() > 0, 30.0)
    results["subscribed"] = subscribed
    results["subscribe_s"] = time.monotonic() - started
    if subscribed:
        spin_for(probe, 0.5)  # let the match settle on both sides before the first message
        for i in range(MESSAGES):
            message = Odometry()
            message.pose.pose.position.x = float(i)
            odom.publish(message)
            cmd.publish(Float32MultiArray(data=[float(i), float(-i)]))
            spin_for(probe, 0.005)
    payload = serialize_message(Odometry()), serialize_message(Float32MultiArray(data=[0.0, 0.0]))
    results["payload_bytes"] = MESSAGES * sum(len(p) for p in payload)
    # Delivery and the recorder's 1 s flush: wait until the bag on disk holds the payload and has stopped growing for
    # STABLE_S (past a flush), however busy the machine.
    growth = {"size": -1, "at": time.monotonic()}

    def flushed() -> bool:
        size = mcap_bytes(output_dir)
        if size != growth["size"]:
            growth.update(size=size, at=time.monotonic())
        return size > results["payload_bytes"] and time.monotonic() - growth["at"] >= STABLE_S

    results["flushed"] = spin_until(probe, flushed, SETTLE_S)
    if kill:
        recorder.kill()
        results["exit_codes"] = {"recorder": recorder.wait(10.0)}
        bags = [p for p in output_dir.iterdir() if p.is_dir()] if output_dir.is_dir() else []
        results["files"] = {p.name: p.stat().st_size for bag in bags for p in bag.iterdir()}
        finish(results)
    results["exit_codes"] = processes.stop(grace=10.0)
    results["logs"] = {"recorder": processes.log("recorder")[-3000:]}
    results |= read_bag(output_dir)
    finish(results)


def mcap_bytes(output_dir: Path) -> int:
    """The size on disk of the bags' .mcap files so far."""
    return sum(p.stat().st_size for p in output_dir.glob("*/*.mcap")) if output_dir.is_dir() else 0


def read_bag(output_dir: Path) -> dict[str, Any]:
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import Stores, get_typestore

    bags = sorted(p for p in output_dir.iterdir() if p.is_dir()) if output_dir.is_dir() else []
    if len(bags) != 1:
        return {"bags": [p.name for p in bags]}
    bag = bags[0]
    typestore = get_typestore(Stores.LATEST)
    values: dict[str, list[list[float]]] = {}
    stamps: dict[str, list[int]] = {}
    with Reader(bag) as reader:
        types = {c.topic: c.msgtype for c in reader.connections}
        for connection, timestamp, raw in reader.messages():
            message = typestore.deserialize_cdr(raw, connection.msgtype)
            if connection.msgtype == "nav_msgs/msg/Odometry":
                value = [message.pose.pose.position.x]
            else:
                value = [float(v) for v in message.data]
            values.setdefault(connection.topic, []).append(value)
            stamps.setdefault(connection.topic, []).append(timestamp)
    return {
        "bags": [bag.name],
        "files": sorted(p.name for p in bag.iterdir()),
        "types": types,
        "counts": {topic: len(v) for topic, v in values.items()},
        "values": values,
        "stamps_sorted": {topic: s == sorted(s) for topic, s in stamps.items()},
        "stamps_s": {topic: [s[0] / 1e9, s[-1] / 1e9] for topic, s in stamps.items()},
        "wall_s": time.time(),
    }


def bad_storage(log_dir: Path) -> None:
    params = {"storage": "zip", "output_dir": str(log_dir / "bags")}
    argv = [str(Path(sys.executable).parent / "recorder"), *ros_args("recorder", "/r1", **params)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    finish(
        {
            "exit_code": done.returncode,
            "stderr": done.stderr[-2000:],
            "bag_dir_created": (log_dir / "bags").exists(),
        }
    )


if __name__ == "__main__":
    directory = Path(sys.argv[1])
    mode = sys.argv[2] if len(sys.argv) > 2 else "record"
    bad_storage(directory) if mode == "bad-storage" else record(directory, kill=mode == "kill")
