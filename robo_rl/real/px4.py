"""PX4 offboard control over ROS 2 (px4_msgs through uXRCE-DDS), without ROS: what policy_node sends besides the
setpoint, and what it does on a fault.

PX4 accepts and keeps offboard control only while `OffboardControlMode` arrives at more than 2 Hz with the flag of
the setpoint being sent (PX4 user guide, "Offboard mode"); it switches to offboard and arms only on a
`VehicleCommand`, which policy_node sends only when asked (parameters px4_offboard, px4_arm), after the setpoint
stream has run for `REQUEST_AFTER_HEARTBEATS` heartbeats, as PX4 requires. PX4 answers each command with a
`VehicleCommandAck`; a refused or unanswered request is sent again (`confirmation` counting up) at most
`REQUEST_ATTEMPTS` times in all, `RETRY_AFTER_S` apart, and the outcome goes to /diagnostics
(`robo_rl.real.px4_link.OffboardLink`). PX4 stamps its messages in microseconds. Supported: PX4 v1.15 and later
(`PX4_VERSIONS`; the bundled px4_msgs hash like v1.15's and v1.16's, except VehicleStatus, which is v1.16's message
version 1 on `fmu/out/vehicle_status_v1`).

Hand-back (`robo_rl.real.px4_link.Px4HandBack`, for a profile with a `handover:` section, vehicle px4): when control
goes back to the vehicle (any fault, or a requested hand-back), policy_node asks PX4 to hold the vehicle itself: a
VehicleCommand DO_SET_MODE to AUTO_LOITER (PX4's Hold mode: main mode AUTO 4, sub mode LOITER 3). Hold is chosen
over Position mode (POSCTL 3) because POSCTL needs a manual control signal: without RC or joystick PX4 refuses to
switch to it (commander's mode checks clear its can-run bit when manual control is lost), while Hold needs only a
position estimate. Until PX4 accepts (VehicleCommandAck ACCEPTED, or VehicleStatus nav_state out of OFFBOARD),
policy_node keeps sending the hold setpoint (zero body rates at the hover thrust) with the heartbeat, resending the
request every `HANDBACK_RETRY_S` s, `HANDBACK_ATTEMPTS` sends at most; once accepted, or `fault_hold` s after the
hand-back without an acceptance, it goes silent: in Hold PX4 ignores offboard setpoints, and a PX4 still in offboard
mode meets its offboard-loss failsafe (COM_OF_LOSS_T, then COM_OBL_RC_ACT) as the last resort, with the benign hold
setpoint as the last one it received.

Without a hand-over section (`FaultHold`): on a fault PX4 keeps executing the last setpoint it received until its
offboard-loss failsafe acts, COM_OF_LOSS_T after the last heartbeat (1 s by default). Going silent right after a
10 rad/s setpoint would let it fly that for a second. So for a body-rate setpoint policy_node first sends, for
`fault_hold` s (profile, default 0.2 s), zero body rates at the hover thrust, with the heartbeat, then stops both.

The hover thrust is the profile's `px4.hover_thrust` (the vehicle's MPC_THR_HOVER): PX4 estimates it
(HoverThrustEstimate) but its uXRCE-DDS bridge does not export that topic by default (dds_topics.yaml), so the
vehicle cannot tell it; a profile that would hold without knowing it is refused (`robo_rl.real.profile`). Zero rates
hold the attitude the vehicle had, they do not level it; the hold is short on purpose. Other setpoint types go
silent at once: attitude (not bundled; level attitude would need the heading the faulty inputs may not give),
thrust and torque, and ActuatorMotors (no rate loop runs in PX4 for those: zero torque or equal motors freeze
whatever angular velocity the vehicle has, which is no safer than PX4's failsafe after COM_OF_LOSS_T; keep that
short).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

PACKAGE = "px4_msgs"
HEARTBEAT_HZ = 10.0
"""OffboardControlMode rate; PX4 needs more than 2 Hz."""
REQUEST_AFTER_HEARTBEATS = 10
"""Heartbeats (1 s) of setpoint stream before the mode switch and arming requests."""
REQUEST_ATTEMPTS = 3
"""Sends of one request, the first included, before policy_node gives up on it (and on the requests after it)."""
RETRY_AFTER_S = 0.5
"""Seconds after a refusal, or after a send with no answer, before the request is sent again."""
DEFAULT_FAULT_HOLD = 0.2
"""Seconds of zero body rates at the hold thrust after a fault, before silence."""
OFFBOARD_MODE_TOPIC = "fmu/in/offboard_control_mode"
VEHICLE_COMMAND_TOPIC = "fmu/in/vehicle_command"
VEHICLE_COMMAND_ACK_TOPIC = "fmu/out/vehicle_command_ack"
VEHICLE_STATUS_TOPICS = {"1.15": "", "1.16": "fmu/out/vehicle_status_v1"}
"""Where each PX4 release publishes the VehicleStatus that the bundled px4_msgs decodes: v1.16 publishes message
version 1 on `vehicle_status_v1` (versioned topics carry a `_vN` suffix for N > 0); v1.15's `vehicle_status` is
message version 0, whose fields differ (type hash), so it is not read there ("")."""
PX4_VERSIONS = tuple(VEHICLE_STATUS_TOPICS)
"""The values of policy_node's px4_version parameter: the oldest release whose messages match; later releases
serve v1.16's messages through PX4's message translation node."""
RATES_SETPOINT = "px4_msgs/msg/VehicleRatesSetpoint"
ACTUATOR_MOTORS = "px4_msgs/msg/ActuatorMotors"
OFFBOARD_FLAGS = (
    "position",
    "velocity",
    "acceleration",
    "attitude",
    "body_rate",
    "thrust_and_torque",
    "direct_actuator",
)
"""OffboardControlMode's boolean fields (PX4 v1.15+; v1.14's message differs)."""
SETPOINT_FLAG = {
    RATES_SETPOINT: "body_rate",
    "px4_msgs/msg/VehicleAttitudeSetpoint": "attitude",
    "px4_msgs/msg/VehicleThrustSetpoint": "thrust_and_torque",
    "px4_msgs/msg/VehicleTorqueSetpoint": "thrust_and_torque",
    ACTUATOR_MOTORS: "direct_actuator",
}
"""The OffboardControlMode flag each setpoint type needs."""
VEHICLE_CMD_DO_SET_MODE = 176
VEHICLE_CMD_COMPONENT_ARM_DISARM = 400
PX4_CUSTOM_MAIN_MODE_POSCTL = 3.0
PX4_CUSTOM_MAIN_MODE_AUTO = 4.0
PX4_CUSTOM_MAIN_MODE_OFFBOARD = 6.0
PX4_CUSTOM_SUB_MODE_AUTO_LOITER = 3.0
"""px4_custom_mode.h: main modes MANUAL 1, ALTCTL 2, POSCTL 3, AUTO 4, ACRO 5, OFFBOARD 6; AUTO's sub modes READY 1,
TAKEOFF 2, LOITER 3 (PX4's Hold mode)."""
MAV_MODE_FLAG_CUSTOM_MODE_ENABLED = 1.0
NAVIGATION_STATE_POSCTL = 2
NAVIGATION_STATE_AUTO_LOITER = 4
NAVIGATION_STATE_OFFBOARD = 14
"""VehicleStatus.nav_state values (msg/VehicleStatus.msg)."""
STREAM_BEFORE_S = 1.0
"""Seconds of hold setpoints an asked take-over streams before it begins when PX4's mode is unknown (no
VehicleStatus): PX4 enters offboard only after about a second of setpoints (REQUEST_AFTER_HEARTBEATS)."""
HANDBACK_RETRY_S = 0.1
"""Seconds between sends of the hand-back's mode switch while PX4 has not accepted it."""
HANDBACK_ATTEMPTS = 3
"""Sends of the hand-back's mode switch, the first included."""
ACK_RESULTS = {
    0: "accepted",
    1: "temporarily rejected",
    2: "denied",
    3: "unsupported",
    4: "failed",
    5: "in progress",
    6: "cancelled",
}
"""VehicleCommandAck.result (MAVLink MAV_RESULT) → words."""
ACK_ACCEPTED = 0

ROTORS = ("front_right", "back_right", "back_left", "front_left")
"""robo_rl's rotor order (robo_rl.sim.quadrotor.params): 0 front-right, 1 back-right, 2 back-left, 3 front-left; the
motor actions of a policy trained with action_mode=motor come in this order."""
PX4_QUAD_X_ORDER = ("front_right", "back_left", "front_left", "back_right")
"""PX4's quad-X motors 1..4 (ActuatorMotors control[0..3]): the CA_ROTOR0..3 positions of its quad-X airframes."""
_CONTROL = re.compile(r"^control\[([0-9]+)\]$")


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


def status_topic(version: str) -> str:
    """The VehicleStatus topic policy_node reads for PX4 release `version` ("" for none); ValueError naming the
    parameter for an unknown version."""
    if version not in VEHICLE_STATUS_TOPICS:
        raise ValueError(f"parameter 'px4_version': must be one of {PX4_VERSIONS}, got {version!r}")
    return VEHICLE_STATUS_TOPICS[version]


# ------------------------------------------------------------------------------------------------ motor order


def motor_permutation(order: tuple[str, ...]) -> tuple[int, ...]:
    """For PX4 motors 1..4 at the positions `order` (names from `ROTORS`): the robo_rl rotor index each one is;
    ValueError unless `order` names each rotor once."""
    if sorted(order) != sorted(ROTORS):
        raise ValueError(f"motor_order: must name each of {ROTORS} once, got {list(order)}")
    return tuple(ROTORS.index(name) for name in order)


def reorder_motors(fields: Mapping[str, float], permutation: tuple[int, ...]) -> dict[str, float]:
    """ActuatorMotors fields in robo_rl's rotor order (`control[k]` for rotor k) → PX4's (`control[i]` for motor
    i + 1, which is robo_rl rotor `permutation[i]`); other fields and controls beyond the rotors pass unchanged."""
    slot = {rotor: motor for motor, rotor in enumerate(permutation)}
    moved: dict[str, float] = {}
    for key, value in fields.items():
        match = _CONTROL.match(key)
        index = int(match.group(1)) if match else -1
        moved[f"control[{slot[index]}]" if index in slot else key] = value
    return moved


# ------------------------------------------------------------------------------------------------ fault hold


class FaultHold:
    """What goes to PX4 for each setpoint decision (see the module docstring): `setpoint(fields, fault, now)` returns
    the fields to publish, the hold setpoint's, or None for silence.

    `hold`: seconds of the hold (0: none); `hover_thrust`: normalized upward thrust in (0, 1], or 0 when unknown (then
    there is no hold: silence at once; the profile refuses a hold without it); `body_rates`: whether the setpoint is
    a VehicleRatesSetpoint (the only type with a hold)."""

    def __init__(self, hold: float, hover_thrust: float, body_rates: bool) -> None:
        if not (math.isfinite(hold) and hold >= 0 and 0 <= hover_thrust <= 1):
            raise ValueError(f"fault hold {hold} s must be >= 0 and hover thrust {hover_thrust} in [0, 1]")
        self.hold = hold if body_rates else 0.0
        self.hover_thrust = hover_thrust
        self.fault_since: float | None = None

    def restart(self) -> None:
        """Activation: no fault."""
        self.fault_since = None

    def setpoint(self, fields: Mapping[str, float], fault: str, now: float) -> dict[str, float] | None:
        """For the command `fields` with `fault` ("" for a good one) at `now` (s, monotonic): the fields to send, the
        hold's (zero rates at `thrust()`) within `hold` s of the fault's start, or None (silence)."""
        if not fault:
            self.fault_since = None
            return dict(fields)
        if self.fault_since is None:
            self.fault_since = now
        held = self.thrust()
        if held is None or not self._holding(now):
            return None
        return hold_setpoint(held)

    def thrust(self) -> tuple[float, float, float] | None:
        """The hold's thrust_body (FRD, normalized): the profile's hover thrust upward; None when it is unknown (the
        last commanded thrust may be 0 or full: never reused)."""
        if self.hover_thrust > 0:
            return (0.0, 0.0, -self.hover_thrust)
        return None

    def phase(self, now: float) -> str:
        """The fault phase: empty without a fault, "hold" during the hold, "silent" after it."""
        if self.fault_since is None:
            return ""
        return "hold" if self.thrust() is not None and self._holding(now) else "silent"

    def _holding(self, now: float) -> bool:
        """Within [fault start, fault start + hold), to 1 ns: float sums of periods land on the end exactly."""
        assert self.fault_since is not None
        return now - self.fault_since < self.hold - 1e-9


def hold_setpoint(thrust: tuple[float, float, float]) -> dict[str, float]:
    """The VehicleRatesSetpoint fields of the hold: zero body rates at `thrust` (thrust_body, FRD, normalized)."""
    return {"roll": 0.0, "pitch": 0.0, "yaw": 0.0, **{f"thrust_body[{i}]": thrust[i] for i in range(3)}}
