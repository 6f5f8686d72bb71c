"""PX4 offboard control over ROS 2 (px4_msgs through uXRCE-DDS), without ROS: what policy_node sends besides the
setpoint, and what it does on a fault.

PX4 accepts and keeps offboard control only while `OffboardControlMode` arrives at more than 2 Hz with the flag of
the setpoint being sent (PX4 user guide, "Offboard mode"); it switches to offboard and arms only on a
`VehicleCommand`, which policy_node sends only when asked (parameters px4_offboard, px4_arm), after the setpoint
stream has run for `REQUEST_AFTER_HEARTBEATS` heartbeats, as PX4 requires. PX4 answers each command with a
`VehicleCommandAck`; a refused or unanswered request is sent again (`confirmation` counting up) at most
`REQUEST_ATTEMPTS` times in all, `RETRY_AFTER_S` apart, and the outcome goes to /diagnostics. PX4 stamps its
messages in microseconds. Supported: PX4 v1.15 and later (`PX4_VERSIONS`; the bundled px4_msgs hash like v1.15's
and v1.16's, except VehicleStatus, which is v1.16's message version 1 on `fmu/out/vehicle_status_v1`).

Hand-back (`Px4HandBack`, for a profile with a `handover:` section, vehicle px4): when control goes back to the
vehicle (any fault, or a requested hand-back), policy_node asks PX4 to hold the vehicle itself: a VehicleCommand
DO_SET_MODE to AUTO_LOITER (PX4's Hold mode: main mode AUTO 4, sub mode LOITER 3). Hold is chosen over Position
mode (POSCTL 3) because POSCTL needs a manual control signal: without RC or joystick PX4 refuses to switch to it
(commander's mode checks clear its can-run bit when manual control is lost), while Hold needs only a position
estimate. Until PX4 accepts (VehicleCommandAck ACCEPTED, or VehicleStatus nav_state out of OFFBOARD), policy_node
keeps sending the hold setpoint (zero body rates at the hover thrust) with the heartbeat, resending the request
every `HANDBACK_RETRY_S` s, `HANDBACK_ATTEMPTS` sends at most; once accepted, or `fault_hold` s after the hand-back
without an acceptance, it goes silent: in Hold PX4 ignores offboard setpoints, and a PX4 still in offboard mode
meets its offboard-loss failsafe (COM_OF_LOSS_T, then COM_OBL_RC_ACT) as the last resort, with the benign hold
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
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from robo_rl.real.handover import HandoverStep, Mode

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


# ------------------------------------------------------------------------------------------ vehicle commands


@dataclass(frozen=True)
class VehicleRequest:
    """One VehicleCommand: `command` with `param1`, `param2`, from outside PX4."""

    name: str
    command: int
    param1: float
    param2: float = 0.0
    param3: float = 0.0

    def fields(
        self, now_us: int, target_system: int = 1, target_component: int = 1, confirmation: int = 0
    ) -> dict[str, object]:
        """The message fields: for MAVLink system `target_system`, component `target_component` (PX4's MAV_SYS_ID
        and its autopilot component, 1 and 1 by default); `confirmation` counts the resends."""
        return {
            "timestamp": now_us,
            "command": self.command,
            "param1": self.param1,
            "param2": self.param2,
            "param3": self.param3,
            "target_system": target_system,
            "target_component": target_component,
            "source_system": 1,
            "source_component": 1,
            "confirmation": confirmation,
            "from_external": True,
        }


OFFBOARD_REQUEST = VehicleRequest(
    "offboard", VEHICLE_CMD_DO_SET_MODE, MAV_MODE_FLAG_CUSTOM_MODE_ENABLED, PX4_CUSTOM_MAIN_MODE_OFFBOARD
)
ARM_REQUEST = VehicleRequest("arm", VEHICLE_CMD_COMPONENT_ARM_DISARM, 1.0)
HOLD_REQUEST = VehicleRequest(
    "hold",
    VEHICLE_CMD_DO_SET_MODE,
    MAV_MODE_FLAG_CUSTOM_MODE_ENABLED,
    PX4_CUSTOM_MAIN_MODE_AUTO,
    PX4_CUSTOM_SUB_MODE_AUTO_LOITER,
)
"""The hand-back: PX4's Hold mode (AUTO_LOITER), which holds position without stick input."""


@dataclass
class RequestState:
    """One request's progress: sends so far, when last sent, PX4's last answer, the outcome."""

    request: VehicleRequest
    sends: int = 0
    sent_at: float = 0.0
    answer: str = ""
    outcome: str = ""
    """Empty while pending, "accepted", or "gave up"."""

    def report(self) -> str:
        if not self.sends:
            return "waiting"
        answer = f" (last answer: {self.answer})" if self.answer and self.outcome != "accepted" else ""
        status = self.outcome or "pending"
        return f"{status} after {self.sends} send{'s' if self.sends > 1 else ''}{answer}"


class OffboardLink:
    """When to send the heartbeat and the requests: `on_command(published, fault, now)` for every setpoint
    decision, `heartbeat_due(now)` at HEARTBEAT_HZ, `requests(now)` with each heartbeat once the stream has run long
    enough (each with its `confirmation`), `on_ack(command, result)` for each VehicleCommandAck."""

    def __init__(self, offboard: bool, arm: bool, staleness: float) -> None:
        wanted = [r for r, asked in ((OFFBOARD_REQUEST, offboard), (ARM_REQUEST, arm)) if asked]
        self.states = [RequestState(request) for request in wanted]
        self.staleness = staleness
        self.last_command: float | None = None
        self.faulted = False
        self.heartbeats = 0

    def restart(self) -> None:
        """The policy takes over again: the asked requests start afresh after a new run of heartbeats (PX4 left
        offboard at the last hand-back, so it must be asked again)."""
        self.states = [RequestState(state.request) for state in self.states]
        self.heartbeats = 0

    def on_command(self, published: bool, fault: bool, now: float) -> None:
        """A setpoint decision: `published` keeps the heartbeat going, silence stops it; no request goes out
        while a `fault` lasts (the fault hold's setpoints are published)."""
        self.last_command = now if published else None
        self.faulted = fault

    def heartbeat_due(self, now: float) -> bool:
        """Send a heartbeat now: only while setpoints are published (the last one within `staleness` s)."""
        flowing = self.last_command is not None and now - self.last_command <= self.staleness
        if flowing:
            self.heartbeats += 1
        return flowing

    def requests(self, now: float) -> list[tuple[VehicleRequest, int]]:
        """The request to send now with its confirmation (0 first, then 1, 2, ...): the first pending one, after the
        first REQUEST_AFTER_HEARTBEATS heartbeats (1 s of setpoints), again RETRY_AFTER_S after a refusal or an
        unanswered send, at most REQUEST_ATTEMPTS sends; one that gives up ends the sequence (no arming after a
        refused mode switch)."""
        state = self._current()
        if self.faulted or self.heartbeats <= REQUEST_AFTER_HEARTBEATS or state is None:
            return []
        if state.sends and now - state.sent_at < RETRY_AFTER_S:
            return []
        if state.sends >= REQUEST_ATTEMPTS:
            state.outcome = "gave up"
            return []
        state.sends += 1
        state.sent_at = now
        return [(state.request, state.sends - 1)]

    def on_ack(self, command: int, result: int) -> str:
        """PX4's answer to a command: recorded for the pending request with that command (others are ignored);
        returns the words for the answer ("" when it was not for a pending request)."""
        state = self._current()
        if state is None or not state.sends or state.request.command != command:
            return ""
        state.answer = ACK_RESULTS.get(result, f"result {result}")
        if result == ACK_ACCEPTED:
            state.outcome = "accepted"
        return state.answer

    def _current(self) -> RequestState | None:
        for state in self.states:
            if state.outcome == "gave up":
                return None
            if not state.outcome:
                return state
        return None

    def offboard_accepted(self) -> bool:
        """PX4 accepted our offboard request since the last take-over."""
        return any(s.request is OFFBOARD_REQUEST and s.outcome == "accepted" for s in self.states)

    def gave_up(self) -> RequestState | None:
        """The request PX4 refused REQUEST_ATTEMPTS times (or never answered), if any."""
        return next((s for s in self.states if s.outcome == "gave up"), None)

    def diagnostics(self) -> dict[str, object]:
        """`px4_request_<name>`: each request's state, e.g. "accepted after 2 sends"."""
        return {f"px4_request_{s.request.name}": s.report() for s in self.states}


# ----------------------------------------------------------------------------------------------------- hand-back


class Px4HandBack:
    """The hand-back to PX4's Hold mode (the module docstring), stepped by time: `start(now)` when control goes back
    to the vehicle, then each period `setpoint(now)` (the hold setpoint, or None: silent) and `due(now)` (the
    confirmation of a mode-switch send due now, or None); PX4's answers through `on_ack` and `on_nav_state`.

    Phases: "" (no hand-back since the last take-over), "switching" (hold setpoints, the request sent until PX4
    accepts), "accepted" (PX4 holds the vehicle: silent), "gave up" (not accepted within `hold` s: silent, PX4's
    offboard-loss failsafe acts)."""

    def __init__(self, hold: float, hover_thrust: float) -> None:
        if not (math.isfinite(hold) and hold > 0 and 0 < hover_thrust <= 1):
            raise ValueError(f"hand-back hold {hold} s must be > 0 and hover thrust {hover_thrust} in (0, 1]")
        self.hold = hold
        self.thrust = (0.0, 0.0, -hover_thrust)
        self.phase = ""
        self.since = 0.0
        self.sends = 0
        self.sent_at = 0.0
        self.answer = ""
        self.how = ""
        self.nav_state: int | None = None
        """PX4's last reported nav_state (None: no VehicleStatus read)."""

    def reset(self) -> None:
        """The policy took over: no hand-back pending."""
        self.phase, self.sends, self.answer, self.how = "", 0, "", ""

    def start(self, now: float, offboard_acked: bool = False) -> None:
        """Control went back to the vehicle at `now` (s, monotonic). When PX4 reports a mode other than offboard
        (and did not just accept our offboard request, `offboard_acked`), it is not flying our setpoints: nothing to
        hand back, and a pilot's mode is not overridden."""
        self.phase, self.since, self.sends, self.answer, self.how = "switching", now, 0, "", ""
        if self.nav_state is not None and self.nav_state != NAVIGATION_STATE_OFFBOARD and not offboard_acked:
            self.phase, self.how = "accepted", f"not in offboard: nav_state {self.nav_state}"

    def setpoint(self, now: float) -> dict[str, float] | None:
        """The hold setpoint while PX4 has not accepted and the hold lasts; None (silence) otherwise."""
        if self.phase != "switching":
            return None
        if now - self.since >= self.hold - 1e-9:
            self.phase = "gave up"
            return None
        return hold_setpoint(self.thrust)

    def due(self, now: float) -> int | None:
        """The confirmation (0, 1, ...) of the mode-switch send due now; None when none is."""
        if self.phase != "switching" or self.sends >= HANDBACK_ATTEMPTS:
            return None
        if self.sends and now - self.sent_at < HANDBACK_RETRY_S - 1e-9:
            return None
        self.sends += 1
        self.sent_at = now
        return self.sends - 1

    def on_ack(self, command: int, result: int) -> str:
        """PX4's answer to a command: taken while switching, for the mode switch (words, else "")."""
        if self.phase != "switching" or not self.sends or command != HOLD_REQUEST.command:
            return ""
        self.answer = ACK_RESULTS.get(result, f"result {result}")
        if result == ACK_ACCEPTED:
            self.phase, self.how = "accepted", "acknowledged"
        return self.answer

    def on_nav_state(self, nav_state: int) -> None:
        """PX4's VehicleStatus: out of offboard while switching, PX4 is in charge (it switched, or its failsafe or
        the pilot did)."""
        self.nav_state = nav_state
        if self.phase == "switching" and nav_state != NAVIGATION_STATE_OFFBOARD:
            self.phase, self.how = "accepted", f"nav_state {nav_state}"

    def report(self) -> str:
        if not self.phase:
            return ""
        sends = f"{self.sends} send{'s' if self.sends != 1 else ''}"
        if self.phase == "accepted":
            return f"PX4 holds ({self.how} after {sends})" if self.sends else f"PX4 holds ({self.how})"
        if self.phase == "switching":
            return f"switching to Hold ({sends})"
        answer = f", last answer: {self.answer}" if self.answer else ", no answer"
        return f"gave up after {sends}{answer}: PX4's offboard-loss failsafe acts"


class Px4Vehicle:
    """PX4's side of the hand-over (`robo_rl.real.handover.VehicleLink`), without ROS: while the vehicle holds, the
    hand-back's hold setpoints and mode switch (`Px4HandBack`) go out through `send_setpoint` and `send_request`;
    while the policy commands, nothing here (the setpoints go out as usual). `link` is the heartbeat's
    `OffboardLink`: it runs while hold setpoints are sent, and its requests start afresh at each take-over."""

    def __init__(
        self,
        handback: Px4HandBack,
        link: OffboardLink,
        send_setpoint: Callable[[dict[str, float]], None],
        send_request: Callable[[VehicleRequest, int], None],
        clock: Callable[[], float],
    ) -> None:
        self.handback = handback
        self.link = link
        self.send_setpoint = send_setpoint
        self.send_request = send_request
        self.clock = clock
        self.streaming_since: float | None = None
        self.left_offboard = False
        """PX4 reported leaving offboard while the policy flew (`control_lost`)."""
        """When the hold setpoints of an asked take-over began (None: not streaming)."""

    def on_step(self, step: HandoverStep, fields: Mapping[str, float], observed: Mapping[str, float]) -> bool:
        now = self.clock()
        if step.waiting and self.handback.phase != "switching":
            self._stream(now)
            return True
        self.streaming_since = None
        if step.took_over:
            self.handback.reset()
            self.left_offboard = False
        if step.handed_back:
            self.handback.start(now, offboard_acked=self.link.offboard_accepted() and not self.left_offboard)
        if step.mode is not Mode.VEHICLE:
            return False
        sent = self.handback.setpoint(now)
        self.link.on_command(sent is not None, True, now)
        if sent is not None:
            self.send_setpoint(sent)
            confirmation = self.handback.due(now)
            if confirmation is not None:
                self.send_request(HOLD_REQUEST, confirmation)
        return True

    def _stream(self, now: float) -> None:
        """An asked take-over waits for offboard: the hold setpoint (zero rates at hover thrust: what Hold does)
        with the heartbeat, from which PX4 may be switched to offboard (by the pilot, or by the offboard request
        when px4_offboard asks it); PX4 ignores the setpoints until then."""
        if self.streaming_since is None:
            self.streaming_since = now
            self.link.restart()  # the offboard request counts its heartbeats from here
        self.link.on_command(True, False, now)
        self.send_setpoint(hold_setpoint(self.handback.thrust))

    def takeover_wait(self) -> str:
        """An asked take-over begins once PX4 flies our setpoints: its VehicleStatus says offboard; without
        VehicleStatus (px4_version 1.15), once PX4 accepted our offboard request, or else after STREAM_BEFORE_S of
        hold setpoints (the stream PX4 needs before it may enter offboard)."""
        if self.handback.phase == "switching":
            return "PX4 has not taken the last hand-back yet"
        nav_state = self.handback.nav_state
        if nav_state is not None:
            return "" if nav_state == NAVIGATION_STATE_OFFBOARD else f"PX4 is not in offboard (nav_state {nav_state})"
        if self.link.offboard_accepted():
            return ""
        since = self.streaming_since
        if since is None or self.clock() - since < STREAM_BEFORE_S - 1e-9:
            return "streaming the hold setpoint before offboard"
        return ""

    def control_lost(self) -> str:
        """PX4 left offboard while the policy flies (its pilot switched modes, or a failsafe acted): PX4 no longer
        executes our setpoints, so control goes back (and the hand-back sends nothing: PX4 is not in offboard)."""
        nav_state = self.handback.nav_state
        if nav_state is None or nav_state == NAVIGATION_STATE_OFFBOARD:
            return ""
        self.left_offboard = True  # read after our offboard request's ack: the hand-back must not switch modes
        return f"PX4 left offboard (nav_state {nav_state})"

    def request(self, word: str) -> str:
        return f"unknown request {word!r} (PX4 takes policy, vehicle)"

    def ready(self) -> str:
        """A take-over waits until PX4 has answered the last hand-back (accepted, or the hold has run out)."""
        if self.handback.phase == "switching":
            return "PX4 has not taken the last hand-back yet"
        return ""

    def on_ack(self, command: int, result: int) -> str:
        """PX4's answer: the hand-back's while it switches, else the offboard link's requests'."""
        if self.handback.phase == "switching":
            return self.handback.on_ack(command, result)
        return self.link.on_ack(command, result)

    def diagnostics(self) -> dict[str, object]:
        return {"px4_handback": self.handback.report()}
