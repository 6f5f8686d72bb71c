"""A robot profile's signals: the observations a policy reads and the inputs they come from, the actions it
outputs and the command messages they fill; each section checks its own fields."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from robo_rl.real.images import RESIZE_METHODS, FrameSettings
from robo_rl.real.profile.errors import ProfileError, require, require_unique
from robo_rl.real.profile.sources import (
    FIELD_PATH,
    INTEGRAL_UNIT_SUFFIX,
    UNIT_CONVERSIONS,
    history_source,
    integral_source,
    source_field,
    unit_factor,
)

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
ESC_COMMANDS = ("", "speed", "throttle")
"""`CommandField.esc` choices (the values of `robo_rl.actuator.DRIVE_MODES`, or empty)."""
TRANSFORMS = ("", "ackermann_yaw_rate")
"""How a command field is computed from its action besides the linear map (see `CommandField.transform`)."""
BODY_FRAMES = ("flu", "frd")


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
        require(bool(self.name), "name", "must not be empty")
        field = self.field
        require(field is None or bool(FIELD_PATH.match(field)), "source", f"bad field {self.source!r}")
        if integral_source(self.source) is not None:
            suffix = INTEGRAL_UNIT_SUFFIX
            message = f"an integral's unit is its field's times s (e.g. m{suffix}), got {self.unit!r}"
            require(self.unit.endswith(suffix) and len(self.unit) > len(suffix), "unit", message)
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
        require(bool(self.name), "name", "must not be empty")
        require(math.isfinite(self.low) and math.isfinite(self.high), "low", "bounds must be finite")
        require(self.low <= self.high, "low", f"must be <= high, got low={self.low} high={self.high}")
        require(self.low <= self.safe <= self.high, "safe", f"must lie in [{self.low}, {self.high}], got {self.safe}")
        require(self.rate_limit > 0, "rate_limit", f"must be > 0, got {self.rate_limit}")


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
    `robo_rl.actuator.DriveActuator`, `robo_rl.real.policy_fit.drive_mismatches`). Empty: not a drive field."""

    def __post_init__(self) -> None:
        require(bool(FIELD_PATH.match(self.field)), "field", f"bad field {self.field!r}")
        require(math.isfinite(self.scale) and math.isfinite(self.offset), "scale", "scale and offset must be finite")
        require(self.axis in ("", "x", "y", "z"), "axis", f"must be x, y, z or empty, got {self.axis!r}")
        require(self.transform in TRANSFORMS, "transform", f"must be one of {TRANSFORMS}, got {self.transform!r}")
        bounds = f"zero_below={self.zero_below} ceiling={self.ceiling}"
        require(not math.isnan(self.ceiling) and not math.isnan(self.zero_below), "ceiling", "must not be nan")
        require(self.zero_below < self.ceiling, "zero_below", f"must be < ceiling, got {bounds}")
        require(self.esc in ESC_COMMANDS, "esc", f"must be one of {ESC_COMMANDS}, got {self.esc!r}")
        if self.relative_to:
            self._check_relative()

    def _check_relative(self) -> None:
        source = self.relative_to
        valid = bool(FIELD_PATH.match(source)) and history_source(source) is None
        example = "a measured message field, e.g. joint_states.position[0]"
        require(valid, "relative_to", f"bad source {source!r} ({example})")
        require(self.scale != 0, "scale", "a relative_to field needs a scale != 0")
        unset = [key for key in ("offset", "axis", "transform", "esc") if getattr(self, key)]
        message = f"a relative field moves from its source: {', '.join(unset)} must stay unset"
        require(not unset, "relative_to", message)


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
        require(valid, "type", f"expected pkg/msg/Name, got {self.type!r}")
        require(bool(self.topic), "topic", "must not be empty")
        require(len(self.fields) > 0, "fields", "must not be empty")
        require(self.body_frame in BODY_FRAMES, "body_frame", f"must be one of {BODY_FRAMES}, got {self.body_frame!r}")
        if self.type == JOINT_TRAJECTORY:
            require(bool(self.joint_names), "joint_names", "a JointTrajectory command lists its joint names")
        require_unique(self.joint_names, "joint_names")
        if any(f.transform == "ackermann_yaw_rate" for f in self.fields):
            require(self.wheelbase > 0, "wheelbase", "an ackermann_yaw_rate field needs the wheelbase (m, > 0)")
            speed = [f for f in self.fields if f.field == "linear.x" and not f.transform]
            require(bool(speed), "fields", "an ackermann_yaw_rate field needs the speed in a linear.x field")

    @property
    def package(self) -> str:
        """The message package (`ackermann_msgs` for `ackermann_msgs/msg/AckermannDriveStamped`)."""
        return self.type.split("/")[0]


@dataclass(frozen=True)
class CropBox:
    """The part of a camera's frame a policy sees, in the frame's pixels (before the resize to the spec's size)."""

    left: int
    top: int
    width: int
    height: int

    def __post_init__(self) -> None:
        require(self.left >= 0 and self.top >= 0, "left", f"left and top must be >= 0, got {self.left}, {self.top}")
        require(self.width >= 1 and self.height >= 1, "width", f"must be >= 1, got {self.width}x{self.height}")

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
        require(bool(re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", self.name)), "name", f"bad input name {self.name!r}")
        self._check_image()
        if self.type == JOINT_STATE:
            require(bool(self.joints), "joints", "a JointState input lists its joint names (read by name)")
        else:
            require(not self.joints, "joints", f"only a {JOINT_STATE} input has joint names")
        require_unique(self.joints, "joints")
        if self.derive:
            require(self.derive in DERIVATIONS, "derive", f"must be one of {DERIVATIONS}, got {self.derive!r}")
            require(bool(self.source), "source", "a derived input names the input it reads")
            require(not self.type and not self.labels, "type", "a derived input has no message type or labels")
        else:
            valid = self.type.count("/") == 2 and "/msg/" in self.type
            require(valid, "type", f"expected pkg/msg/Name, got {self.type!r}")
        for label in self.labels:
            require(bool(FIELD_PATH.match(label)), "labels", f"bad label {label!r}")

    def _check_image(self) -> None:
        image = self.type in IMAGE_TYPES
        if not image:
            for key in ("camera", "resize", "crop", "channels"):
                require(not getattr(self, key), key, f"only an image input ({', '.join(IMAGE_TYPES)}) has one")
            return
        valid = self.camera.isidentifier()
        require(valid, "camera", f"an image input names the policy camera it feeds, got {self.camera!r}")
        require(not self.labels, "labels", "an image input has no labels")
        choices = ("", *RESIZE_METHODS)
        require(self.resize in choices, "resize", f"must be one of {RESIZE_METHODS}, got {self.resize!r}")
        require(self.channels in (0, 1, 3), "channels", f"must be 3 (colour) or 1 (grey), got {self.channels}")

    @property
    def topic_name(self) -> str:
        return self.topic or self.name

    @property
    def frame_settings(self) -> FrameSettings:
        """How an image input's frames are cropped and resized (`robo_rl.real.images`)."""
        return FrameSettings(self.resize or RESIZE_METHODS[0], None if self.crop is None else self.crop.box)
