"""Robot profiles: what a deployed policy must look like for one robot, and how its actions become commands.

A profile is a YAML file mapped onto frozen dataclasses; unknown or missing keys and bad values stop with one
line naming the file and the field, e.g. `rc_car.yaml: actions[1].rate_limit: must be > 0, got -1.0`.
Bundled profiles live in `profiles/` and load by name with `load_profile("rc_car")`. The optional sections
`workspace`, `action_box` and `episode` set up learning on the robot (`robo_rl.real.safety_box`,
`robo_rl.real.episode`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass, fields
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from robo_rl.real.drivers import driver_problem
from robo_rl.real.handover import HandoverSettings
from robo_rl.real.images import RESIZE_METHODS, FrameSettings
from robo_rl.real.px4 import DEFAULT_FAULT_HOLD, PX4_QUAD_X_ORDER, RATES_SETPOINT, motor_permutation

KINDS = ("quadrotor", "rc_car", "arm")

# Linear conversions source unit → (SI unit, factor): value_si = factor × value_source.
UNIT_CONVERSIONS: dict[tuple[str, str], float] = {
    ("deg", "rad"): math.pi / 180.0,
    ("deg/s", "rad/s"): math.pi / 180.0,
    ("rpm", "rad/s"): 2.0 * math.pi / 60.0,
    ("mm", "m"): 1e-3,
    ("cm", "m"): 1e-2,
    ("mm/s", "m/s"): 1e-3,
    ("cm/s", "m/s"): 1e-2,
    ("km/h", "m/s"): 1.0 / 3.6,
    ("g", "m/s^2"): 9.80665,
}

_FIELD_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[0-9]+\])?(\.[A-Za-z_][A-Za-z0-9_]*(\[[0-9]+\])?)*$")
_HISTORY_SOURCE = re.compile(r"^previous_action\[([0-9]+)\]\.(.+)$")
_INTEGRAL_SOURCE = re.compile(r"^integral\((.+)\)$")
INTEGRAL_UNIT_SUFFIX = "*s"
"""The unit of an `integral(FIELD)` observation is FIELD's unit times seconds (`m*s` for a position error in m)."""


class ProfileError(ValueError):
    """A robot profile file is malformed; the message names the file and the field."""


def unit_factor(source_unit: str, unit: str) -> float:
    """Factor turning a value in `source_unit` into `unit`; raises KeyError when no conversion is known."""
    if source_unit == unit:
        return 1.0
    return UNIT_CONVERSIONS[(source_unit, unit)]


def history_source(source: str) -> tuple[int, str] | None:
    """`(steps_back, action_name)` for a `previous_action[K].NAME` source (K = 0 is the last command), else None."""
    match = _HISTORY_SOURCE.match(source)
    return (int(match.group(1)), match.group(2)) if match else None


def integral_source(source: str) -> str | None:
    """The field of an `integral(FIELD)` source, else None: the observation is FIELD's running integral over the
    policy's control periods, clipped to the policy's bound (`robo_rl.real.assembler.ObservationAssembler`)."""
    match = _INTEGRAL_SOURCE.match(source)
    return match.group(1) if match else None


def source_field(source: str) -> str | None:
    """The message field an observation source reads: the source itself, or an integral's field; None for a
    `previous_action[K].NAME` source (the assembler's own record)."""
    if history_source(source) is not None:
        return None
    return integral_source(source) or source


@dataclass(frozen=True)
class ObservationField:
    name: str
    """Observation name in the policy's metadata (`robo_rl.obs_names`)."""
    source: str
    """Key in the flat field dict the ROS side builds from its messages (e.g. `odom.twist.twist.linear.x`),
    `previous_action[K].ACTION` for the action commanded K + 1 periods ago (policy units), or `integral(FIELD)`
    for the running integral of FIELD over the policy's control periods (e.g. `integral(state.position_error.x)`:
    at each period the policy commands, I = clip(I + dt * FIELD, -L, L), L the policy's bound of the observation;
    0 when the policy's control starts; its unit is FIELD's times s)."""
    unit: str
    """Unit the policy expects (`robo_rl.obs_units`)."""
    source_unit: str = ""
    """Unit of the source value (of an integral's field); empty means `unit` (the integral's unit without its
    `*s`). Converted with `UNIT_CONVERSIONS`."""

    def __post_init__(self) -> None:
        _require(bool(self.name), "name", "must not be empty")
        field = self.field
        _require(field is None or bool(_FIELD_PATH.match(field)), "source", f"bad field {self.source!r}")
        if integral_source(self.source) is not None:
            suffix = INTEGRAL_UNIT_SUFFIX
            message = f"an integral's unit is its field's times s (e.g. m{suffix}), got {self.unit!r}"
            _require(self.unit.endswith(suffix) and len(self.unit) > len(suffix), "unit", message)
        try:
            unit_factor(self.source_unit or self.field_unit, self.field_unit)
        except KeyError:
            known = ", ".join(f"{a}->{b}" for a, b in UNIT_CONVERSIONS)
            message = f"source_unit: no conversion {self.source_unit!r} -> {self.field_unit!r} (known: {known})"
            raise ProfileError(message) from None

    @property
    def field(self) -> str | None:
        """The message field read (`source_field`): None for a previous action."""
        return source_field(self.source)

    @property
    def field_unit(self) -> str:
        """The policy's unit of the field read: `unit`, or an integral's without its `*s`."""
        if integral_source(self.source) is not None:
            return self.unit.removesuffix(INTEGRAL_UNIT_SUFFIX)
        return self.unit

    @property
    def factor(self) -> float:
        """Multiplier from the source value (an integral's field value) to the policy's unit."""
        return unit_factor(self.source_unit or self.field_unit, self.field_unit)


@dataclass(frozen=True)
class ActionLimit:
    name: str
    """Action name in the policy's metadata (`robo_rl.action_names`)."""
    unit: str
    """Action unit (`robo_rl.action_units`)."""
    low: float
    """Lower bound the policy must have been exported with; the safety filter clips to it."""
    high: float
    """Upper bound the policy must have been exported with; the safety filter clips to it."""
    safe: float
    """Value commanded on faults, stale observations and e-stop; within [low, high]. With the profile's
    `safe_command: hold_measured`: the home pose, commanded only on request (faults hold the measured pose)."""
    rate_limit: float = math.inf
    """Largest change per second in the action's unit (inf: no rate limit)."""

    def __post_init__(self) -> None:
        _require(bool(self.name), "name", "must not be empty")
        _require(math.isfinite(self.low) and math.isfinite(self.high), "low", "bounds must be finite")
        _require(self.low <= self.high, "low", f"must be <= high, got low={self.low} high={self.high}")
        _require(self.low <= self.safe <= self.high, "safe", f"must lie in [{self.low}, {self.high}], got {self.safe}")
        _require(self.rate_limit > 0, "rate_limit", f"must be > 0, got {self.rate_limit}")


ESC_COMMANDS = ("", "speed", "throttle")
"""`CommandField.esc` choices (the values of `robo_rl.actuator.DRIVE_MODES`, or empty)."""
TRANSFORMS = ("", "ackermann_yaw_rate")
"""How a command field is computed from its action besides the linear map (see `CommandField.transform`)."""
BODY_FRAMES = ("flu", "frd")


@dataclass(frozen=True)
class CommandField:
    action: str
    """Action name whose value feeds this field."""
    field: str
    """Command message field, dotted with indices (e.g. `linear.x`, `thrust_body[2]`, `drive.speed`)."""
    scale: float = 1.0
    """field = offset + scale × action."""
    offset: float = 0.0
    """field = offset + scale × action."""
    axis: str = ""
    """For a component of a body-frame vector (rates, thrust): "x", "y" or "z". The value is computed in robo_rl's
    FLU body frame and converted to the command's `body_frame` (`robo_rl.real.frames`). Empty: a scalar."""
    transform: str = ""
    """"ackermann_yaw_rate": the field is the yaw rate of a car steering at angle offset + scale × action (rad) at
    the command's `linear.x` speed, speed × tan(angle) / the command's `wheelbase` (rad/s): what Twist→Ackermann
    converters read from `angular.z`. Empty: the linear map."""
    ceiling: float = math.inf
    """Largest value sent, in the field's unit: a higher one is sent as `ceiling` (e.g. 60000, the thrust cap of
    crazyswarm2's cmd_vel_legacy and of the Crazyflie firmware's legacy commander). inf: none."""
    zero_below: float = -math.inf
    """A value (after `ceiling`) below this is sent as 0, in the field's unit: a motor cut-off (a Crazyflie's legacy
    thrust, where 0 stops the motors and releases the firmware's thrust lock). -inf: none."""
    relative_to: str = ""
    """A measured source the field moves from (e.g. `joint_states.position[0]`): field = that source's latest value
    + scale × action (a step from the measured value, e.g. a joint-angle step of mujoco/peg_insert, whose servo
    target is the measured angle plus the action). `offset`, `axis` and `transform` stay unset; the profile must
    hold its measured pose (`safe_command: hold_measured`), and the source must be the measured position of the
    field's joint. The safety filter bounds the step (the action's bounds) and rate limits the absolute value sent
    (`robo_rl.real.safety.SafetyFilter`). Empty: offset + scale × action."""
    esc: str = ""
    """For an RC car's drive: what the car's ESC receives in this field, "speed" (a speed setpoint in m/s,
    offset + scale × action: a VESC in speed mode, AckermannDriveStamped `speed`, Twist `linear.x`) or "throttle"
    (a throttle/duty fraction). It must be what the policy's drive action means (its recorded
    `robo_rl.actuator.DriveActuator`, `robo_rl.real.runtime.drive_mismatches`). Empty: not a drive field."""

    def __post_init__(self) -> None:
        _require(bool(_FIELD_PATH.match(self.field)), "field", f"bad field {self.field!r}")
        _require(math.isfinite(self.scale) and math.isfinite(self.offset), "scale", "scale and offset must be finite")
        _require(self.axis in ("", "x", "y", "z"), "axis", f"must be x, y, z or empty, got {self.axis!r}")
        _require(self.transform in TRANSFORMS, "transform", f"must be one of {TRANSFORMS}, got {self.transform!r}")
        bounds = f"zero_below={self.zero_below} ceiling={self.ceiling}"
        _require(not math.isnan(self.ceiling) and not math.isnan(self.zero_below), "ceiling", "must not be nan")
        _require(self.zero_below < self.ceiling, "zero_below", f"must be < ceiling, got {bounds}")
        _require(self.esc in ESC_COMMANDS, "esc", f"must be one of {ESC_COMMANDS}, got {self.esc!r}")
        if self.relative_to:
            self._check_relative()

    def _check_relative(self) -> None:
        source = self.relative_to
        valid = bool(_FIELD_PATH.match(source)) and history_source(source) is None
        example = "a measured message field, e.g. joint_states.position[0]"
        _require(valid, "relative_to", f"bad source {source!r} ({example})")
        _require(self.scale != 0, "scale", "a relative_to field needs a scale != 0")
        unset = [key for key in ("offset", "axis", "transform", "esc") if getattr(self, key)]
        message = f"a relative field moves from its source: {', '.join(unset)} must stay unset"
        _require(not unset, "relative_to", message)


@dataclass(frozen=True)
class CommandSpec:
    type: str
    """ROS message type, `pkg/msg/Name` (e.g. `geometry_msgs/msg/Twist`)."""
    topic: str
    """Topic the command is published on (remapped in the hardware launch files)."""
    fields: tuple[CommandField, ...]
    """How actions fill the message; fields not listed keep their defaults."""
    body_frame: str = "flu"
    """The body frame of the message's vectors: "flu" (ROS, REP 103) or "frd" (PX4); fields with an `axis` are
    converted to it."""
    wheelbase: float = 0.0
    """Front-to-rear axle distance in m, for `ackermann_yaw_rate` fields."""
    joint_names: tuple[str, ...] = ()
    """For a `trajectory_msgs/msg/JointTrajectory` command (required there): `joint_names` of the message, the
    joint of `points[0].positions[i]` being `joint_names[i]`."""

    def __post_init__(self) -> None:
        valid = self.type.count("/") == 2 and "/msg/" in self.type
        _require(valid, "type", f"expected pkg/msg/Name, got {self.type!r}")
        _require(bool(self.topic), "topic", "must not be empty")
        _require(len(self.fields) > 0, "fields", "must not be empty")
        _require(self.body_frame in BODY_FRAMES, "body_frame", f"must be one of {BODY_FRAMES}, got {self.body_frame!r}")
        if self.type == JOINT_TRAJECTORY:
            _require(bool(self.joint_names), "joint_names", "a JointTrajectory command lists its joint names")
        _require_unique(self.joint_names, "joint_names")
        if any(f.transform == "ackermann_yaw_rate" for f in self.fields):
            _require(self.wheelbase > 0, "wheelbase", "an ackermann_yaw_rate field needs the wheelbase (m, > 0)")
            speed = [f for f in self.fields if f.field == "linear.x" and not f.transform]
            _require(bool(speed), "fields", "an ackermann_yaw_rate field needs the speed in a linear.x field")

    @property
    def package(self) -> str:
        """The message package (`ackermann_msgs` for `ackermann_msgs/msg/AckermannDriveStamped`)."""
        return self.type.split("/")[0]


JOINT_STATE = "sensor_msgs/msg/JointState"
JOINT_TRAJECTORY = "trajectory_msgs/msg/JointTrajectory"
HOLD_MEASURED = "hold_measured"
SAFE_COMMANDS = ("fixed", HOLD_MEASURED)
"""`RobotProfile.safe_command` choices."""
DERIVATIONS = ("quadrotor_state", "px4_state")
"""Inputs a node computes from other inputs instead of subscribing (see `robo_rl.real.derive`)."""
IMAGE = "sensor_msgs/msg/Image"
COMPRESSED_IMAGE = "sensor_msgs/msg/CompressedImage"
IMAGE_TYPES = (IMAGE, COMPRESSED_IMAGE)
"""Input types that carry a camera's frames to a camera policy's image input (`InputSpec.camera`)."""


@dataclass(frozen=True)
class CropBox:
    """The part of a camera's frame a policy sees, in the frame's pixels (before the resize to the spec's size)."""

    left: int
    top: int
    width: int
    height: int

    def __post_init__(self) -> None:
        _require(self.left >= 0 and self.top >= 0, "left", f"left and top must be >= 0, got {self.left}, {self.top}")
        _require(self.width >= 1 and self.height >= 1, "width", f"must be >= 1, got {self.width}x{self.height}")

    @property
    def box(self) -> tuple[int, int, int, int]:
        """`(left, top, width, height)`, as `robo_rl.real.images` takes it."""
        return self.left, self.top, self.width, self.height


@dataclass(frozen=True)
class InputSpec:
    """Where the sources `NAME.*` of the observations come from: a subscribed topic, or a derivation."""

    name: str
    """First segment of the sources it provides (`odom` for `odom.twist.twist.linear.x`)."""
    type: str = ""
    """ROS message type `pkg/msg/Name` of the topic; empty for a derived input."""
    topic: str = ""
    """Topic to subscribe (relative names resolve in the node's namespace); empty means `name`."""
    labels: tuple[str, ...] = ()
    """For a `*MultiArray` message: `data[i]` is published to the sources as `NAME.labels[i]`."""
    derive: str = ""
    """A derivation from `DERIVATIONS` computed from the input `source` (e.g. `quadrotor_state` from `odom`)."""
    source: str = ""
    """The input a derivation reads."""
    joints: tuple[str, ...] = ()
    """For a `sensor_msgs/msg/JointState` input (required there): the joint names, read by name (drivers publish
    their own order, often alphabetical): `NAME.position[i]` / `velocity[i]` / `effort[i]` are joint `joints[i]`."""
    camera: str = ""
    """For a `sensor_msgs/msg/Image` or `CompressedImage` input (required there): the camera of the policy's artifact
    (`robo_rl.images`) its frames feed. An image input provides no observation fields; it is watched for staleness
    like any input (no frame for `staleness_timeout` s: the safe command)."""
    resize: str = ""
    """An image input's scaling to the camera's size: "area" (the default: the mean of the covered input pixels,
    for shrinking) or "bilinear" (`robo_rl.real.images`)."""
    crop: CropBox | None = None
    """An image input's crop box in the frame's pixels; None: the centred largest box of the camera's aspect ratio."""
    channels: int = 0
    """What an image input's camera sends: 3 (colour) or 1 (grey), checked against the policy's camera (colour
    frames feed a grey camera as luma, grey frames never feed a colour one); 0: not stated (checked per frame)."""

    def __post_init__(self) -> None:
        _require(bool(re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", self.name)), "name", f"bad input name {self.name!r}")
        self._check_image()
        if self.type == JOINT_STATE:
            _require(bool(self.joints), "joints", "a JointState input lists its joint names (read by name)")
        else:
            _require(not self.joints, "joints", f"only a {JOINT_STATE} input has joint names")
        _require_unique(self.joints, "joints")
        if self.derive:
            _require(self.derive in DERIVATIONS, "derive", f"must be one of {DERIVATIONS}, got {self.derive!r}")
            _require(bool(self.source), "source", "a derived input names the input it reads")
            _require(not self.type and not self.labels, "type", "a derived input has no message type or labels")
        else:
            valid = self.type.count("/") == 2 and "/msg/" in self.type
            _require(valid, "type", f"expected pkg/msg/Name, got {self.type!r}")
        for label in self.labels:
            _require(bool(_FIELD_PATH.match(label)), "labels", f"bad label {label!r}")

    def _check_image(self) -> None:
        image = self.type in IMAGE_TYPES
        if not image:
            for key in ("camera", "resize", "crop", "channels"):
                _require(not getattr(self, key), key, f"only an image input ({', '.join(IMAGE_TYPES)}) has one")
            return
        valid = self.camera.isidentifier()
        _require(valid, "camera", f"an image input names the policy camera it feeds, got {self.camera!r}")
        _require(not self.labels, "labels", "an image input has no labels")
        choices = ("", *RESIZE_METHODS)
        _require(self.resize in choices, "resize", f"must be one of {RESIZE_METHODS}, got {self.resize!r}")
        _require(self.channels in (0, 1, 3), "channels", f"must be 3 (colour) or 1 (grey), got {self.channels}")

    @property
    def topic_name(self) -> str:
        return self.topic or self.name

    @property
    def frame_settings(self) -> FrameSettings:
        """How an image input's frames are cropped and resized (`robo_rl.real.images`)."""
        return FrameSettings(self.resize or RESIZE_METHODS[0], None if self.crop is None else self.crop.box)


@dataclass(frozen=True)
class WorkspaceLimit:
    """A limit on observation sources while learning on the robot (`robo_rl.real.safety_box`): one source's value,
    or the Euclidean norm of several, must lie in [low, high]."""

    source: str = ""
    """The field limited (`track.lateral_offset`); give this or `norm`."""
    norm: tuple[str, ...] = ()
    """Fields whose Euclidean norm is limited (a distance from its x, y, z); give this or `source`."""
    low: float = -math.inf
    """Smallest value allowed (-inf: none)."""
    high: float = math.inf
    """Largest value allowed (inf: none)."""

    def __post_init__(self) -> None:
        _require(bool(self.source) != bool(self.norm), "source", "give either source or norm")
        key = "source" if self.source else "norm"
        for source in self.sources:
            valid = bool(_FIELD_PATH.match(source)) and history_source(source) is None
            _require(valid, key, f"bad field {source!r}")
        _require_unique(self.norm, "norm")
        _require(not (math.isnan(self.low) or math.isnan(self.high)), "low", "bounds must not be nan")
        _require(self.low <= self.high, "low", f"must be <= high, got low={self.low} high={self.high}")
        _require(math.isfinite(self.low) or math.isfinite(self.high), "low", "give low, high or both")

    @property
    def sources(self) -> tuple[str, ...]:
        """The fields read."""
        return (self.source,) if self.source else self.norm

    @property
    def label(self) -> str:
        """The limited quantity as messages name it: the source, or `|a, b, c|` for a norm."""
        return self.source or f"|{', '.join(self.norm)}|"


@dataclass(frozen=True)
class ActionBound:
    """Tighter bounds on one action while learning on the robot (e.g. a car's top speed), in policy units."""

    action: str
    """Action name."""
    low: float
    """Lower bound, within the action's bounds and <= its safe value."""
    high: float
    """Upper bound, within the action's bounds and >= its safe value."""

    def __post_init__(self) -> None:
        _require(math.isfinite(self.low) and math.isfinite(self.high), "low", "bounds must be finite")
        _require(self.low <= self.high, "low", f"must be <= high, got low={self.low} high={self.high}")


@dataclass(frozen=True)
class ResetMove:
    """One segment of a scripted reset or a recovery: a command held for `steps` control periods."""

    steps: int
    """Control periods the command is sent for (>= 1)."""
    action: tuple[tuple[str, float], ...] = ()
    """Action name → value in policy units (YAML: a mapping); actions not named take their safe value."""

    def __post_init__(self) -> None:
        _require(self.steps >= 1, "steps", f"must be >= 1, got {self.steps}")
        for name, value in self.action:
            _require(math.isfinite(value), "action", f"{name}: must be finite, got {value}")


RESET_MODES = ("scripted", "human", "recovery")
"""How the robot gets back to a start state between episodes (see `EpisodeSettings.reset`)."""
SUCCESS_SOURCES = ("reward", "button", "classifier")
"""What decides an episode's success (see `EpisodeSettings.success`)."""


@dataclass(frozen=True)
class EpisodeSettings:
    """Episodes of learning on the robot (`robo_rl.real.episode`): their length and how the robot is reset."""

    reset: str = "human"
    """"scripted": `reset_actions` are sent (until `reset_done` holds, when given). "human": the safe command is
    sent until the operator presses reset. "recovery": `recovery_actions` are sent after a failure until the
    workspace holds again, at most `max_recoveries` times, then the operator resets."""
    max_steps: int = 0
    """Steps after which an episode is truncated (0: no limit)."""
    success: str = "reward"
    """What decides success: "reward" (the task's reward), "button" (the operator), "classifier" (a learned one)."""
    reset_actions: tuple[ResetMove, ...] = ()
    """The scripted reset's moves, in order (`reset: scripted` only)."""
    reset_done: tuple[WorkspaceLimit, ...] = ()
    """Limits that all hold when a scripted or recovery reset has reached the start state (e.g. joints within a
    tolerance of the home pose); empty: the script's end."""
    recovery_actions: tuple[ResetMove, ...] = ()
    """One recovery's moves, in order (`reset: recovery` only)."""
    max_recoveries: int = 3
    """Recoveries tried in a row before the operator is asked to reset."""
    prompt: str = "put the robot in its start state, then press reset"
    """What the operator is told when a reset needs them."""

    def __post_init__(self) -> None:
        _require(self.reset in RESET_MODES, "reset", f"must be one of {RESET_MODES}, got {self.reset!r}")
        _require(self.success in SUCCESS_SOURCES, "success", f"must be one of {SUCCESS_SOURCES}, got {self.success!r}")
        _require(self.max_steps >= 0, "max_steps", f"must be >= 0, got {self.max_steps}")
        _require(self.max_recoveries >= 1, "max_recoveries", f"must be >= 1, got {self.max_recoveries}")
        _require(bool(self.prompt), "prompt", "must not be empty")
        scripted, recovery = self.reset == "scripted", self.reset == "recovery"
        _require(bool(self.reset_actions) == scripted, "reset_actions", "needed by, and only by, reset: scripted")
        _require(bool(self.recovery_actions) == recovery, "recovery_actions", "needed by, and only by, reset: recovery")
        _require(not self.reset_done or self.reset != "human", "reset_done", "a human reset ends with the button")


@dataclass(frozen=True)
class Px4Settings:
    """What policy_node does for a PX4 vehicle besides the setpoints (`robo_rl.real.px4`)."""

    fault_hold: float = DEFAULT_FAULT_HOLD
    """Seconds of zero body rates at the hold thrust, with the heartbeat, after a fault, before the node goes silent
    and PX4's offboard-loss failsafe acts (VehicleRatesSetpoint only; other setpoints go silent at once). 0: none."""
    hover_thrust: float = 0.0
    """The hold's thrust, normalized upward in (0, 1]: the vehicle's MPC_THR_HOVER (PX4's uXRCE-DDS bridge does not
    export its HoverThrustEstimate by default, so the vehicle cannot tell it). 0: unknown, refused for a profile
    that holds (a handover section, or a fault hold on a VehicleRatesSetpoint)."""
    motor_order: tuple[str, ...] = PX4_QUAD_X_ORDER
    """For an ActuatorMotors command: the positions of PX4's motors 1..4 (`control[0..3]`, its CA_ROTOR0..3), named
    from robo_rl's rotors (front_right, back_right, back_left, front_left). The profile's fields write `control[k]`
    for robo_rl rotor k; policy_node moves each to its PX4 motor. Default: PX4's quad-X airframes."""

    def __post_init__(self) -> None:
        _require(math.isfinite(self.fault_hold) and self.fault_hold >= 0, "fault_hold", "must be >= 0 s")
        _require(0.0 <= self.hover_thrust <= 1.0, "hover_thrust", f"must lie in [0, 1], got {self.hover_thrust}")
        try:
            motor_permutation(self.motor_order)
        except ValueError as err:
            raise ProfileError(str(err)) from None


@dataclass(frozen=True)
class CrazyswarmSettings:
    """What policy_node does for a Crazyflie through crazyswarm2 besides the setpoints (`robo_rl.real.crazyflie_link`):
    its high-level commander takes off, holds and lands it; the policy flies only in between."""

    takeoff_height: float = 0.5
    """Height (m, world z) of the high-level take-off, where the vehicle hovers until the policy takes over."""
    takeoff_duration: float = 2.0
    """Seconds of the take-off climb; the policy may not take over before it ends."""
    land_duration: float = 2.0
    """Seconds of the high-level landing (to z = 0)."""
    unlock_packets: int = 10
    """Zero-thrust cmd_vel_legacy packets, one per period, sent on the ground before the take-off: the firmware's
    thrust lock opens only on a packet with thrust exactly 0 (several, in case the radio drops one)."""
    handback_duration: float = 1.0
    """Seconds of the high-level go_to that holds the vehicle where it is when the policy hands back."""
    ground_height: float = 0.1
    """The vehicle counts as on the ground (a take-off may be asked) below this odometry z (m)."""

    def __post_init__(self) -> None:
        _require(
            0.0 < self.takeoff_height < 10.0, "takeoff_height", f"must lie in (0, 10) m, got {self.takeoff_height}"
        )
        for name in ("takeoff_duration", "land_duration", "handback_duration"):
            value = getattr(self, name)
            _require(math.isfinite(value) and value > 0, name, f"must be > 0 s, got {value}")
        _require(self.unlock_packets >= 1, "unlock_packets", f"must be >= 1, got {self.unlock_packets}")
        _require(
            0.0 < self.ground_height < self.takeoff_height,
            "ground_height",
            f"must lie in (0, takeoff_height {self.takeoff_height}) m, got {self.ground_height}",
        )


@dataclass(frozen=True)
class VescCalibration:
    """A VESC car's ESC and steering servo calibration: the keys of its vesc.yaml, as F1TENTH's vesc packages read
    them (f1tenth/vesc, ros2 branch). vesc_ackermann's `ackermann_to_vesc` node maps an AckermannDriveStamped
    linearly and clamps nothing: erpm = speed_to_erpm_gain × speed (m/s) + speed_to_erpm_offset, servo =
    steering_angle_to_servo_gain × steering angle (rad) + steering_angle_to_servo_offset. vesc_driver clamps what
    it passes on to the VESC: the erpm to [speed_min, speed_max], the servo value to [servo_min, servo_max]. So the
    car executes only the speeds and steering angles these limits reach (`speed_reach`, `steering_reach`); the
    profile refuses commands beyond them, which the car would execute differently from the simulator."""

    speed_to_erpm_gain: float
    """Electrical RPM per m/s of speed setpoint (motor pole pairs × gear ratio × 60 / wheel circumference); != 0."""
    speed_to_erpm_offset: float
    """ERPM at a speed setpoint of 0 (0 on a calibrated car)."""
    steering_angle_to_servo_gain: float
    """Servo value per rad of steering angle (negative where a larger value steers right); != 0."""
    steering_angle_to_servo_offset: float
    """Servo value of straight wheels, within [servo_min, servo_max]."""
    servo_min: float
    """Smallest servo value vesc_driver passes on, in [0, 1] (the VESC's servo output range)."""
    servo_max: float
    """Largest servo value vesc_driver passes on, in (servo_min, 1]."""
    speed_min: float
    """Smallest ERPM vesc_driver passes on (negative: reverse); it must contain the ERPM of speed 0."""
    speed_max: float
    """Largest ERPM vesc_driver passes on."""

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            _require(math.isfinite(value), item.name, f"must be a finite number, got {value}")
        _require(self.speed_to_erpm_gain != 0, "speed_to_erpm_gain", "must not be 0 (no speed would reach the ESC)")
        message = "must not be 0 (no steering angle would reach the servo)"
        _require(self.steering_angle_to_servo_gain != 0, "steering_angle_to_servo_gain", message)
        servo = f"servo_min={self.servo_min} servo_max={self.servo_max}"
        inside = 0.0 <= self.servo_min < self.servo_max <= 1.0
        _require(inside, "servo_min", f"need 0 <= servo_min < servo_max <= 1 (the VESC's servo range), got {servo}")
        speeds = f"speed_min={self.speed_min} speed_max={self.speed_max}"
        _require(self.speed_min < self.speed_max, "speed_min", f"must be < speed_max, got {speeds}")
        straight = self.servo_min <= self.steering_angle_to_servo_offset <= self.servo_max
        message = f"straight wheels (servo = offset) must lie in [servo_min, servo_max], got {self.servo_text}"
        _require(straight, "steering_angle_to_servo_offset", message)
        stop = self.speed_min <= self.speed_to_erpm_offset <= self.speed_max
        limits = self.speed_text("speed_min", "speed_max")
        message = f"speed 0 (erpm = offset) must lie in [speed_min, speed_max], got {limits}"
        _require(stop, "speed_to_erpm_offset", message)

    def erpm_command(self, speed: float) -> float:
        """The ERPM ackermann_to_vesc sends for a speed setpoint in m/s (unclamped)."""
        return self.speed_to_erpm_gain * speed + self.speed_to_erpm_offset

    def erpm_output(self, speed: float) -> float:
        """The ERPM vesc_driver passes on to the VESC: `erpm_command` clamped to [speed_min, speed_max]."""
        return min(max(self.erpm_command(speed), self.speed_min), self.speed_max)

    def servo_command(self, angle: float) -> float:
        """The servo value ackermann_to_vesc sends for a steering angle in rad (unclamped)."""
        return self.steering_angle_to_servo_gain * angle + self.steering_angle_to_servo_offset

    def servo_output(self, angle: float) -> float:
        """The servo value vesc_driver passes on to the VESC: `servo_command` clamped to [servo_min, servo_max]."""
        return min(max(self.servo_command(angle), self.servo_min), self.servo_max)

    @property
    def speed_reach(self) -> tuple[float, float]:
        """(lowest, highest) speed setpoint in m/s the ESC executes: the inverse map at speed_min and speed_max."""
        ends = [
            (erpm - self.speed_to_erpm_offset) / self.speed_to_erpm_gain for erpm in (self.speed_min, self.speed_max)
        ]
        return min(ends), max(ends)

    @property
    def steering_reach(self) -> tuple[float, float]:
        """(lowest, highest) steering angle in rad the servo executes: the inverse map at servo_min and servo_max."""
        gain, offset = self.steering_angle_to_servo_gain, self.steering_angle_to_servo_offset
        ends = [(servo - offset) / gain for servo in (self.servo_min, self.servo_max)]
        return min(ends), max(ends)

    @property
    def reverse_limit_key(self) -> str:
        """The vesc_driver limit that bounds reverse: speed_min, or speed_max where the gain is negative."""
        return "speed_min" if self.speed_to_erpm_gain > 0 else "speed_max"

    @property
    def forward_limit_key(self) -> str:
        """The vesc_driver limit that bounds forward speed."""
        return "speed_max" if self.speed_to_erpm_gain > 0 else "speed_min"

    @property
    def servo_text(self) -> str:
        """The servo calibration as error messages name it."""
        return (
            f"servo_min {self.servo_min:g}, servo_max {self.servo_max:g}, steering_angle_to_servo_gain "
            f"{self.steering_angle_to_servo_gain:g}, steering_angle_to_servo_offset "
            f"{self.steering_angle_to_servo_offset:g}"
        )

    def speed_text(self, *keys: str) -> str:
        """The ERPM limits `keys` and the speed calibration as error messages name them."""
        limits = "".join(f"{key} {getattr(self, key):g} erpm, " for key in keys)
        gain, offset = self.speed_to_erpm_gain, self.speed_to_erpm_offset
        return f"{limits}speed_to_erpm_gain {gain:g}, speed_to_erpm_offset {offset:g}"


def carries_steering_angle(field: CommandField) -> bool:
    """Whether a command field is a car's steering angle: an Ackermann `steering_angle` field, or a Twist yaw rate
    made from one (`ackermann_yaw_rate`), which a Twist→Ackermann converter turns back into that angle."""
    return field.field.endswith("steering_angle") or field.transform == "ackermann_yaw_rate"


CALIBRATION_TOLERANCE = 1e-3
"""rad or m/s: how far a command may lie beyond what the servo or the ESC reaches (a calibration written with a
few digits)."""


def _field_range(field: CommandField, limit: ActionLimit) -> tuple[float, float, str]:
    """(lowest, highest) value of `offset + scale × action` over the action's bounds, and the map as text."""
    low, high = sorted(field.offset + field.scale * value for value in (limit.low, limit.high))
    offset = f"{field.offset:g} + " if field.offset else ""
    return low, high, f"{offset}{field.scale:g} * {field.action} in [{limit.low:g}, {limit.high:g}]"


def _steering_problem(vesc: VescCalibration, where: str, low: float, high: float) -> str:
    reach_low, reach_high = vesc.steering_reach
    return (
        f"steering: {where} commands {low:+.3f} to {high:+.3f} rad, the servo reaches {reach_low:+.3f} to "
        f"{reach_high:+.3f} rad ({vesc.servo_text}; angle = (servo - offset) / gain): the car would steer less "
        "than the policy learned; calibrate the servo (docs/ROBOT.md) or train with the car's steering limit"
    )


def _speed_problem(vesc: VescCalibration, where: str, high: float) -> str:
    key = vesc.forward_limit_key
    return (
        f"speed: {where} commands up to {high:.3f} m/s, the ESC reaches {vesc.speed_reach[1]:.3f} m/s "
        f"({vesc.speed_text(key)}): {key} must reach {vesc.erpm_command(high):.0f} erpm"
    )


def source_input(source: str) -> str:
    """The input a source reads: its first segment (`odom` for `odom.twist.twist.linear.x`, `track` for
    `track.lookahead[3]`, `state` for `integral(state.position_error.x)`)."""
    return re.split(r"[.\[]", integral_source(source) or source, maxsplit=1)[0]


@dataclass(frozen=True)
class RobotProfile:
    name: str
    """Profile name (the file stem for bundled profiles)."""
    kind: str
    """One of `KINDS`: quadrotor, rc_car, arm."""
    task: str
    """Task the policy must have been trained on (`robo_rl.task`)."""
    dt: float
    """Control period in seconds the robot runs at; the policy's `robo_rl.dt` must match within `dt_tolerance`."""
    dt_tolerance: float
    """Largest accepted |policy dt - dt| in seconds."""
    staleness_timeout: float
    """Seconds without a new observation after which the safe command is sent."""
    observations: tuple[ObservationField, ...]
    """Policy observations in the order the policy expects them."""
    actions: tuple[ActionLimit, ...]
    """Policy actions in the order the policy outputs them."""
    commands: tuple[CommandSpec, ...]
    """Command message choices, preferred first (the first whose package is importable is used)."""
    inputs: tuple[InputSpec, ...] = ()
    """Topics and derivations feeding the observation sources (needed by the ROS nodes, not by the core)."""
    driver: str = ""
    """The robot driver the profile is written against (`robo_rl.real.drivers`: px4, crazyswarm2, sim_bridge,
    ackermann, ros2_control); a profile that driver cannot serve is refused, saying why. Empty: not checked."""
    workspace: tuple[WorkspaceLimit, ...] = ()
    """Limits on observation sources while learning on the robot; leaving them ends the episode. Empty: none."""
    action_box: tuple[ActionBound, ...] = ()
    """Tighter action bounds while learning on the robot. Empty: the actions' own bounds."""
    episode: EpisodeSettings | None = None
    """Episodes of learning on the robot; None: human resets, no step limit."""
    px4: Px4Settings | None = None
    """PX4 fault hold and motor order (driver px4); None: the defaults of `Px4Settings`."""
    crazyswarm2: CrazyswarmSettings | None = None
    """Take-off, landing and hand-back through crazyswarm2's high-level commander (driver crazyswarm2, with a
    handover section of vehicle crazyswarm2); None: the defaults of `CrazyswarmSettings`."""
    handover: HandoverSettings | None = None
    """Who holds the vehicle while the policy does not, and how the policy takes over (`robo_rl.real.handover`);
    None: the policy commands from activation and every fault sends the safe command."""
    vesc: VescCalibration | None = None
    """A VESC car's speed and steering calibration, its vesc.yaml's (`VescCalibration`): the servo must reach every
    steering angle the actions command, the ESC every forward speed, and a policy's reverse must stop where its
    simulator's did (`robo_rl.real.runtime.esc_mismatches`). None: not checked."""
    safe_command: str = "fixed"
    """What the node commands on a fault, e-stop or deactivation. "fixed": each action's `safe` value (motors off,
    zero speed). "hold_measured" (position-commanded joints: every command a JointTrajectory whose
    `points[0].positions[i]` fields come from the joints of a JointState input): the last complete measured pose
    of the joints, taken when the safe commands begin and held while they last; nothing before the first measured
    pose after activation. The rate limits then restart from the measured pose, and the actions' `safe` values are
    the home pose, commanded only on request (policy_node's `go_home`), rate limited."""
    task_params: tuple[str, ...] = ()
    """`key=value` settings of `task` the policy must have been trained with besides the task's defaults (e.g.
    `action_mode=ctbr` where the commands are body rates); sim_bridge makes its simulator with them. `frame=NAME`
    states the airframe: a policy must have been trained on it or on several airframes (`robo_rl.real.airframe`,
    checked from the policy's recorded task config). Empty: none."""

    def __post_init__(self) -> None:
        _require(bool(self.name), "name", "must not be empty")
        _require(bool(self.task), "task", "must not be empty")
        for param in self.task_params:
            _require(bool(re.match(r"^\w[\w.]*=", param)), "task_params", f"expected key=value, got {param!r}")
        _require(self.kind in KINDS, "kind", f"must be one of {KINDS}, got {self.kind!r}")
        _require(self.dt > 0, "dt", f"must be > 0, got {self.dt}")
        _require(self.dt_tolerance >= 0, "dt_tolerance", f"must be >= 0, got {self.dt_tolerance}")
        _require(self.staleness_timeout > 0, "staleness_timeout", f"must be > 0, got {self.staleness_timeout}")
        _require(len(self.observations) > 0, "observations", "must not be empty")
        _require(len(self.actions) > 0, "actions", "must not be empty")
        _require(len(self.commands) > 0, "commands", "must not be empty")
        _require_unique([o.name for o in self.observations], "observations")
        _require_unique([a.name for a in self.actions], "actions")
        _require_unique([i.name for i in self.inputs], "inputs")
        self._check_references()
        self._check_joint_commands()
        self._check_driver()
        if self.inputs:
            self._check_inputs()
        self._check_workspace()
        self._check_action_box()
        self._check_episode()
        self._check_relative_fields()
        self._check_safe_command()
        self._check_handover()
        crazyswarm2 = self.handover is not None and self.handover.vehicle == "crazyswarm2"
        _require(
            self.crazyswarm2 is None or crazyswarm2, "crazyswarm2", "needs a handover section of vehicle crazyswarm2"
        )
        self._check_hover_thrust()
        self._check_vesc()

    def _check_handover(self) -> None:
        """The hold command has one value per action within its bounds; the vehicle's controller is one the
        driver has (crazyswarm2's commander, PX4's position mode; an arm's held pose needs hold_measured)."""
        handover = self.handover
        if handover is None:
            return
        if handover.hold:
            _require(
                len(handover.hold) == len(self.actions), "handover.hold", f"one value per action ({len(self.actions)})"
            )
            for value, limit in zip(handover.hold, self.actions, strict=True):
                inside = limit.low <= value <= limit.high
                _require(inside, "handover.hold", f"{limit.name} {value} outside [{limit.low}, {limit.high}]")
        drivers = {"crazyswarm2": ("crazyswarm2", "sim_bridge"), "px4": ("px4", "sim_bridge")}
        wanted = drivers.get(handover.vehicle)
        if wanted is not None and self.driver:
            _require(
                self.driver in wanted,
                "handover.vehicle",
                f"{handover.vehicle} needs driver {wanted[0]}, got {self.driver}",
            )
        if handover.vehicle == "hold_measured":
            _require(
                self.safe_command == HOLD_MEASURED,
                "handover.vehicle",
                f"hold_measured needs safe_command: {HOLD_MEASURED}",
            )

    def _check_hover_thrust(self) -> None:
        """A PX4 profile that holds the vehicle at hover thrust (the hand-back's or the fault hold's zero body
        rates) states that thrust: the last commanded one may be 0 or full."""
        settings = self.px4 or Px4Settings()
        rates = any(spec.type == RATES_SETPOINT for spec in self.commands)
        handover = self.handover is not None and self.handover.vehicle == "px4"
        if settings.hover_thrust == 0 and (handover or (rates and settings.fault_hold > 0)):
            holds = "handover vehicle px4" if handover else f"fault_hold {settings.fault_hold:g} s"
            raise ProfileError(
                f"px4.hover_thrust: unknown (0) but the profile holds at hover thrust ({holds}): set it to the "
                "vehicle's MPC_THR_HOVER in (0, 1] (PX4 does not publish its hover thrust estimate over uXRCE-DDS)"
            )

    def _check_references(self) -> None:
        names = set(self.action_names)
        for i, obs in enumerate(self.observations):
            history = history_source(obs.source)
            _require(history is None or history[1] in names, f"observations[{i}].source", "unknown action")
        for i, command in enumerate(self.commands):
            for j, field in enumerate(command.fields):
                where = f"commands[{i}].fields[{j}].action"
                _require(field.action in names, where, f"unknown action {field.action!r}")

    def _check_driver(self) -> None:
        types = {spec.name: spec.type for spec in self.inputs}
        sources: dict[str, list[str]] = {}
        for obs in self.observations:
            if obs.field is not None:
                sources.setdefault(types.get(source_input(obs.field), ""), []).append(obs.field)
        problem = driver_problem(self.driver, self.kind, [c.type for c in self.commands], sources)
        _require(not problem, "driver", problem)

    def _check_safe_command(self) -> None:
        choices = SAFE_COMMANDS
        _require(self.safe_command in choices, "safe_command", f"must be one of {choices}, got {self.safe_command!r}")
        if self.safe_command != HOLD_MEASURED:
            return
        for i, command in enumerate(self.commands):
            try:
                held_joint_sources(self, command)
            except ProfileError as err:
                raise ProfileError(f"safe_command: {HOLD_MEASURED} with commands[{i}]: {err}") from None
        for i, action in enumerate(self.actions):
            finite = math.isfinite(action.rate_limit)
            _require(finite, f"actions[{i}].rate_limit", f"{HOLD_MEASURED} times the move home with it: give one")

    def _check_vesc(self) -> None:
        """With a VESC calibration: a car whose every steering field's angles the servo reaches and every speed
        field's forward speeds the ESC reaches, over the actions' bounds (reverse depends on the policy's simulator:
        `robo_rl.real.runtime.esc_mismatches`); no throttle field (vesc_ackermann sends the VESC a speed)."""
        vesc = self.vesc
        if vesc is None:
            return
        _require(self.kind == "rc_car", "vesc", f"a calibration of a car's VESC, but the kind is {self.kind!r}")
        limits = {a.name: a for a in self.actions}
        for command in self.commands:
            for field in command.fields:
                low, high, map_text = _field_range(field, limits[field.action])
                where = f"{command.type} {field.field} ({map_text})"
                if carries_steering_angle(field):
                    _require(self._servo_reaches(low, high), "vesc", _steering_problem(vesc, where, low, high))
                elif field.esc == "throttle":
                    _require(False, "vesc", f"{where}: a throttle field, but vesc_ackermann sends the VESC a speed")
                elif field.esc == "speed":
                    reaches = high <= vesc.speed_reach[1] + CALIBRATION_TOLERANCE
                    _require(reaches, "vesc", _speed_problem(vesc, where, high))

    def _servo_reaches(self, low: float, high: float) -> bool:
        assert self.vesc is not None
        reach_low, reach_high = self.vesc.steering_reach
        return reach_low - CALIBRATION_TOLERANCE <= low and high <= reach_high + CALIBRATION_TOLERANCE

    def _check_relative_fields(self) -> None:
        """A `relative_to` field reads a field the inputs provide, in a profile that holds its measured pose (its
        safe command and rate limits need the measured values the steps start from)."""
        for i, command in enumerate(self.commands):
            for j, field in enumerate(command.fields):
                if not field.relative_to:
                    continue
                where = f"commands[{i}].fields[{j}].relative_to"
                problem = self._source_problem(field.relative_to)
                _require(not problem, where, problem)
                hold = self.safe_command == HOLD_MEASURED
                message = f"a relative field needs safe_command: {HOLD_MEASURED} (a step from the measured pose)"
                _require(hold, where, message)

    def _check_joint_commands(self) -> None:
        for i, command in enumerate(self.commands):
            for j, field in enumerate(command.fields):
                index = _joint_index(field.field)
                if command.joint_names and index is not None:
                    count = len(command.joint_names)
                    _require(index < count, f"commands[{i}].fields[{j}].field", f"joint {index} of {count} listed")

    def _check_inputs(self) -> None:
        self._check_image_inputs()
        names = {i.name for i in self.inputs}
        for i, obs in enumerate(self.observations):
            if obs.field is not None:
                where = f"observations[{i}].source"
                _require(source_input(obs.field) in names, where, f"no input named {source_input(obs.field)!r}")
        for i, spec in enumerate(self.inputs):
            if spec.derive:
                _require(spec.source in names, f"inputs[{i}].source", f"no input named {spec.source!r}")
        joints = {spec.name: spec.joints for spec in self.inputs if spec.joints}
        for i, obs in enumerate(self.observations):
            index = None if obs.field is None else _joint_index(obs.field)
            if obs.field is not None and source_input(obs.field) in joints and index is not None:
                count = len(joints[source_input(obs.field)])
                _require(index < count, f"observations[{i}].source", f"joint index {index} but {count} joints listed")

    def _check_image_inputs(self) -> None:
        """Cameras fed once each; never the first input (it triggers the commands: they follow the state, at the
        control rate, not the frames); no observation reads an image input."""
        _require_unique([spec.camera for spec in self.image_inputs], "inputs.camera")
        first = self.inputs[0]
        message = "an image input cannot trigger the commands: list a state input first"
        _require(first.type not in IMAGE_TYPES, "inputs[0]", message)
        cameras = {spec.name for spec in self.image_inputs}
        for i, obs in enumerate(self.observations):
            if obs.field is not None and source_input(obs.field) in cameras:
                _require(False, f"observations[{i}].source", f"{source_input(obs.field)!r} is an image input")

    def _check_workspace(self) -> None:
        for i, limit in enumerate(self.workspace):
            self._check_limit_sources(limit, f"workspace[{i}]")

    def _check_limit_sources(self, limit: WorkspaceLimit, where: str) -> None:
        key = f"{where}.source" if limit.source else f"{where}.norm"
        for source in limit.sources:
            problem = self._source_problem(source)
            _require(not problem, key, problem)

    def _source_problem(self, source: str) -> str:
        """Why `source` is not a field the profile's inputs provide ("" when it is)."""
        specs = {spec.name: spec for spec in self.inputs}
        observed = {source_input(o.field) for o in self.observations if o.field is not None}
        name = source_input(source)
        if name not in (set(specs) or observed):
            return f"no input named {name!r}"
        spec = specs.get(name)
        if spec is not None and spec.labels and source[len(name) + 1 :] not in spec.labels:
            return f"{source!r}: not one of the labels of input {name!r}"
        index = _joint_index(source)
        if spec is not None and spec.joints and index is not None and index >= len(spec.joints):
            return f"joint index {index} but {len(spec.joints)} joints listed"
        return ""

    def _check_action_box(self) -> None:
        _require_unique([bound.action for bound in self.action_box], "action_box")
        limits = {a.name: a for a in self.actions}
        for i, bound in enumerate(self.action_box):
            limit = limits.get(bound.action)
            _require(limit is not None, f"action_box[{i}].action", f"unknown action {bound.action!r}")
            assert limit is not None
            inside = limit.low <= bound.low and bound.high <= limit.high
            message = f"must lie in the action's bounds [{limit.low}, {limit.high}], got [{bound.low}, {bound.high}]"
            _require(inside, f"action_box[{i}].low", message)
            contains = bound.low <= limit.safe <= bound.high
            _require(contains, f"action_box[{i}].low", f"must contain the safe value {limit.safe}")

    def _check_episode(self) -> None:
        if self.episode is None:
            return
        for key in ("reset_actions", "recovery_actions"):
            for i, move in enumerate(getattr(self.episode, key)):
                self._check_move(move, f"episode.{key}[{i}].action")
        for i, limit in enumerate(self.episode.reset_done):
            self._check_limit_sources(limit, f"episode.reset_done[{i}]")
        recovery = self.episode.reset == "recovery"
        _require(not recovery or bool(self.workspace), "episode.reset", "a recovery needs a workspace to check")

    def _check_move(self, move: ResetMove, where: str) -> None:
        limits = {a.name: a for a in self.actions}
        for name, value in move.action:
            limit = limits.get(name)
            _require(limit is not None, f"{where}.{name}", "unknown action")
            assert limit is not None
            inside = limit.low <= value <= limit.high
            _require(inside, f"{where}.{name}", f"must lie in [{limit.low}, {limit.high}], got {value}")

    @property
    def obs_names(self) -> tuple[str, ...]:
        return tuple(o.name for o in self.observations)

    @property
    def image_inputs(self) -> tuple[InputSpec, ...]:
        """The inputs carrying camera frames, in profile order."""
        return tuple(spec for spec in self.inputs if spec.type in IMAGE_TYPES)

    @property
    def action_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.actions)

    @property
    def safe_action(self) -> tuple[float, ...]:
        """The safe command in policy units, in action order."""
        return tuple(a.safe for a in self.actions)


_POSITION_FIELD = re.compile(r"^points\[0\]\.positions\[(\d+)\]$")


def held_joint_sources(profile: RobotProfile, command: CommandSpec) -> tuple[tuple[str, str], ...]:
    """Per action, in action order: (the flat field of its joint's measured position, e.g.
    `joint_states.position[2]`; the command field it feeds, e.g. `points[0].positions[2]`), for a profile whose safe
    command holds the measured pose. ProfileError when `command` is not a JointTrajectory whose every action feeds
    one `points[0].positions[i]` field, unscaled by a transform, of a joint some JointState input lists."""
    _require(command.type == JOINT_TRAJECTORY, "type", f"a held pose needs a {JOINT_TRAJECTORY}, got {command.type}")
    measured = {joint: f"{spec.name}.position[{j}]" for spec in profile.inputs for j, joint in enumerate(spec.joints)}
    sources = []
    for action in profile.action_names:
        feeding = [f for f in command.fields if f.action == action]
        _require(len(feeding) == 1, "fields", f"action {action!r} feeds {len(feeding)} fields, expected 1")
        field = feeding[0]
        match = _POSITION_FIELD.match(field.field)
        plain = match is not None and not field.transform and not field.axis and field.scale != 0
        _require(plain, "fields", f"{field.field!r} ({action}): not a joint position points[0].positions[i]")
        assert match is not None
        joint = command.joint_names[int(match.group(1))]
        _require(joint in measured, "joint_names", f"joint {joint!r} is in no JointState input's joints")
        own = not field.relative_to or field.relative_to == measured[joint]
        message = f"{field.relative_to!r} is not joint {joint!r}'s measured position {measured[joint]!r}"
        _require(own, "fields", f"{field.field!r} ({action}): relative_to {message}")
        sources.append((measured[joint], field.field))
    return tuple(sources)


def _require(ok: bool, field: str, message: str) -> None:
    if not ok:
        raise ProfileError(f"{field}: {message}")


def _joint_index(path: str) -> int | None:
    """i of a per-joint field (`joint_states.position[i]`, `points[0].positions[i]`), else None."""
    match = re.search(r"(?:position|velocity|effort|positions|velocities|efforts)\[(\d+)\]$", path)
    return int(match.group(1)) if match else None


def _require_unique(names: Sequence[str], field: str) -> None:
    dupes = sorted({n for n in names if names.count(n) > 1})
    _require(not dupes, field, f"duplicate names {dupes}")


def _build(cls: type, data: Any, where: str, nested: Mapping[str, type] | None = None) -> Any:
    """`cls(**data)` with strict keys and scalar types; `nested` (default `_NESTED[cls]`) maps list fields to their
    element class and mapping fields to their class."""
    if not isinstance(data, Mapping):
        raise ProfileError(f"{where or 'profile'}: expected a mapping, got {type(data).__name__}")
    declared = {f.name: f for f in fields(cls)}
    unknown = sorted(_key_text(key) for key in data if key not in declared)
    if unknown:
        raise ProfileError(f"{_join(where, unknown[0])}: unknown key (expected one of {sorted(declared)})")
    nested = _NESTED.get(cls, {}) if nested is None else nested
    kwargs = {}
    for key, value in data.items():
        element = nested.get(key)
        if element and str(declared[key].type).startswith("tuple"):
            kwargs[key] = _build_list(element, value, _join(where, key))
        elif element:
            kwargs[key] = _build(element, value, _join(where, key))
        else:
            kwargs[key] = _scalar(declared[key], value, where)
    missing = [n for n, f in declared.items() if n not in kwargs and _has_no_default(f)]
    if missing:
        raise ProfileError(f"{_join(where, missing[0])}: missing")
    try:
        return cls(**kwargs)
    except ValueError as err:  # a ProfileError, or a settings class's own check (HandoverSettings)
        raise ProfileError(_join(where, str(err))) from None


def _key_text(key: Any) -> str:
    """A key as an error message shows it: as written when it is a plain name, else quoted (one line always)."""
    text = str(key)
    return text if re.fullmatch(r"[\w.\[\]-]+", text) else repr(text)


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _has_no_default(field: Any) -> bool:
    return field.default is MISSING and field.default_factory is MISSING


def _build_list(element: type, value: Any, where: str) -> tuple[Any, ...]:
    if not isinstance(value, list):
        raise ProfileError(f"{where}: expected a list, got {type(value).__name__}")
    if element is str:
        return tuple(_string(item, f"{where}[{i}]") for i, item in enumerate(value))
    if element is float:
        return tuple(_number(item, f"{where}[{i}]") for i, item in enumerate(value))
    return tuple(_build(element, item, f"{where}[{i}]") for i, item in enumerate(value))


_NESTED: dict[type, dict[str, type]] = {
    RobotProfile: {
        "observations": ObservationField,
        "actions": ActionLimit,
        "commands": CommandSpec,
        "inputs": InputSpec,
        "workspace": WorkspaceLimit,
        "action_box": ActionBound,
        "episode": EpisodeSettings,
        "px4": Px4Settings,
        "crazyswarm2": CrazyswarmSettings,
        "vesc": VescCalibration,
        "handover": HandoverSettings,
        "task_params": str,
    },
    CommandSpec: {"fields": CommandField, "joint_names": str},
    InputSpec: {"labels": str, "joints": str, "crop": CropBox},
    WorkspaceLimit: {"norm": str},
    EpisodeSettings: {"reset_actions": ResetMove, "reset_done": WorkspaceLimit, "recovery_actions": ResetMove},
    Px4Settings: {"motor_order": str},
    HandoverSettings: {"hold": float},
}
"""Per class: its fields built as lists of (or as one) nested class; the others are scalars."""


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ProfileError(f"{where}: expected a number, got {value!r}")
    return float(value)


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ProfileError(f"{where}: expected a string, got {value!r}")
    return value


def _scalar(field: Any, value: Any, where: str) -> Any:
    expected = field.type
    where = _join(where, field.name)
    if expected == "str":
        if not isinstance(value, str):
            raise ProfileError(f"{where}: expected a string, got {value!r}")
        return value
    if expected == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ProfileError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if expected == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ProfileError(f"{where}: expected an integer, got {value!r}")
        return value
    if expected == "tuple[tuple[str, float], ...]":
        return _named_values(value, where)
    raise ProfileError(f"{where}: expected a list")


def _named_values(value: Any, where: str) -> tuple[tuple[str, float], ...]:
    """A YAML mapping name → number as `((name, value), ...)`."""
    if not isinstance(value, Mapping):
        raise ProfileError(f"{where}: expected a mapping of names to numbers, got {type(value).__name__}")
    items = []
    for name, number in value.items():
        if not isinstance(name, str):
            raise ProfileError(f"{where}: expected names, got {name!r}")
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            raise ProfileError(f"{where}.{name}: expected a number, got {number!r}")
        items.append((name, float(number)))
    return tuple(items)


def profile_from_dict(data: Any, source: str = "profile") -> RobotProfile:
    """Build a profile from parsed YAML; `source` prefixes error messages."""
    try:
        return _build(RobotProfile, data, "")
    except ProfileError as err:
        raise ProfileError(f"{source}: {err}") from None


def load_profile(name_or_path: str | Path) -> RobotProfile:
    """Load a bundled profile by name (`quadrotor_crazyflie`, `quadrotor_crazyswarm2`, `quadrotor_px4`, `rc_car`,
    `arm`) or a YAML path."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml"):
        if not path.is_file():
            raise ProfileError(f"{path}: no such profile file")
        text, label = _read_text(path), path.name
    else:
        resource = resources.files("robo_rl.real").joinpath("profiles", f"{name_or_path}.yaml")
        if not resource.is_file():
            raise ProfileError(f"unknown profile {name_or_path!r} (bundled: {', '.join(bundled_profiles())})")
        text, label = resource.read_text(), f"{name_or_path}.yaml"
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ProfileError(f"{label}: invalid YAML: {_first_line(err)}") from None
    if data is None:
        raise ProfileError(f"{label}: empty profile file")
    return profile_from_dict(data, label)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ProfileError(f"{path.name}: not a YAML profile (not UTF-8 text: byte {err.start})") from None
    except OSError as err:
        raise ProfileError(f"{path.name}: cannot read ({err.strerror})") from None


def bundled_profiles() -> tuple[str, ...]:
    """Names of the profiles shipped in `robo_rl/real/profiles/`."""
    folder = resources.files("robo_rl.real").joinpath("profiles")
    return tuple(sorted(p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml")))


def _first_line(err: Exception) -> str:
    lines = str(err).strip().splitlines()
    return lines[0] if lines else type(err).__name__
