"""policy_node against a stand-in PX4: a probe node built on px4_msgs (the definitions in ros_msgs/) that publishes
VehicleOdometry as PX4 does (NED position, FRD→NED attitude, NED velocity, FRD body rates, microsecond stamps) and
VehicleStatus as PX4 v1.16 does (message version 1 on fmu/out/vehicle_status_v1), answers each VehicleCommand with
a VehicleCommandAck (the first of each command DENIED, the next ACCEPTED; an accepted DO_SET_MODE changes the
nav_state it reports: OFFBOARD, or AUTO_LOITER for the hand-back's Hold), asks policy_node to take over (the
bundled profile's vehicle holds until a "policy" request on vehicle_request, sent until its diagnostics show the
hand-over; the take-over waits for PX4 in offboard, asked by policy_node or, without requests, by a pilot the stand-in
plays: PILOT_AFTER), and records what a PX4 would receive on
fmu/in: the rates setpoints, the OffboardControlMode heartbeat and the VehicleCommands, plus policy_node's
/diagnostics. The odometry stops, as when PX4's estimator or the link fails, once it has run FLIGHT_S and what the
tests judge has happened (MIN_SETPOINTS setpoints, MIN_HEARTBEATS heartbeats, the asked requests accepted), however
slow the machine; the recording then runs until policy_node is silent (its fault phase "silent", or its hand-back
to PX4 answered: px4_handback "PX4 holds ..." or "gave up ..."), plus SILENT_S.
The wall-clock figures (heartbeat gaps, stamp offsets) are reported for bench/ros_timing.py, never asserted.

argv: LOG_DIR POLICY REQUESTS [PROFILE] (REQUESTS "none", or "offboard+arm": set policy_node's px4_offboard and
px4_arm, with px4_target_system 7 and px4_target_component 3; PROFILE: a profile YAML instead of quadrotor_px4, e.g.
one sending ActuatorMotors, which are recorded too). POLICY is a linear probe policy of test_px4.py.
"""

from __future__ import annotations

import itertools
import statistics
import sys
import time
from pathlib import Path

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from harness import (
    Processes,
    finish,
    generous_profile,
    ros_args,
    spin_for,
    spin_publishing_until,
    spin_until,
)
from px4_msgs.msg import (
    ActuatorMotors,
    OffboardControlMode,
    VehicleCommand,
    VehicleCommandAck,
    VehicleOdometry,
    VehicleRatesSetpoint,
    VehicleStatus,
)
from rclpy.qos import qos_profile_sensor_data
from std_msgs.msg import String

FLIGHT_S = 4.0
PILOT_AFTER = 150
"""Without offboard requests (REQUESTS none) the stand-in plays a pilot who switches PX4 to offboard once this many
hold setpoints have arrived (PX4 takes offboard only after the stream has run), then, once the flight has run, back
to Position mode PILOT_BACK_S before the odometry stops."""
PILOT_BACK_S = 1.5
SILENT_S = 1.5
MIN_SETPOINTS = 150
MIN_HEARTBEATS = 20
SETTLE_S = 90.0
FLAGS = ("position", "velocity", "acceleration", "attitude", "body_rate", "thrust_and_torque", "direct_actuator")


def wall_clock_figures(setpoints: list, beats: list) -> dict[str, float | None]:
    """bench/ros_timing.py's figures: the heartbeat's gaps as received (PX4 wants >= 2 Hz; the node sends 10 Hz)
    and how far a setpoint's or heartbeat's stamp is from the receiver's clock when it arrives."""
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(beats)]
    offsets = [abs(m[2] - m[1]) / 1e3 for m in [*setpoints, *beats]]
    return {
        "heartbeat_gap_median_s": statistics.median(gaps) if gaps else None,
        "heartbeat_gap_max_s": max(gaps) if gaps else None,
        "stamp_offset_max_ms": max(offsets) if offsets else None,
    }


def main() -> None:
    log_dir, policy, requests = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    # The bundled profile with a generous staleness timeout (harness.generous_profile): on a busy machine the stand-in
    # stalls for more than the profile's 50 ms now and then, and the hand-back would start before odometry stops.
    profile = sys.argv[4] if len(sys.argv) > 4 else generous_profile(log_dir, "quadrotor_px4")
    processes = Processes(log_dir)
    params = {"policy": policy, "profile": profile, "autostart": True, "target": [0.0, 0.0, 1.0]}
    params["diagnostics_period"] = 0.2
    if requests == "offboard+arm":
        params |= {"px4_offboard": True, "px4_arm": True, "px4_target_system": 7, "px4_target_component": 3}
    processes.start("policy_node", "policy_node", *ros_args("policy_node", "/", **params))
    rclpy.init()
    probe = rclpy.create_node("px4_stand_in")
    now_us = lambda: probe.get_clock().now().nanoseconds // 1000  # noqa: E731
    setpoints: list[tuple[float, int, int, float, float, float, float]] = []
    beats: list[tuple[float, int, int, tuple[bool, ...]]] = []
    commands: list[tuple[float, int, float, float, int, int, bool, int, float]] = []
    motors: list[tuple[float, int, list[float]]] = []
    diagnostics: list[tuple[float, str, dict[str, str]]] = []
    accepted: set[int] = set()
    nav_state = [VehicleStatus.NAVIGATION_STATE_POSCTL]
    taken_over = [False]
    acks = probe.create_publisher(VehicleCommandAck, "/fmu/out/vehicle_command_ack", qos_profile_sensor_data)

    def on_setpoint(m: VehicleRatesSetpoint) -> None:
        setpoints.append((time.monotonic(), m.timestamp, now_us(), m.roll, m.pitch, m.yaw, float(m.thrust_body[2])))

    def on_motors(m: ActuatorMotors) -> None:
        motors.append((time.monotonic(), m.timestamp, [float(c) for c in m.control[:4]]))

    def on_mode(m: OffboardControlMode) -> None:
        beats.append((time.monotonic(), m.timestamp, now_us(), tuple(bool(getattr(m, f)) for f in FLAGS)))

    def on_command(m: VehicleCommand) -> None:
        commands.append(
            (
                time.monotonic(),
                m.command,
                m.param1,
                m.param2,
                m.target_system,
                m.target_component,
                m.from_external,
                m.confirmation,
                m.param3,
            )
        )
        # As PX4's commander: an ack to the sender; here the first of each command is denied, the next accepted.
        result = VehicleCommandAck.VEHICLE_CMD_RESULT_DENIED
        if m.confirmation:
            result = VehicleCommandAck.VEHICLE_CMD_RESULT_ACCEPTED
            accepted.add(m.command)
            if m.command == VehicleCommand.VEHICLE_CMD_DO_SET_MODE:  # PX4's custom main mode 6, or AUTO (4) LOITER (3)
                modes = {6: VehicleStatus.NAVIGATION_STATE_OFFBOARD, 4: VehicleStatus.NAVIGATION_STATE_AUTO_LOITER}
                nav_state[0] = modes.get(round(m.param2), nav_state[0])
        ack = VehicleCommandAck(timestamp=now_us(), command=m.command, result=result)
        ack.target_system, ack.target_component = m.source_system, m.source_component
        acks.publish(ack)

    def on_diagnostics(message: DiagnosticArray) -> None:
        for status in message.status:
            if status.name == "/policy_node":
                values = {kv.key: kv.value for kv in status.values}
                diagnostics.append((time.monotonic(), status.message, values))
                taken_over[0] |= values.get("handover_mode", "policy") != "vehicle" and status.message == "active"

    probe.create_subscription(VehicleRatesSetpoint, "/fmu/in/vehicle_rates_setpoint", on_setpoint, 100)
    probe.create_subscription(ActuatorMotors, "/fmu/in/actuator_motors", on_motors, 100)
    probe.create_subscription(OffboardControlMode, "/fmu/in/offboard_control_mode", on_mode, 100)
    probe.create_subscription(VehicleCommand, "/fmu/in/vehicle_command", on_command, 100)
    probe.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 100)
    odometry = probe.create_publisher(VehicleOdometry, "/fmu/out/vehicle_odometry", qos_profile_sensor_data)
    status = probe.create_publisher(VehicleStatus, "/fmu/out/vehicle_status_v1", qos_profile_sensor_data)
    vehicle_request = probe.create_publisher(String, "/vehicle_request", 10)
    tick = [0]

    def publish_odometry() -> None:
        m = VehicleOdometry()
        m.timestamp = m.timestamp_sample = now_us()
        m.pose_frame = VehicleOdometry.POSE_FRAME_NED
        m.position = [0.0, 0.0, -0.8]  # 0.8 m up, 0.2 m below the target (ENU z 1.0)
        m.q = [1.0, 0.0, 0.0, 0.0]  # level, nose north
        m.velocity_frame = VehicleOdometry.VELOCITY_FRAME_NED
        m.velocity = [0.0, 0.0, 0.0]
        m.angular_velocity = [0.3, 0.5, 0.2]  # FRD: rolling right, pitching nose up, yawing right (clockwise)
        odometry.publish(m)
        tick[0] += 1
        if tick[0] % 20 == 0 and not taken_over[0]:  # until policy_node shows the take-over
            vehicle_request.publish(String(data="policy"))
        if tick[0] % 10 == 0:  # VehicleStatus at 10 Hz
            s = VehicleStatus(timestamp=now_us())
            armed = VehicleCommand.VEHICLE_CMD_COMPONENT_ARM_DISARM in accepted
            s.arming_state = VehicleStatus.ARMING_STATE_ARMED if armed else VehicleStatus.ARMING_STATE_DISARMED
            s.nav_state = nav_state[0]
            status.publish(s)

    pilot_back: list[float] = []

    def flown() -> bool:
        sent = len(setpoints) + len(motors)
        if requests == "none" and sent >= PILOT_AFTER and nav_state[0] == VehicleStatus.NAVIGATION_STATE_POSCTL:
            if not pilot_back:  # the pilot switches PX4 to offboard once the hold setpoints have streamed
                nav_state[0] = VehicleStatus.NAVIGATION_STATE_OFFBOARD
        done = requests == "none" or len(accepted) == 2
        enough = sent >= MIN_SETPOINTS and len(beats) >= MIN_HEARTBEATS and done
        enough = enough and time.monotonic() >= started + FLIGHT_S
        if not (enough and requests == "none"):
            return enough
        if not pilot_back:  # ... and back to Position mode before the fault, which then finds PX4 not in offboard
            nav_state[0] = VehicleStatus.NAVIGATION_STATE_POSCTL
            pilot_back.append(time.monotonic())
        return time.monotonic() >= pilot_back[0] + PILOT_BACK_S

    def silent() -> bool:
        handed = ("PX4 holds", "gave up")
        return any(
            d[0] > stopped
            and (d[2].get("px4_fault_phase") == "silent" or d[2].get("px4_handback", "").startswith(handed))
            for d in diagnostics
        )

    ready = spin_until(probe, lambda: odometry.get_subscription_count() > 0, 20.0)
    started = time.monotonic()
    spin_publishing_until(probe, flown, SETTLE_S, publish_odometry, 0.01)
    stopped = time.monotonic()
    spin_until(probe, silent, SETTLE_S)
    spin_for(probe, SILENT_S)
    flying = [d for d in diagnostics if d[0] < stopped]
    results = {
        "ready": ready,
        "stopped": stopped,
        "setpoints": setpoints,
        "motors": motors,
        "heartbeats": beats,
        "commands": commands,
        "flight_diagnostics": flying[-1] if flying else None,
        "last_diagnostics": diagnostics[-1] if diagnostics else None,
    }
    results |= wall_clock_figures(setpoints, [b for b in beats if b[0] < stopped])
    finish(results, processes, ["policy_node"])


if __name__ == "__main__":
    main()
