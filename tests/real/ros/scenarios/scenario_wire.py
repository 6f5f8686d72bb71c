"""What policy_node puts on the wire, read by a CycloneDDS peer that knows nothing of rclpy.

argv: LOG_DIR POLICY COUNT (an rc_car policy.onnx; the commands to read). `robo-rl launch
launch/sim_rc_car.launch.yaml robot:=/ command_type:=geometry_msgs/msg/Twist` runs sim_bridge and policy_node (Fast
DDS) on the rc_car profile's Twist fallback, on /cmd_vel. This process subscribes with cyclonedds-python to the DDS
topic `rt/cmd_vel` of type `geometry_msgs::msg::dds_::Twist_` (the ROS 2 name mangling), declared here from the
IDL, and reports what arrived.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from cyclonedds.domain import DomainParticipant
from cyclonedds.idl import IdlStruct
from cyclonedds.idl.types import float64
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic
from harness import Processes, finish


@dataclass
class Vector3_(IdlStruct, typename="geometry_msgs::msg::dds_::Vector3_"):  # the DDS type name
    x: float64
    y: float64
    z: float64


WHEELBASE = 0.3302
"""The rc_car profile's: a Twist→Ackermann converter turns yaw rate and speed back into a steering angle."""


@dataclass
class Twist_(IdlStruct, typename="geometry_msgs::msg::dds_::Twist_"):
    linear: Vector3_
    angular: Vector3_


def main() -> None:
    log_dir, policy, wanted = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    participant = DomainParticipant(0)
    reader = DataReader(participant, Topic(participant, "rt/cmd_vel", Twist_))
    processes = Processes(log_dir)
    arguments = ("launch/sim_rc_car.launch.yaml", f"policy:={policy}", "robot:=/", "teleop:=false")
    arguments += ("command_type:=geometry_msgs/msg/Twist",)
    processes.start("launch", "robo-rl", "launch", *arguments)
    samples: list[tuple[float, float, float]] = []
    deadline = time.monotonic() + 180.0  # a bound, reached only when the commands stop coming
    first = None
    # `wanted` commands from the first one computed by the policy (not the safe zero sent while sim_bridge starts):
    # counted, not timed, so that a busy machine only takes longer.
    while time.monotonic() < deadline and len(samples) < wanted:
        for sample in reader.take(N=100):
            if not isinstance(sample, Twist_):
                continue
            if first is None and (sample.linear.x, sample.angular.z) != (0.0, 0.0):
                first = time.monotonic()
            if first is not None:
                samples.append((time.monotonic(), sample.linear.x, sample.angular.z))
        time.sleep(0.005)
    span = samples[-1][0] - samples[0][0] if len(samples) > 1 else 0.0
    results = {
        "count": len(samples),
        "rate_hz": (len(samples) - 1) / span if span else 0.0,  # measured, not asserted
        "speed_range": [min(s[1] for s in samples), max(s[1] for s in samples)] if samples else None,
        "yaw_rate_range": [min(s[2] for s in samples), max(s[2] for s in samples)] if samples else None,
        "steering_angles": [math.atan(WHEELBASE * s[2] / s[1]) if s[1] else 0.0 for s in samples],
        "distinct_values": len({(s[1], s[2]) for s in samples}),
    }
    finish(results, processes, ["launch"])


if __name__ == "__main__":
    main()
