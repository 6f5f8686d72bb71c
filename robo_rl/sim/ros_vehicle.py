"""sim_bridge's vehicle mode (parameter `vehicle: true`): the vehicle's own side over ROS, for rehearsing the
hand-over (`robo_rl.real.handover`) through the real nodes.

With a profile whose handover vehicle is px4 or crazyswarm2, sim_bridge then stands in for the vehicle itself rather
than for a bare simulator: `SimulatedPx4` or `SimulatedCrazyflie` (robo_rl.sim.rehearsal) flies quadrotor/hover over
a ground (starting on it), with the vehicle's own rules and controller, and this module carries their traffic:

- PX4: the rates setpoints (sim_bridge's command subscription), OffboardControlMode on fmu/in/offboard_control_mode,
  VehicleCommand on fmu/in/vehicle_command answered with VehicleCommandAck on fmu/out/vehicle_command_ack;
  VehicleStatus (message version 1, v1.16's fmu/out/vehicle_status_v1) at 10 Hz with the commander's nav_state,
  armed; VehicleOdometry every period. PX4 takes off by itself (its take-off mode) and holds.
- crazyswarm2: cmd_vel_legacy (sim_bridge's command subscription) into the firmware's legacy commander; the
  services takeoff, land, go_to, notify_setpoints_stop (crazyflie_interfaces/srv, relative names, in the bridge's
  namespace as crazyswarm2 serves them) answered at once; odom and the gyro log block every period.

/diagnostics adds what a rehearsal judges: `vehicle_in_charge` (policy or vehicle), `vehicle_mode` (PX4's nav_state,
the Crazyflie's active setpoint source), `rule_violations` and the last one, `motors_off_in_air` (periods), the
height. Needs torch (robo_rl.sim) and, for crazyswarm2, crazyflie_interfaces (ros_msgs/, `make ros-msgs`).
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from rclpy.qos import qos_profile_sensor_data

from robo_rl.real import px4
from robo_rl.real.profile import RobotProfile
from robo_rl.real.ros.messages import message_class
from robo_rl.sim.quadrotor.crazyflie_commander import Source
from robo_rl.sim.rehearsal.crazyflie import SimulatedCrazyflie
from robo_rl.sim.rehearsal.px4 import SimulatedPx4

STATUS_PERIODS = 10
"""VehicleStatus every 10th period (10 Hz at 100 Hz)."""
PublishInputs = Callable[[dict[str, dict[str, float]]], None]
"""Publishes the profile's inputs from their fields (input name → its message's fields, without the input prefix)."""


class VehicleBridge(Protocol):
    def on_command(self, fields: dict[str, float]) -> None: ...

    def tick(self) -> dict[str, dict[str, float]]:
        """One period: the vehicle's step; returns the inputs' fields to publish."""
        ...

    def diagnostics(self) -> dict[str, object]: ...


def vehicle_bridge(
    node: Any, profile: RobotProfile, target: Sequence[float], params: Sequence[str], seed: int
) -> VehicleBridge:
    """The bridge of the profile's handover vehicle; ValueError for a profile whose vehicle it cannot stand in for."""
    vehicle = profile.handover.vehicle if profile.handover is not None else ""
    if vehicle == "px4":
        return Px4Bridge(node, profile, target, params, seed)
    if vehicle == "crazyswarm2":
        return CrazyflieBridge(node, profile, target, params, seed)
    raise ValueError(f"parameter 'vehicle': profile {profile.name!r} has no px4 or crazyswarm2 handover vehicle")


class _Clock:
    """Seconds since the bridge started (the stand-ins' time)."""

    def __init__(self) -> None:
        self.start = time.monotonic()

    def __call__(self) -> float:
        return time.monotonic() - self.start


class Px4Bridge:
    """PX4's side (the module docstring)."""

    def __init__(self, node: Any, profile: RobotProfile, target: Sequence[float], params: Sequence[str], seed: int):
        self.node = node
        self.px4 = SimulatedPx4(profile, target, params, seed)
        self.clock = _Clock()
        self.ticks = 0
        self.motors_off_in_air = 0
        self.ack_type = message_class("px4_msgs/msg/VehicleCommandAck")
        self.status_type = message_class("px4_msgs/msg/VehicleStatus")
        self.acks = node.create_publisher(self.ack_type, px4.VEHICLE_COMMAND_ACK_TOPIC, qos_profile_sensor_data)
        self.status = node.create_publisher(
            self.status_type, px4.VEHICLE_STATUS_TOPICS["1.16"], qos_profile_sensor_data
        )
        mode_type = message_class("px4_msgs/msg/OffboardControlMode")
        command_type = message_class("px4_msgs/msg/VehicleCommand")
        node.create_subscription(mode_type, px4.OFFBOARD_MODE_TOPIC, self.on_heartbeat, 10)
        node.create_subscription(command_type, px4.VEHICLE_COMMAND_TOPIC, self.on_vehicle_command, 10)

    def on_command(self, fields: dict[str, float]) -> None:
        self.px4.receive(fields, self.clock())

    def on_heartbeat(self, message: Any) -> None:
        self.px4.heartbeat(self.clock(), {flag: bool(getattr(message, flag)) for flag in px4.OFFBOARD_FLAGS})

    def on_vehicle_command(self, message: Any) -> None:
        names = ("command", "param1", "param2", "param3", "target_system", "target_component", "confirmation")
        self.px4.command({name: getattr(message, name) for name in names}, self.clock())

    def tick(self) -> dict[str, dict[str, float]]:
        now_us = px4.timestamp_us(self.node.get_clock().now().nanoseconds)
        for command, result in self.px4.step(self.clock()):
            self.acks.publish(self.ack_type(timestamp=now_us, command=command, result=result))
        self.motors_off_in_air += int(self.px4.motors_off_in_the_air())
        if self.ticks % STATUS_PERIODS == 0:
            status = self.status_type(timestamp=now_us)
            status.nav_state = self.px4.commander.nav_state
            status.arming_state = status.ARMING_STATE_ARMED
            self.status.publish(status)
        self.ticks += 1
        return {"odom": self.px4.odometry()}

    def diagnostics(self) -> dict[str, object]:
        violations = self.px4.violations
        return {
            "vehicle_in_charge": "policy" if self.px4.offboard else "vehicle",
            "vehicle_mode": self.px4.commander.nav_state,
            "rule_violations": len(violations),
            "last_violation": violations[-1] if violations else "",
            "motors_off_in_air": self.motors_off_in_air,
            "height_m": round(float(self.px4.world.position()[2]), 3),
        }


CRAZYSWARM2_SERVICES = {
    "takeoff": "Takeoff",
    "land": "Land",
    "go_to": "GoTo",
    "notify_setpoints_stop": "NotifySetpointsStop",
}


class CrazyflieBridge:
    """crazyswarm2's side (the module docstring)."""

    def __init__(self, node: Any, profile: RobotProfile, target: Sequence[float], params: Sequence[str], seed: int):
        self.node = node
        self.crazyflie = SimulatedCrazyflie(profile, target, params, seed)
        self.clock = _Clock()
        self.motors_off_in_air = 0
        srv = importlib.import_module("crazyflie_interfaces.srv")
        self.services = [
            node.create_service(getattr(srv, kind), name, self._serve(name))
            for name, kind in CRAZYSWARM2_SERVICES.items()
        ]

    def _serve(self, name: str) -> Callable[[Any, Any], Any]:
        def serve(request: Any, response: Any) -> Any:
            self.crazyflie.service(name, _request_values(request), self.clock())
            return response

        return serve

    def on_command(self, fields: dict[str, float]) -> None:
        self.crazyflie.packet(fields, self.clock())

    def tick(self) -> dict[str, dict[str, float]]:
        self.crazyflie.step(self.clock())
        self.motors_off_in_air += int(self.crazyflie.motors_off_in_the_air())
        inputs = self.crazyflie.inputs()
        return {
            name: {key.removeprefix(f"{name}."): value for key, value in fields.items()}
            for name, fields in inputs.items()
        }

    def diagnostics(self) -> dict[str, object]:
        violations = self.crazyflie.violations
        source = self.crazyflie.source
        return {
            "vehicle_in_charge": "policy" if source is Source.CRTP else "vehicle",
            "vehicle_mode": source.value,
            "rule_violations": len(violations),
            "last_violation": violations[-1] if violations else "",
            "motors_off_in_air": self.motors_off_in_air,
            "height_m": round(float(self.crazyflie.world.position()[2]), 3),
        }


def _request_values(request: Any) -> dict[str, object]:
    """A crazyflie_interfaces request as the stand-in reads it: durations in s, the goal as (x, y, z)."""
    values: dict[str, object] = {}
    for name in request.get_fields_and_field_types():
        value = getattr(request, name)
        if name == "duration":
            value = value.sec + value.nanosec * 1e-9
        elif name == "goal":
            value = (value.x, value.y, value.z)
        values[name] = value
    return values
