"""Scenario: the message packages built from ros_msgs/ (px4_msgs, ackermann_msgs) over real rclpy and Fast DDS.

argv: LOG_DIR. A child process (this script with `--publish`) publishes one filled-in message of each type on its
PX4 / driver topic, over and over; this process subscribes to them all and reports, per type, the message that
arrived (as plain values), the type hash the publisher announced in discovery (RIHS01, computed from the definition
the publisher was built with), and the fields and a few constants of the local class.

Reports {"missing": ...} and stops when the message packages cannot be imported.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from harness import finish, spin_until

# type name -> topic, as PX4's uXRCE-DDS bridge (fmu/in, fmu/out) and an Ackermann car driver name them.
TOPICS = {
    "px4_msgs/msg/VehicleOdometry": "/fmu/out/vehicle_odometry",
    "px4_msgs/msg/VehicleStatus": "/fmu/out/vehicle_status",
    "px4_msgs/msg/VehicleRatesSetpoint": "/fmu/in/vehicle_rates_setpoint",
    "px4_msgs/msg/VehicleThrustSetpoint": "/fmu/in/vehicle_thrust_setpoint",
    "px4_msgs/msg/ActuatorMotors": "/fmu/in/actuator_motors",
    "px4_msgs/msg/OffboardControlMode": "/fmu/in/offboard_control_mode",
    "px4_msgs/msg/VehicleCommand": "/fmu/in/vehicle_command",
    "px4_msgs/msg/VehicleCommandAck": "/fmu/out/vehicle_command_ack",
    "ackermann_msgs/msg/AckermannDriveStamped": "/drive",
}
CONSTANTS = {
    "px4_msgs/msg/VehicleOdometry": [
        "MESSAGE_VERSION",
        "POSE_FRAME_NED",
        "VELOCITY_FRAME_NED",
        "VELOCITY_FRAME_BODY_FRD",
    ],
    "px4_msgs/msg/VehicleStatus": [
        "MESSAGE_VERSION",
        "ARMING_STATE_DISARMED",
        "ARMING_STATE_ARMED",
        "NAVIGATION_STATE_POSCTL",
        "NAVIGATION_STATE_OFFBOARD",
    ],
    "px4_msgs/msg/VehicleRatesSetpoint": ["MESSAGE_VERSION"],
    "px4_msgs/msg/ActuatorMotors": ["MESSAGE_VERSION", "NUM_CONTROLS"],
    "px4_msgs/msg/VehicleCommand": [
        "MESSAGE_VERSION",
        "VEHICLE_CMD_COMPONENT_ARM_DISARM",
        "VEHICLE_CMD_DO_SET_MODE",
        "VEHICLE_CMD_SET_NAV_STATE",
        "ARMING_ACTION_ARM",
        "ARMING_ACTION_DISARM",
    ],
    "px4_msgs/msg/VehicleCommandAck": [
        "MESSAGE_VERSION",
        "VEHICLE_CMD_RESULT_ACCEPTED",
        "VEHICLE_CMD_RESULT_TEMPORARILY_REJECTED",
        "VEHICLE_CMD_RESULT_DENIED",
        "VEHICLE_CMD_RESULT_IN_PROGRESS",
    ],
}


def message_class(type_name: str) -> Any:
    package, _, name = type_name.split("/")
    module = __import__(f"{package}.msg", fromlist=[name])
    return getattr(module, name)


def filled(type_name: str) -> Any:
    """One message of the type with a distinct value in each field a profile reads or writes."""
    message = message_class(type_name)()
    name = type_name.rsplit("/", 1)[1]
    if name == "VehicleOdometry":
        message.timestamp, message.timestamp_sample = 1_000_001, 1_000_000
        message.pose_frame, message.velocity_frame = message.POSE_FRAME_NED, message.VELOCITY_FRAME_FRD
        message.position, message.q = [1.0, -2.0, -3.0], [0.5, 0.5, -0.5, 0.5]
        message.velocity, message.angular_velocity = [0.25, -0.5, 0.75], [0.125, 0.25, -0.375]
        message.reset_counter, message.quality = 3, -1
    elif name == "VehicleStatus":
        message.timestamp = 2_000_000
        message.arming_state, message.nav_state = message.ARMING_STATE_ARMED, message.NAVIGATION_STATE_OFFBOARD
        message.pre_flight_checks_pass = True
    elif name == "VehicleRatesSetpoint":
        message.timestamp = 3_000_000
        message.roll, message.pitch, message.yaw = 0.5, -0.25, 0.125
        message.thrust_body = [0.0, 0.0, -0.625]
    elif name == "VehicleThrustSetpoint":
        message.timestamp, message.xyz = 4_000_000, [0.0, 0.0, -0.5]
    elif name == "ActuatorMotors":
        message.timestamp, message.reversible_flags = 5_000_000, 0b101
        message.control = [0.0625 * i for i in range(12)]
    elif name == "OffboardControlMode":
        message.timestamp, message.body_rate = 6_000_000, True
    elif name == "VehicleCommand":
        message.timestamp, message.command = 7_000_000, message.VEHICLE_CMD_COMPONENT_ARM_DISARM
        message.param1, message.param5 = float(message.ARMING_ACTION_ARM), 47.397742  # float64: a latitude
        message.target_system, message.target_component = 1, 1
        message.source_system, message.source_component, message.from_external = 255, 1000, True
    elif name == "VehicleCommandAck":
        message.timestamp, message.command = 8_000_000, 176
        message.result, message.result_param1, message.result_param2 = message.VEHICLE_CMD_RESULT_DENIED, 7, -3
        message.target_system, message.target_component, message.from_external = 1, 1000, True
    elif name == "AckermannDriveStamped":
        message.header.stamp.sec, message.header.frame_id = 42, "base_link"
        message.drive.steering_angle, message.drive.steering_angle_velocity = 0.25, 1.0
        message.drive.speed, message.drive.acceleration, message.drive.jerk = 1.5, 0.5, 0.0
    return message


def plain(message: Any) -> Any:
    """A message as JSON-able values (nested messages as dicts, arrays as lists)."""
    if hasattr(message, "get_fields_and_field_types"):
        return {field: plain(getattr(message, field)) for field in message.get_fields_and_field_types()}
    if hasattr(message, "tolist"):
        return message.tolist()
    if isinstance(message, (list, tuple)):
        return [plain(value) for value in message]
    return message


def publish() -> None:
    """The child: publishes every type on its topic at 20 Hz until SIGINT."""
    import rclpy

    rclpy.init()
    node = rclpy.create_node("msgs_publisher")
    publishers = [(node.create_publisher(message_class(t), topic, 10), filled(t)) for t, topic in TOPICS.items()]
    from rclpy.executors import ExternalShutdownException

    try:
        while rclpy.ok():
            for publisher, message in publishers:
                publisher.publish(message)
            rclpy.spin_once(node, timeout_sec=0.05)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    rclpy.try_shutdown()


def main() -> None:
    log_dir = Path(sys.argv[1])
    try:
        import ackermann_msgs.msg  # noqa: F401
        import px4_msgs.msg  # noqa: F401
    except ImportError as error:
        finish({"missing": str(error)})
    import rclpy

    rclpy.init()
    node = rclpy.create_node("msgs_probe")
    received: dict[str, Any] = {}
    for type_name, topic in TOPICS.items():
        node.create_subscription(message_class(type_name), topic, lambda m, t=type_name: received.setdefault(t, m), 10)
    log = open(log_dir / "publisher.log", "w")
    child = subprocess.Popen([sys.executable, __file__, "--publish"], stdout=log, stderr=subprocess.STDOUT)
    start = time.monotonic()
    spin_until(node, lambda: len(received) == len(TOPICS), timeout=60.0)
    elapsed = time.monotonic() - start
    results: dict[str, Any] = {"seconds": elapsed, "types": {}}
    for type_name, topic in TOPICS.items():
        cls = message_class(type_name)
        announced = [str(info.topic_type_hash) for info in node.get_publishers_info_by_topic(topic)]
        announced_types = [info.topic_type for info in node.get_publishers_info_by_topic(topic)]
        results["types"][type_name] = {
            "received": plain(received[type_name]) if type_name in received else None,
            "sent": plain(filled(type_name)),
            "announced_hashes": sorted(set(announced)),
            "announced_types": sorted(set(announced_types)),
            "fields": cls.get_fields_and_field_types(),
            "constants": {name: getattr(cls, name) for name in CONSTANTS.get(type_name, [])},
            "module": str(Path(sys.modules[cls.__module__].__file__).resolve()),
        }
    child.send_signal(signal.SIGINT)
    try:
        results["publisher_exit"] = child.wait(10)
    except subprocess.TimeoutExpired:
        child.kill()
        results["publisher_exit"] = -9
    results["publisher_log"] = (log_dir / "publisher.log").read_text()[-2000:]
    finish(results)


if __name__ == "__main__":
    if sys.argv[1:] == ["--publish"]:
        publish()
    else:
        main()
