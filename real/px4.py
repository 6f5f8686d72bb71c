"""PX4 offboard control over ROS 2 (px4_msgs through uXRCE-DDS), without ROS: what policy_node sends besides the
setpoint.

PX4 accepts and keeps offboard control only while `OffboardControlMode` arrives at more than 2 Hz with the flag of
the setpoint being sent (PX4 user guide, "Offboard mode"); it switches to offboard and arms only on a
`VehicleCommand`, which policy_node sends only when asked (parameters px4_offboard, px4_arm), after the setpoint
stream has run for `REQUEST_AFTER_HEARTBEATS` heartbeats, as PX4 requires. PX4 stamps its messages in
microseconds. On a fault policy_node sends neither setpoints nor heartbeats: PX4's offboard-loss failsafe takes
over (a zero-thrust "safe" setpoint would drop a flying vehicle).
"""

from __future__ import annotations

from dataclasses import dataclass

PACKAGE = "px4_msgs"
HEARTBEAT_HZ = 10.0
"""OffboardControlMode rate; PX4 needs more than 2 Hz."""
REQUEST_AFTER_HEARTBEATS = 10
"""Heartbeats (1 s) of setpoint stream before the mode switch and arming requests."""
OFFBOARD_MODE_TOPIC = "fmu/in/offboard_control_mode"
VEHICLE_COMMAND_TOPIC = "fmu/in/vehicle_command"
OFFBOARD_FLAGS = (
    "position",
    "velocity",
    "acceleration",
    "attitude",
    "body_rate",
    "thrust_and_torque",
    "direct_actuator",
)
"""OffboardControlMode's boolean fields (PX4 v1.14+)."""
SETPOINT_FLAG = {
    "px4_msgs/msg/VehicleRatesSetpoint": "body_rate",
    "px4_msgs/msg/VehicleAttitudeSetpoint": "attitude",
    "px4_msgs/msg/VehicleThrustSetpoint": "thrust_and_torque",
    "px4_msgs/msg/VehicleTorqueSetpoint": "thrust_and_torque",
    "px4_msgs/msg/ActuatorMotors": "direct_actuator",
}
"""The OffboardControlMode flag each setpoint type needs."""
VEHICLE_CMD_DO_SET_MODE = 176
VEHICLE_CMD_COMPONENT_ARM_DISARM = 400
PX4_CUSTOM_MAIN_MODE_OFFBOARD = 6.0
MAV_MODE_FLAG_CUSTOM_MODE_ENABLED = 1.0


def is_px4(command_type: str) -> bool:
    return command_type.split("/")[0] == PACKAGE


def offboard_mode(command_type: str) -> dict[str, bool]:
    """The OffboardControlMode flags for a setpoint type; ValueError for a px4_msgs type that is not a setpoint."""
    if command_type not in SETPOINT_FLAG:
        raise ValueError(f"{command_type} is not a PX4 offboard setpoint ({', '.join(sorted(SETPOINT_FLAG))})")
    return {flag: flag == SETPOINT_FLAG[command_type] for flag in OFFBOARD_FLAGS}


def timestamp_us(nanoseconds: int) -> int:
    """A ROS time in ns as PX4's microsecond timestamp."""
    return nanoseconds // 1000


@dataclass(frozen=True)
class VehicleRequest:
    """One VehicleCommand: `command` with `param1`, `param2`, for system 1, component 1, from outside PX4."""

    command: int
    param1: float
    param2: float = 0.0

    def fields(self, now_us: int) -> dict[str, object]:
        return {
            "timestamp": now_us,
            "command": self.command,
            "param1": self.param1,
            "param2": self.param2,
            "target_system": 1,
            "target_component": 1,
            "source_system": 1,
            "source_component": 1,
            "from_external": True,
        }


OFFBOARD_REQUEST = VehicleRequest(
    VEHICLE_CMD_DO_SET_MODE, MAV_MODE_FLAG_CUSTOM_MODE_ENABLED, PX4_CUSTOM_MAIN_MODE_OFFBOARD
)
ARM_REQUEST = VehicleRequest(VEHICLE_CMD_COMPONENT_ARM_DISARM, 1.0)


class OffboardLink:
    """When to send the heartbeat and the requests: `on_command(fault, now)` for every setpoint decision,
    `heartbeat_due(now)` at HEARTBEAT_HZ, `requests()` once the stream has run long enough."""

    def __init__(self, offboard: bool, arm: bool, staleness: float) -> None:
        self.wanted = [r for r, asked in ((OFFBOARD_REQUEST, offboard), (ARM_REQUEST, arm)) if asked]
        self.staleness = staleness
        self.last_command: float | None = None
        self.heartbeats = 0
        self.sent = False

    def on_command(self, fault: str, now: float) -> bool:
        """Whether to publish this setpoint: never with a fault, which also stops the heartbeat."""
        self.last_command = None if fault else now
        return not fault

    def heartbeat_due(self, now: float) -> bool:
        """Send a heartbeat now: only while good setpoints flow (the last one within `staleness` s)."""
        flowing = self.last_command is not None and now - self.last_command <= self.staleness
        if flowing:
            self.heartbeats += 1
        return flowing

    def requests(self) -> list[VehicleRequest]:
        """The mode switch and arming the parameters asked for, once, with the heartbeat after the first
        REQUEST_AFTER_HEARTBEATS (1 s of setpoints)."""
        if self.sent or self.heartbeats <= REQUEST_AFTER_HEARTBEATS:
            return []
        self.sent = True
        return list(self.wanted)
