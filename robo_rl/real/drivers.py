"""The robot drivers the bundled profiles are written against, and what each accepts: a profile names its driver
(`driver:`), and one whose commands or inputs the driver cannot serve is refused with the reason.

- px4: PX4 v1.15+ through uXRCE-DDS (px4_msgs on fmu/in, fmu/out; NED/FRD, converted by the profile). The bundled
  px4_msgs hash like v1.15's and v1.16's (tests/real/ros/test_msgs.py); v1.14's OffboardControlMode and
  VehicleCommand differ.
- crazyswarm2: the Crazyflie ROS 2 server (IMRCLab/crazyswarm2, C++ backend crazyflie_server.cpp). Its command
  topics are cmd_vel_legacy (Twist: the legacy roll, pitch, yaw-rate and thrust setpoint), cmd_hover,
  cmd_position, cmd_velocity_world and cmd_full_state (crazyflie_interfaces). With the firmware parameters
  flightmode.stabModeRoll = flightmode.stabModePitch = 0 (rate mode) and the PID controller, cmd_vel_legacy carries
  roll and pitch rates in deg/s, a yaw rate and a thrust: the body rates and collective thrust of a ctbr policy
  (bundled profile quadrotor_crazyswarm2, whose signs and scales are checked against crazyswarm2 and
  crazyflie-firmware in tests/real/test_crazyswarm2.py). No topic takes per-motor commands: a motor policy flies on
  board (`robo-rl export --target crazyflie`). Its `odom` carries a world-frame velocity and no body rates (the rate
  fields are not logged); the gyro comes from a `custom_topics` log block (crazyflie_interfaces/LogDataGeneric).
- sim_bridge: robo_rl's simulator as a ROS node (sim/ros_bridge.py), which takes whatever the profile sends.
- ackermann: a car base taking ackermann_msgs/AckermannDriveStamped on `drive` (F1TENTH's ackermann_mux/VESC
  driver), or a Twist→Ackermann converter on `cmd_vel` (angular.z read as a yaw rate).
- ros2_control: joint_state_broadcaster (sensor_msgs/JointState, joints in the driver's order) and
  joint_trajectory_controller (trajectory_msgs/JointTrajectory with joint names).
Standard library only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Driver:
    name: str
    commands: tuple[str, ...] | None
    """Command message types it accepts; None: any (a simulator bridge)."""
    unusable: Mapping[str, str] = field(default_factory=dict)
    """Input message type → fields (dotted prefixes) it publishes but that carry no usable value, with why."""
    refusal: str = ""
    """Said when a profile's command is not among `commands`."""


CRAZYSWARM2_WHY = (
    "crazyswarm2 takes the legacy roll/pitch/yaw-rate/thrust setpoint (cmd_vel_legacy: body rates and thrust in "
    "the firmware's rate mode, for a ctbr policy, profile quadrotor_crazyswarm2), hover, position, world velocity "
    "or full-state setpoints, never per-motor commands; fly a motor policy on the Crazyflie itself with "
    "`robo-rl export --target crazyflie` (docs/ROBOT.md)"
)

CRAZYSWARM2_RATES = "geometry_msgs/msg/Twist"
"""The one crazyswarm2 command a robo_rl quadrotor policy (ctbr) fills: cmd_vel_legacy in the firmware's rate mode."""

DRIVERS: dict[str, Driver] = {
    "sim_bridge": Driver("sim_bridge", None),
    "px4": Driver(
        "px4",
        (
            "px4_msgs/msg/VehicleRatesSetpoint",
            "px4_msgs/msg/VehicleAttitudeSetpoint",
            "px4_msgs/msg/VehicleThrustSetpoint",
            "px4_msgs/msg/VehicleTorqueSetpoint",
            "px4_msgs/msg/ActuatorMotors",
        ),
        refusal="PX4 offboard control takes px4_msgs setpoints on fmu/in",
    ),
    "crazyswarm2": Driver(
        "crazyswarm2",
        (
            "geometry_msgs/msg/Twist",
            "crazyflie_interfaces/msg/Hover",
            "crazyflie_interfaces/msg/Position",
            "crazyflie_interfaces/msg/VelocityWorld",
            "crazyflie_interfaces/msg/FullState",
        ),
        # The C++ server's odom logs no rates (crazyflie_server.cpp, on_logging_odom); read the gyro from a
        # custom_topics log block instead.
        unusable={
            "nav_msgs/msg/Odometry": "twist.twist.angular",
        },
        refusal=CRAZYSWARM2_WHY,
    ),
    "ackermann": Driver(
        "ackermann",
        ("ackermann_msgs/msg/AckermannDriveStamped", "geometry_msgs/msg/Twist"),
        refusal="a car base takes AckermannDriveStamped, or Twist through a Twist→Ackermann converter",
    ),
    "ros2_control": Driver(
        "ros2_control",
        ("trajectory_msgs/msg/JointTrajectory",),
        refusal="joint_trajectory_controller takes trajectory_msgs/JointTrajectory",
    ),
}


def driver_problem(name: str, kind: str, command_types: Iterable[str], sources: Mapping[str, Iterable[str]]) -> str:
    """Why driver `name` cannot serve a profile of `kind` with these command types and these observation sources
    per input message type (`{"nav_msgs/msg/Odometry": ["odom.twist.twist.angular.x", ...]}`); "" when it can."""
    if not name:
        return ""
    if name not in DRIVERS:
        return f"unknown driver {name!r} (known: {', '.join(sorted(DRIVERS))})"
    driver = DRIVERS[name]
    if name == "crazyswarm2" and kind == "quadrotor":
        others = [command for command in command_types if command != CRAZYSWARM2_RATES]
        if others:
            return f"{name} does not fly a quadrotor policy's {others[0]}: {CRAZYSWARM2_WHY}"
    for command in command_types:
        if driver.commands is not None and command not in driver.commands:
            return f"{name} does not take {command}: {driver.refusal}"
    for message_type, prefix in driver.unusable.items():
        for source in sources.get(message_type, ()):
            if prefix in source:
                return f"{name} publishes no usable {prefix} in {message_type} (read by {source})"
    return ""
