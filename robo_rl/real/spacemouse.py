"""A 3Dconnexion SpaceMouse, through ROS 2's spacenav driver, as an arm's end-effector teleop device (no ROS here).

The driver's conventions, read in its source (ros-drivers/joystick_drivers, branch ros2 at 881f3a5,
spacenav/src/spacenav.cpp; tests/real/test_spacemouse.py names the lines):
- `spacenav/joy` (sensor_msgs/Joy): six axes, the puck's translation x, y, z then rotation about x, y, z in ROS's
  frame (x forward, y left, z up: REP 103; the driver's x, y, z are libspnav's z, -x, y, and so for the rotations),
  each libspnav's count / `full_scale` (512 by default) and NOT scaled by the driver's linear_scale or angular_scale;
  `buttons[i]` is 1 while libspnav's button i is pressed (two entries from the start, more if a device reports
  more). spacenavd numbers a device's buttons from its lowest evdev key code, remappable with `bnmapN` in
  /etc/spnavrc (FreeSpacenav/spacenavd bac572a, src/dev_usb_linux.c, src/event.c): on a two-button SpaceMouse 0
  is the left button, 1 the right.
- `spacenav/twist` (geometry_msgs/Twist; `spacenav/twist_stamped` with use_twist_stamped), `spacenav/offset` and
  `spacenav/rot_offset` (geometry_msgs/Vector3): the same six values times linear_scale / angular_scale.
- The puck let go: after `static_count_threshold` (30) polls of the 1 ms timer without a motion event the driver
  publishes again, zeros with `zero_when_static` (the default), else zeros only for the parts within the static
  deadbands (0.1); it repeats that while the puck rests. Joy is published on every poll once any event came.

So this device reads `spacenav/joy` alone: the motion and the buttons in one message, in the driver's normalised
units whatever its scale parameters. `EndEffectorTeleop` turns the translation into a tip velocity (`speed` m/s at
full deflection), the tip displacement over one control period into joint changes by the arm's kinematics from the
measured joint angles (robo_rl.real.arm_kinematics: the tool's pitch held; a move too long for the step bounds is
shortened along its direction), and those into the profile's actions: joint steps (fields `relative_to` the
measured angles, mujoco/peg_insert's arm_peg) or absolute joint targets (the arm profile). A puck at rest is a
zero displacement: zero steps, or the measured pose as targets (the hold). The rotation axes are not used: the
4-DoF arm's tool pitch is kept, its roll does not exist.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from robo_rl.real.arm_kinematics import ArmGeometry, tip_step
from robo_rl.real.profile import JOINT_TRAJECTORY, RobotProfile, held_joint_sources

SPACENAV_JOY_TOPIC = "spacenav/joy"
"""The driver's Joy topic, relative: in the driver node's namespace (remap it onto teleop_node's)."""
TRANSLATION_AXES = (0, 1, 2)
"""Joy axes of the puck's translation along x (forward), y (left), z (up), each about -1..1."""
LEFT_BUTTON = 0
RIGHT_BUTTON = 1

FIT_ATTEMPTS = 6
"""Times a displacement too long for the step bounds is rescaled by the joint steps' room (the arm's curvature makes
the steps only nearly proportional to it) until the largest step is within FIT_SLACK of its bound; what still
exceeds a bound after that is clipped."""
FIT_SLACK = 1.01
"""A shortened move is done once its largest step is within 1 % of its bound (below it)."""


@dataclass(frozen=True)
class SpaceMouseSettings:
    """How the puck's deflection becomes a tip motion."""

    speed: float = 0.05
    """Tip speed in m/s at full deflection (the displacement per control period is speed × dt: 5 mm per 0.1 s)."""
    deadband: float = 0.1
    """Deflections below this (of the normalised axes) read 0 and the rest is rescaled from 0, so a hand resting on
    the puck does not drift the arm and the response has no step at the edge (the driver's own static deadband)."""

    def __post_init__(self) -> None:
        if not 0.0 < self.speed < math.inf:
            raise ValueError(f"speed: must be finite and > 0 m/s, got {self.speed}")
        if not 0.0 <= self.deadband < 1.0:
            raise ValueError(f"deadband: must be in [0, 1), got {self.deadband}")


def tip_velocity(axes: Sequence[float], settings: SpaceMouseSettings) -> np.ndarray:
    """Tip velocity `(3,)` m/s (world frame: x forward, y left, z up) from a spacenav Joy's axes (absent read 0)."""
    values = np.array([float(axes[i]) if i < len(axes) else 0.0 for i in TRANSLATION_AXES])
    values[~np.isfinite(values)] = 0.0
    magnitude = np.clip(np.abs(values), 0.0, 1.0)
    live = np.clip((magnitude - settings.deadband) / (1.0 - settings.deadband), 0.0, 1.0)
    return np.sign(values) * live * settings.speed


@dataclass(frozen=True)
class ArmActions:
    """How a profile's actions move an arm's joints: the measured angles the kinematics read, and each action's
    joint, kind (a step from the measured angle or an absolute target) and command scaling."""

    joint_sources: tuple[str, ...]
    """Per kinematic joint (yaw, shoulder, elbow, wrist): its measured angle's flat field, e.g.
    `joint_states.position[0]`."""
    action_joints: tuple[int, ...]
    """Per action: the index of its joint in `joint_sources`."""
    relative: tuple[bool, ...]
    """Per action: True for a step from the measured angle (field = measured + scale × action)."""
    scale: tuple[float, ...]
    offset: tuple[float, ...]
    """Per action: field = offset + scale × action for an absolute target."""
    low: tuple[float, ...]
    high: tuple[float, ...]

    def measured(self, fields: Mapping[str, float]) -> np.ndarray | None:
        """Joint angles `(4,)` rad from decoded input fields, or None while one is missing or not finite."""
        values = [fields.get(source) for source in self.joint_sources]
        if any(v is None or not math.isfinite(v) for v in values):
            return None
        return np.array(values, dtype=np.float64)

    def actions(self, q: np.ndarray, change: np.ndarray) -> np.ndarray:
        """The actions `(action_dim,)` that move the joints from `q` by `change` `(4,)` rad, clipped to the bounds."""
        target = q[list(self.action_joints)] + change[list(self.action_joints)]
        step = change[list(self.action_joints)]
        scale, offset = np.array(self.scale), np.array(self.offset)
        action = np.where(self.relative, step / scale, (target - offset) / scale)
        return np.clip(action, self.low, self.high)

    def room(self, change: np.ndarray) -> float:
        """The largest factor of `change` `(4,)` rad whose step actions are all within their bounds (inf: none is
        a step, or none moves)."""
        factor = math.inf
        for i, joint in enumerate(self.action_joints):
            step = change[joint] / self.scale[i]
            bound = self.high[i] if step > 0 else self.low[i]
            if self.relative[i] and step != 0:
                factor = min(factor, max(bound / step, 0.0))
        return factor


def arm_actions(profile: RobotProfile, joints: Sequence[str] = ()) -> ArmActions:
    """`ArmActions` of an arm profile: one JointTrajectory command whose every action is one joint's position, of the
    four `joints` (the kinematics' yaw, shoulder, elbow, wrist; empty: the command's joint_names in order).
    ValueError saying what does not fit."""
    commands = [c for c in profile.commands if c.type == JOINT_TRAJECTORY]
    if len(profile.commands) != 1 or not commands:
        raise ValueError(f"profile {profile.name!r}: an end-effector device needs one {JOINT_TRAJECTORY} command")
    command = commands[0]
    kinematic = tuple(joints) or command.joint_names
    if len(kinematic) != 4 or len(set(kinematic)) != 4:
        raise ValueError(f"the arm's kinematics take 4 distinct joints (yaw, shoulder, elbow, wrist), got {kinematic}")
    measured = {joint: f"{spec.name}.position[{j}]" for spec in profile.inputs for j, joint in enumerate(spec.joints)}
    missing = [joint for joint in kinematic if joint not in measured]
    if missing:
        raise ValueError(f"profile {profile.name!r}: joint(s) {missing} are in no JointState input's joints")
    # per action, its joint's measured position (ProfileError unless each action is one joint's plain position)
    joint_of = {source: joint for joint, source in measured.items()}
    per_action = [joint_of[source] for source, _ in held_joint_sources(profile, command)]
    feeding = {f.action: f for f in command.fields}
    unknown = [joint for joint in per_action if joint not in kinematic]
    if unknown:
        raise ValueError(f"action joint(s) {unknown} are not among the kinematics' joints {kinematic}")
    return ArmActions(
        joint_sources=tuple(measured[joint] for joint in kinematic),
        action_joints=tuple(kinematic.index(joint) for joint in per_action),
        relative=tuple(bool(feeding[a.name].relative_to) for a in profile.actions),
        scale=tuple(feeding[a.name].scale for a in profile.actions),
        offset=tuple(feeding[a.name].offset for a in profile.actions),
        low=tuple(a.low for a in profile.actions),
        high=tuple(a.high for a in profile.actions),
    )


@dataclass(frozen=True)
class EndEffectorTeleop:
    """The operator's action from a spacenav Joy's axes and the measured joint angles (see the module docstring)."""

    arm: ArmActions
    dt: float
    """The profile's control period in s: one action moves the tip for this long."""
    geometry: ArmGeometry = field(default_factory=ArmGeometry)
    settings: SpaceMouseSettings = field(default_factory=SpaceMouseSettings)

    def displacement(self, axes: Sequence[float]) -> np.ndarray:
        """Tip displacement `(3,)` m over one control period."""
        return tip_velocity(axes, self.settings) * self.dt

    def action(self, fields: Mapping[str, float], axes: Sequence[float]) -> np.ndarray | None:
        """The action `(action_dim,)`, or None while the joint angles are not all measured."""
        q = self.arm.measured(fields)
        if q is None:
            return None
        displacement = self.displacement(axes)
        change, length = tip_step(self.geometry, q, displacement), 1.0
        for _ in range(FIT_ATTEMPTS):  # too far for the step bounds: a shorter move the same way
            room = self.arm.room(change)
            if room >= 1.0 and (length == 1.0 or room <= FIT_SLACK):
                break
            length = min(1.0, length * room)
            change = tip_step(self.geometry, q, displacement * length)
        return self.arm.actions(q, change)


class DeadMan:
    """The SpaceMouse's latest buttons and axes, and whether the dead-man button is held: pressed in a message no
    older than `timeout` s (the driver repeats its Joy on every poll, so silence means it stopped)."""

    def __init__(self, button: int, timeout: float) -> None:
        self.button, self.timeout = button, timeout
        self.axes: tuple[float, ...] = ()
        self.buttons: tuple[int, ...] = ()
        self.received = -math.inf

    def receive(self, axes: Sequence[float], buttons: Sequence[int], now: float) -> None:
        self.axes, self.buttons, self.received = tuple(axes), tuple(buttons), now

    def held(self, now: float) -> bool:
        pressed = 0 <= self.button < len(self.buttons) and bool(self.buttons[self.button])
        return pressed and now - self.received <= self.timeout
