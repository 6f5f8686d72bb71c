"""What policy_node sends for each command decision, chosen by the profile's command type: `CommandOutput` publishes
the profile's command message; `Px4Output` adds PX4's offboard protocol around it (real/px4.py). policy_node knows
only the `Output` interface: a new vehicle protocol is one more adapter here, not branches in the node.

PX4 (a px4_msgs command type; PX4 v1.15+): OffboardControlMode on fmu/in/offboard_control_mode at 10 Hz with the
setpoint's flag while setpoints flow. On a fault, never the zero-thrust "safe" setpoint: with a handover section
(vehicle px4), the hand-back to PX4's Hold mode (DO_SET_MODE AUTO_LOITER, with zero body rates at the profile's
px4.hover_thrust and the heartbeat until PX4 accepts, px4.fault_hold s at most, then silence); without one, for a
VehicleRatesSetpoint, zero body rates at px4.hover_thrust for px4.fault_hold s with the heartbeat, then neither, so
that PX4's offboard-loss failsafe takes over with that benign setpoint as the last one; other setpoint types go
silent at once. VehicleCommands
(offboard, arm) only when the parameters px4_offboard / px4_arm ask, addressed to px4_target_system and
px4_target_component; PX4's VehicleCommandAck is read and a refused or unanswered request is sent again, 3 sends at
most. VehicleStatus is read on v1.16's fmu/out/vehicle_status_v1 (px4_version "1.16"). ActuatorMotors fields written
in robo_rl's rotor order are moved to PX4's motor order (the profile's px4.motor_order).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from robo_rl.real import px4, px4_link
from robo_rl.real.command import stamped_now
from robo_rl.real.crazyflie_link import CrazyflieLink
from robo_rl.real.profile import CommandSpec, CrazyswarmSettings, Px4Settings, RobotProfile
from robo_rl.real.ros.diagnostics import WARN
from robo_rl.real.ros.messages import message_class, set_fields

StatusSink = Callable[[int, str], None]
"""Where an adapter reports a status change (level, message): policy_node's /diagnostics."""


class Output(Protocol):
    """What policy_node does with the command of each decision, and around it."""

    def send(self, fields: dict[str, float], fault: str) -> None:
        """One decision: the command's message fields, and its fault ("" for the policy's own command)."""

    def start(self) -> None:
        """Control starts (activation)."""

    def halt(self) -> None:
        """Control stops (before the last safe command goes out): stop the adapter's own timers."""

    def release(self) -> None:
        """The node is cleaned up: destroy the adapter's publishers and subscriptions."""

    def diagnostics(self) -> dict[str, object]:
        """The adapter's key values for /diagnostics."""


def declare_parameters(node: Any) -> None:
    """The adapters' parameters, declared whatever the profile (they are set before configure)."""
    node.declare_parameter("px4_offboard", False)
    node.declare_parameter("px4_arm", False)
    node.declare_parameter("px4_target_system", 1)
    node.declare_parameter("px4_target_component", 1)
    node.declare_parameter("px4_version", "1.16")


def make_output(node: Any, spec: CommandSpec, profile: RobotProfile, report: StatusSink) -> Output:
    """The adapter for the profile's command type: PX4's protocol for px4_msgs types, crazyswarm2's high-level
    commander for a profile whose handover vehicle is crazyswarm2, else the plain message."""
    command = CommandOutput(node, spec, profile.dt)
    if px4.is_px4(spec.type):
        return Px4Output(node, command, spec, profile, report)
    if profile.handover is not None and profile.handover.vehicle == "crazyswarm2":
        return CrazyflieOutput(node, command, profile, report)
    return command


class CommandOutput:
    """Publishes the command message: the fields, a header stamp (now; a JointTrajectory's stays zero, "start on
    receipt", `command.stamped_now`), PX4's microsecond `timestamp`, the profile's joint names (a JointTrajectory
    point's duration is among the fields)."""

    def __init__(self, node: Any, spec: CommandSpec, dt: float) -> None:
        self.node = node
        self.message_type = message_class(spec.type)
        field_types = self.message_type.get_fields_and_field_types()
        self.stamped = "header" in field_types and stamped_now(spec.type)
        self.px4_stamped = px4.is_px4(spec.type) and "timestamp" in field_types
        self.joint_names = list(spec.joint_names) if "joint_names" in field_types else None
        self.publisher = node.create_lifecycle_publisher(self.message_type, spec.topic, 10)

    def send(self, fields: dict[str, float], fault: str) -> None:
        message = set_fields(self.message_type(), fields)
        if self.stamped:
            message.header.stamp = self.node.get_clock().now().to_msg()
        if self.px4_stamped:
            message.timestamp = px4.timestamp_us(self.node.get_clock().now().nanoseconds)
        if self.joint_names is not None:
            message.joint_names = self.joint_names  # time_from_start comes with the fields (the controller's)
        self.publisher.publish(message)

    def start(self) -> None:
        pass

    def halt(self) -> None:
        pass

    def release(self) -> None:
        self.node.destroy_lifecycle_publisher(self.publisher)

    def diagnostics(self) -> dict[str, object]:
        return {}


class Px4Output:
    """PX4's offboard protocol around the setpoint (the module docstring): the fault hold, the motor order, the
    OffboardControlMode heartbeat, the VehicleCommand requests with their acks, VehicleStatus. For a profile with a
    handover section (vehicle px4) and a VehicleRatesSetpoint it is also the vehicle link (`on_step`, `request`,
    `ready`: `px4_link.Px4Vehicle`): the hand-back switches PX4 to its Hold mode."""

    def __init__(self, node: Any, command: CommandOutput, spec: CommandSpec, profile: RobotProfile, report: StatusSink):
        self.node, self.command, self.report = node, command, report
        settings = profile.px4 or Px4Settings()
        self.mode = px4.offboard_mode(spec.type)
        self.target = (_mavlink_id(node, "px4_target_system"), _mavlink_id(node, "px4_target_component"))
        self.hold = px4.FaultHold(settings.fault_hold, settings.hover_thrust, spec.type == px4.RATES_SETPOINT)
        self.motors = px4.motor_permutation(settings.motor_order) if spec.type == px4.ACTUATOR_MOTORS else None
        offboard, arm = bool(node.get_parameter("px4_offboard").value), bool(node.get_parameter("px4_arm").value)
        self.link = px4_link.OffboardLink(offboard, arm, staleness=profile.staleness_timeout)
        self.vehicle = self._vehicle(profile, spec, settings)
        self.refusal_reported = False
        self.status: dict[str, object] = {}
        self.timer: Any = None
        self.mode_type = message_class("px4_msgs/msg/OffboardControlMode")
        self.command_type = message_class("px4_msgs/msg/VehicleCommand")
        self.mode_publisher = node.create_lifecycle_publisher(self.mode_type, px4.OFFBOARD_MODE_TOPIC, 10)
        self.command_publisher = node.create_lifecycle_publisher(self.command_type, px4.VEHICLE_COMMAND_TOPIC, 10)
        self.subscriptions = self._subscribe(px4.status_topic(str(node.get_parameter("px4_version").value)))

    def _vehicle(self, profile: RobotProfile, spec: CommandSpec, settings: Px4Settings) -> px4_link.Px4Vehicle | None:
        """The hand-back to PX4's Hold mode, for a profile whose handover vehicle is px4 (rates setpoints only: the
        hold setpoint is zero body rates at hover thrust)."""
        if profile.handover is None or profile.handover.vehicle != "px4" or spec.type != px4.RATES_SETPOINT:
            return None
        handback = px4_link.Px4HandBack(settings.fault_hold, settings.hover_thrust)
        return px4_link.Px4Vehicle(handback, self.link, self._send_hold, self._send_request, time.monotonic)

    def on_step(self, step: Any, fields: Any, observed: Any) -> bool:
        """The vehicle link's part of a period (`robo_rl.real.handover.VehicleLink`)."""
        return self.vehicle.on_step(step, fields, observed) if self.vehicle is not None else False

    def request(self, word: str) -> str:
        return self.vehicle.request(word) if self.vehicle is not None else f"unknown request {word!r}"

    def ready(self) -> str:
        return self.vehicle.ready() if self.vehicle is not None else ""

    def takeover_wait(self) -> str:
        return self.vehicle.takeover_wait() if self.vehicle is not None else ""

    def control_lost(self) -> str:
        return self.vehicle.control_lost() if self.vehicle is not None else ""

    def _send_hold(self, fields: dict[str, float]) -> None:
        self.command.send(fields, "hand-back")

    def _send_request(self, request: px4_link.VehicleRequest, confirmation: int) -> None:
        now_us = px4.timestamp_us(self.node.get_clock().now().nanoseconds)
        self.command_publisher.publish(
            self.command_type(**request.fields(now_us, *self.target, confirmation=confirmation))
        )
        self.node.get_logger().warning(
            f"PX4: sent VehicleCommand {request.command} ({request.name}, send {confirmation + 1})"
        )

    def _subscribe(self, status_topic: str) -> list[Any]:
        """PX4's answers to the commands, and its VehicleStatus where the px4_version's message matches ours."""
        from rclpy.qos import qos_profile_sensor_data

        ack_type = message_class("px4_msgs/msg/VehicleCommandAck")
        found = [
            self.node.create_subscription(ack_type, px4.VEHICLE_COMMAND_ACK_TOPIC, self.on_ack, qos_profile_sensor_data)
        ]
        if status_topic:
            status_type = message_class("px4_msgs/msg/VehicleStatus")
            found.append(
                self.node.create_subscription(status_type, status_topic, self.on_status, qos_profile_sensor_data)
            )
        return found

    def send(self, fields: dict[str, float], fault: str) -> None:
        """The setpoint, the fault hold's (with a heartbeat as the hold begins), or silence (no setpoint, no
        heartbeat: PX4's offboard-loss failsafe takes over); ActuatorMotors in PX4's motor order."""
        now = time.monotonic()
        starting = bool(fault) and self.hold.fault_since is None
        sent = self.hold.setpoint(fields, fault, now)
        self.link.on_command(sent is not None, bool(fault), now)
        if sent is None:
            return
        if starting and self.timer is not None:
            self.heartbeat()
        self.command.send(px4.reorder_motors(sent, self.motors) if self.motors is not None else sent, fault)

    def heartbeat(self) -> None:
        """OffboardControlMode while setpoints flow, with the requests due."""
        if not self.link.heartbeat_due(time.monotonic()):
            return
        now_us = px4.timestamp_us(self.node.get_clock().now().nanoseconds)
        self.mode_publisher.publish(self.mode_type(timestamp=now_us, **self.mode))
        for request, confirmation in self.link.requests(time.monotonic()):
            fields = request.fields(now_us, *self.target, confirmation=confirmation)
            self.command_publisher.publish(self.command_type(**fields))
            sent = f"{request.command} ({request.name}, send {confirmation + 1})"
            self.node.get_logger().warning(f"PX4: sent VehicleCommand {sent}")
        self._gave_up()

    def on_ack(self, message: Any) -> None:
        command, result = int(message.command), int(message.result)
        answer = self.vehicle.on_ack(command, result) if self.vehicle is not None else self.link.on_ack(command, result)
        if answer:
            self.node.get_logger().info(f"PX4: VehicleCommand {message.command} {answer}")
            self._gave_up()

    def on_status(self, message: Any) -> None:
        self.status = {
            "px4_armed": int(message.arming_state) == int(message.ARMING_STATE_ARMED),
            "px4_nav_state": int(message.nav_state),
            "px4_failsafe": bool(message.failsafe),
        }
        if self.vehicle is not None:
            self.vehicle.handback.on_nav_state(int(message.nav_state))

    def _gave_up(self) -> None:
        """Once, when a request has run out of sends: logged, and the status says so until the next change."""
        refused = self.link.gave_up()
        if refused is not None and not self.refusal_reported:
            self.refusal_reported = True
            self.node.get_logger().error(f"PX4 {refused.request.name}: {refused.report()}; not sent again")
            self.report(WARN, f"PX4 {refused.request.name}: {refused.report()}")

    def start(self) -> None:
        self.hold.restart()
        if self.vehicle is not None:
            self.vehicle.handback.reset()
        self.timer = self.node.create_timer(1.0 / px4.HEARTBEAT_HZ, self.heartbeat)

    def halt(self) -> None:
        if self.timer is not None:
            self.node.destroy_timer(self.timer)
            self.timer = None

    def release(self) -> None:
        for subscription in self.subscriptions:
            self.node.destroy_subscription(subscription)
        self.node.destroy_lifecycle_publisher(self.mode_publisher)
        self.node.destroy_lifecycle_publisher(self.command_publisher)
        self.command.release()

    def diagnostics(self) -> dict[str, object]:
        vehicle = self.vehicle.diagnostics() if self.vehicle is not None else {}
        return {
            "px4_fault_phase": self.hold.phase(time.monotonic()),
            **self.link.diagnostics(),
            **vehicle,
            **self.status,
        }


def _mavlink_id(node: Any, name: str) -> int:
    value = int(node.get_parameter(name).value)
    if not 0 <= value <= 255:
        raise ValueError(f"parameter '{name}': a MAVLink id in [0, 255], got {value}")
    return value


CRAZYSWARM2_SERVICES = {
    "takeoff": "Takeoff",
    "land": "Land",
    "go_to": "GoTo",
    "notify_setpoints_stop": "NotifySetpointsStop",
}
"""crazyswarm2's per-Crazyflie services the link calls (relative names: the node runs in the Crazyflie's namespace,
crazyflie_server.cpp serves `<name>/takeoff` etc.) and their crazyflie_interfaces/srv types."""


class CrazyflieOutput:
    """cmd_vel_legacy plus crazyswarm2's high-level commander (`robo_rl.real.crazyflie_link`): the vehicle link for a
    profile whose handover vehicle is crazyswarm2. It owns the service clients; the link decides what to send.
    A request a service does not answer (crazyswarm2 not running) is reported on /diagnostics; its follow-up (the
    take-off after notify, notify after the hand-back's go_to) waits for the answer."""

    def __init__(self, node: Any, command: CommandOutput, profile: RobotProfile, report: StatusSink) -> None:
        import importlib

        self.node, self.command, self.report = node, command, report
        srv = importlib.import_module("crazyflie_interfaces.srv")
        self.types = {name: getattr(srv, kind) for name, kind in CRAZYSWARM2_SERVICES.items()}
        self.clients = {name: node.create_client(kind, name) for name, kind in self.types.items()}
        settings = profile.crazyswarm2 or CrazyswarmSettings()
        self.link = CrazyflieLink(settings, self._send_twist, self._call, time.monotonic)

    def send(self, fields: dict[str, float], fault: str) -> None:
        self.command.send(fields, fault)

    def on_step(self, step: Any, fields: Any, observed: Any) -> bool:
        """The vehicle link's part of a period (`robo_rl.real.handover.VehicleLink`)."""
        return self.link.on_step(step, fields, observed)

    def request(self, word: str) -> str:
        return self.link.request(word)

    def ready(self) -> str:
        return self.link.ready()

    def takeover_wait(self) -> str:
        return self.link.takeover_wait()

    def control_lost(self) -> str:
        return self.link.control_lost()

    def _send_twist(self, fields: dict[str, float]) -> None:
        self.command.send(fields, "")

    def _call(self, service: str, request: dict[str, object], then: Callable[[], None] | None) -> None:
        client = self.clients[service]
        if not client.service_is_ready():
            self.report(WARN, f"crazyswarm2 service {client.srv_name} is not available: {service} may be lost")
        future = client.call_async(_service_request(self.types[service].Request(), request))

        def answered(done: Any) -> None:
            if done.exception() is not None:
                self.report(WARN, f"crazyswarm2 {service} failed: {done.exception()}")
            elif then is not None:
                then()

        future.add_done_callback(answered)

    def start(self) -> None:
        pass

    def halt(self) -> None:
        pass

    def release(self) -> None:
        for client in self.clients.values():
            self.node.destroy_client(client)
        self.command.release()

    def diagnostics(self) -> dict[str, object]:
        return self.link.diagnostics()


def _service_request(message: Any, values: dict[str, object]) -> Any:
    """A crazyflie_interfaces request from the link's plain values: `duration` in s becomes a
    builtin_interfaces/Duration, `goal` an (x, y, z) geometry_msgs/Point."""
    for name, value in values.items():
        if name == "duration":
            seconds = float(value)  # type: ignore[arg-type]
            message.duration.sec = int(seconds)
            message.duration.nanosec = round((seconds - int(seconds)) * 1e9)
        elif name == "goal":
            message.goal.x, message.goal.y, message.goal.z = (float(v) for v in value)  # type: ignore[attr-defined]
        else:
            setattr(message, name, value)
    return message
