"""The checks across a robot profile's sections: names that refer to other sections, the driver, the inputs the
sources read, the safe command, the hand-over, PX4's hover thrust and a VESC car's calibration.

`RobotProfile.__post_init__` runs `check_profile` after its own fields' checks; each check raises a ProfileError
whose message starts with the key at fault (`commands[0].fields[1].action: unknown action 'brake'`).
"""

from __future__ import annotations

import math
import re
from typing import Protocol

from robo_rl.real.drivers import driver_problem
from robo_rl.real.handover import HandoverSettings
from robo_rl.real.profile.errors import ProfileError, require, require_unique
from robo_rl.real.profile.learning import ActionBound, EpisodeSettings, ResetMove, WorkspaceLimit
from robo_rl.real.profile.signals import (
    HOLD_MEASURED,
    IMAGE_TYPES,
    JOINT_TRAJECTORY,
    SAFE_COMMANDS,
    ActionLimit,
    CommandField,
    CommandSpec,
    InputSpec,
    ObservationField,
)
from robo_rl.real.profile.sources import history_source, joint_index, source_input
from robo_rl.real.profile.vehicles import CrazyswarmSettings, Px4Settings, VescCalibration, carries_steering_angle
from robo_rl.real.px4 import RATES_SETPOINT


class ProfileParts(Protocol):
    """The sections of a robot profile the checks read (`robo_rl.real.profile.schema.RobotProfile`)."""

    @property
    def kind(self) -> str: ...
    @property
    def driver(self) -> str: ...
    @property
    def safe_command(self) -> str: ...
    @property
    def observations(self) -> tuple[ObservationField, ...]: ...
    @property
    def actions(self) -> tuple[ActionLimit, ...]: ...
    @property
    def commands(self) -> tuple[CommandSpec, ...]: ...
    @property
    def inputs(self) -> tuple[InputSpec, ...]: ...
    @property
    def workspace(self) -> tuple[WorkspaceLimit, ...]: ...
    @property
    def action_box(self) -> tuple[ActionBound, ...]: ...
    @property
    def episode(self) -> EpisodeSettings | None: ...
    @property
    def px4(self) -> Px4Settings | None: ...
    @property
    def crazyswarm2(self) -> CrazyswarmSettings | None: ...
    @property
    def handover(self) -> HandoverSettings | None: ...
    @property
    def vesc(self) -> VescCalibration | None: ...
    @property
    def action_names(self) -> tuple[str, ...]: ...
    @property
    def image_inputs(self) -> tuple[InputSpec, ...]: ...


def check_profile(profile: ProfileParts) -> None:
    """Every check across the profile's sections, in order; the first that fails raises its ProfileError."""
    _check_references(profile)
    _check_joint_commands(profile)
    _check_driver(profile)
    if profile.inputs:
        _check_inputs(profile)
    _check_workspace(profile)
    _check_action_box(profile)
    _check_episode(profile)
    _check_relative_fields(profile)
    _check_safe_command(profile)
    _check_handover(profile)
    crazyswarm2 = profile.handover is not None and profile.handover.vehicle == "crazyswarm2"
    message = "needs a handover section of vehicle crazyswarm2"
    require(profile.crazyswarm2 is None or crazyswarm2, "crazyswarm2", message)
    _check_hover_thrust(profile)
    _check_vesc(profile)


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


def _check_handover(profile: ProfileParts) -> None:
    """The hold command has one value per action within its bounds; the vehicle's controller is one the
    driver has (crazyswarm2's commander, PX4's position mode; an arm's held pose needs hold_measured)."""
    handover = profile.handover
    if handover is None:
        return
    if handover.hold:
        require(
            len(handover.hold) == len(profile.actions),
            "handover.hold",
            f"one value per action ({len(profile.actions)})",
        )
        for value, limit in zip(handover.hold, profile.actions, strict=True):
            inside = limit.low <= value <= limit.high
            require(inside, "handover.hold", f"{limit.name} {value} outside [{limit.low}, {limit.high}]")
    drivers = {"crazyswarm2": ("crazyswarm2", "sim_bridge"), "px4": ("px4", "sim_bridge")}
    wanted = drivers.get(handover.vehicle)
    if wanted is not None and profile.driver:
        require(
            profile.driver in wanted,
            "handover.vehicle",
            f"{handover.vehicle} needs driver {wanted[0]}, got {profile.driver}",
        )
    if handover.vehicle == "hold_measured":
        require(
            profile.safe_command == HOLD_MEASURED,
            "handover.vehicle",
            f"hold_measured needs safe_command: {HOLD_MEASURED}",
        )


def _check_hover_thrust(profile: ProfileParts) -> None:
    """A PX4 profile that holds the vehicle at hover thrust (the hand-back's or the fault hold's zero body
    rates) states that thrust: the last commanded one may be 0 or full."""
    settings = profile.px4 or Px4Settings()
    rates = any(spec.type == RATES_SETPOINT for spec in profile.commands)
    handover = profile.handover is not None and profile.handover.vehicle == "px4"
    if settings.hover_thrust == 0 and (handover or (rates and settings.fault_hold > 0)):
        holds = "handover vehicle px4" if handover else f"fault_hold {settings.fault_hold:g} s"
        raise ProfileError(
            f"px4.hover_thrust: unknown (0) but the profile holds at hover thrust ({holds}): set it to the "
            "vehicle's MPC_THR_HOVER in (0, 1] (PX4 does not publish its hover thrust estimate over uXRCE-DDS)"
        )


def _check_references(profile: ProfileParts) -> None:
    names = set(profile.action_names)
    for i, obs in enumerate(profile.observations):
        history = history_source(obs.source)
        require(history is None or history[1] in names, f"observations[{i}].source", "unknown action")
    for i, command in enumerate(profile.commands):
        for j, field in enumerate(command.fields):
            where = f"commands[{i}].fields[{j}].action"
            require(field.action in names, where, f"unknown action {field.action!r}")


def _check_driver(profile: ProfileParts) -> None:
    types = {spec.name: spec.type for spec in profile.inputs}
    sources: dict[str, list[str]] = {}
    for obs in profile.observations:
        if obs.field is not None:
            sources.setdefault(types.get(source_input(obs.field), ""), []).append(obs.field)
    problem = driver_problem(profile.driver, profile.kind, [c.type for c in profile.commands], sources)
    require(not problem, "driver", problem)


def _check_safe_command(profile: ProfileParts) -> None:
    choices = SAFE_COMMANDS
    require(profile.safe_command in choices, "safe_command", f"must be one of {choices}, got {profile.safe_command!r}")
    if profile.safe_command != HOLD_MEASURED:
        return
    for i, command in enumerate(profile.commands):
        try:
            held_joint_sources(profile, command)
        except ProfileError as err:
            raise ProfileError(f"safe_command: {HOLD_MEASURED} with commands[{i}]: {err}") from None
    for i, action in enumerate(profile.actions):
        finite = math.isfinite(action.rate_limit)
        require(finite, f"actions[{i}].rate_limit", f"{HOLD_MEASURED} times the move home with it: give one")


def _check_vesc(profile: ProfileParts) -> None:
    """With a VESC calibration: a car whose every steering field's angles the servo reaches and every speed
    field's forward speeds the ESC reaches, over the actions' bounds (reverse depends on the policy's simulator:
    `robo_rl.real.policy_fit.esc_mismatches`); no throttle field (vesc_ackermann sends the VESC a speed)."""
    vesc = profile.vesc
    if vesc is None:
        return
    require(profile.kind == "rc_car", "vesc", f"a calibration of a car's VESC, but the kind is {profile.kind!r}")
    limits = {a.name: a for a in profile.actions}
    for command in profile.commands:
        for field in command.fields:
            low, high, map_text = _field_range(field, limits[field.action])
            where = f"{command.type} {field.field} ({map_text})"
            if carries_steering_angle(field):
                require(_servo_reaches(vesc, low, high), "vesc", _steering_problem(vesc, where, low, high))
            elif field.esc == "throttle":
                require(False, "vesc", f"{where}: a throttle field, but vesc_ackermann sends the VESC a speed")
            elif field.esc == "speed":
                reaches = high <= vesc.speed_reach[1] + CALIBRATION_TOLERANCE
                require(reaches, "vesc", _speed_problem(vesc, where, high))


def _servo_reaches(vesc: VescCalibration, low: float, high: float) -> bool:
    reach_low, reach_high = vesc.steering_reach
    return reach_low - CALIBRATION_TOLERANCE <= low and high <= reach_high + CALIBRATION_TOLERANCE


def _check_relative_fields(profile: ProfileParts) -> None:
    """A `relative_to` field reads a field the inputs provide, in a profile that holds its measured pose (its
    safe command and rate limits need the measured values the steps start from)."""
    for i, command in enumerate(profile.commands):
        for j, field in enumerate(command.fields):
            if not field.relative_to:
                continue
            where = f"commands[{i}].fields[{j}].relative_to"
            problem = _source_problem(profile, field.relative_to)
            require(not problem, where, problem)
            hold = profile.safe_command == HOLD_MEASURED
            message = f"a relative field needs safe_command: {HOLD_MEASURED} (a step from the measured pose)"
            require(hold, where, message)


def _check_joint_commands(profile: ProfileParts) -> None:
    for i, command in enumerate(profile.commands):
        for j, field in enumerate(command.fields):
            index = joint_index(field.field)
            if command.joint_names and index is not None:
                count = len(command.joint_names)
                require(index < count, f"commands[{i}].fields[{j}].field", f"joint {index} of {count} listed")


def _check_inputs(profile: ProfileParts) -> None:
    _check_image_inputs(profile)
    names = {i.name for i in profile.inputs}
    for i, obs in enumerate(profile.observations):
        if obs.field is not None:
            where = f"observations[{i}].source"
            require(source_input(obs.field) in names, where, f"no input named {source_input(obs.field)!r}")
    for i, spec in enumerate(profile.inputs):
        if spec.derive:
            require(spec.source in names, f"inputs[{i}].source", f"no input named {spec.source!r}")
    joints = {spec.name: spec.joints for spec in profile.inputs if spec.joints}
    for i, obs in enumerate(profile.observations):
        index = None if obs.field is None else joint_index(obs.field)
        if obs.field is not None and source_input(obs.field) in joints and index is not None:
            count = len(joints[source_input(obs.field)])
            require(index < count, f"observations[{i}].source", f"joint index {index} but {count} joints listed")


def _check_image_inputs(profile: ProfileParts) -> None:
    """Cameras fed once each; never the first input (it triggers the commands: they follow the state, at the
    control rate, not the frames); no observation reads an image input."""
    require_unique([spec.camera for spec in profile.image_inputs], "inputs.camera")
    first = profile.inputs[0]
    message = "an image input cannot trigger the commands: list a state input first"
    require(first.type not in IMAGE_TYPES, "inputs[0]", message)
    cameras = {spec.name for spec in profile.image_inputs}
    for i, obs in enumerate(profile.observations):
        if obs.field is not None and source_input(obs.field) in cameras:
            require(False, f"observations[{i}].source", f"{source_input(obs.field)!r} is an image input")


def _check_workspace(profile: ProfileParts) -> None:
    for i, limit in enumerate(profile.workspace):
        _check_limit_sources(profile, limit, f"workspace[{i}]")


def _check_limit_sources(profile: ProfileParts, limit: WorkspaceLimit, where: str) -> None:
    key = f"{where}.source" if limit.source else f"{where}.norm"
    for source in limit.sources:
        problem = _source_problem(profile, source)
        require(not problem, key, problem)


def _source_problem(profile: ProfileParts, source: str) -> str:
    """Why `source` is not a field the profile's inputs provide ("" when it is)."""
    specs = {spec.name: spec for spec in profile.inputs}
    observed = {source_input(o.field) for o in profile.observations if o.field is not None}
    name = source_input(source)
    if name not in (set(specs) or observed):
        return f"no input named {name!r}"
    spec = specs.get(name)
    if spec is not None and spec.labels and source[len(name) + 1 :] not in spec.labels:
        return f"{source!r}: not one of the labels of input {name!r}"
    index = joint_index(source)
    if spec is not None and spec.joints and index is not None and index >= len(spec.joints):
        return f"joint index {index} but {len(spec.joints)} joints listed"
    return ""


def _check_action_box(profile: ProfileParts) -> None:
    require_unique([bound.action for bound in profile.action_box], "action_box")
    limits = {a.name: a for a in profile.actions}
    for i, bound in enumerate(profile.action_box):
        limit = limits.get(bound.action)
        require(limit is not None, f"action_box[{i}].action", f"unknown action {bound.action!r}")
        assert limit is not None
        inside = limit.low <= bound.low and bound.high <= limit.high
        message = f"must lie in the action's bounds [{limit.low}, {limit.high}], got [{bound.low}, {bound.high}]"
        require(inside, f"action_box[{i}].low", message)
        contains = bound.low <= limit.safe <= bound.high
        require(contains, f"action_box[{i}].low", f"must contain the safe value {limit.safe}")


def _check_episode(profile: ProfileParts) -> None:
    if profile.episode is None:
        return
    for key in ("reset_actions", "recovery_actions"):
        for i, move in enumerate(getattr(profile.episode, key)):
            _check_move(profile, move, f"episode.{key}[{i}].action")
    for i, limit in enumerate(profile.episode.reset_done):
        _check_limit_sources(profile, limit, f"episode.reset_done[{i}]")
    recovery = profile.episode.reset == "recovery"
    require(not recovery or bool(profile.workspace), "episode.reset", "a recovery needs a workspace to check")


def _check_move(profile: ProfileParts, move: ResetMove, where: str) -> None:
    limits = {a.name: a for a in profile.actions}
    for name, value in move.action:
        limit = limits.get(name)
        require(limit is not None, f"{where}.{name}", "unknown action")
        assert limit is not None
        inside = limit.low <= value <= limit.high
        require(inside, f"{where}.{name}", f"must lie in [{limit.low}, {limit.high}], got {value}")


_POSITION_FIELD = re.compile(r"^points\[0\]\.positions\[(\d+)\]$")


def held_joint_sources(profile: ProfileParts, command: CommandSpec) -> tuple[tuple[str, str], ...]:
    """Per action, in action order: (the flat field of its joint's measured position, e.g.
    `joint_states.position[2]`; the command field it feeds, e.g. `points[0].positions[2]`), for a profile whose safe
    command holds the measured pose. ProfileError when `command` is not a JointTrajectory whose every action feeds
    one `points[0].positions[i]` field, unscaled by a transform, of a joint some JointState input lists."""
    require(command.type == JOINT_TRAJECTORY, "type", f"a held pose needs a {JOINT_TRAJECTORY}, got {command.type}")
    measured = {joint: f"{spec.name}.position[{j}]" for spec in profile.inputs for j, joint in enumerate(spec.joints)}
    sources = []
    for action in profile.action_names:
        feeding = [f for f in command.fields if f.action == action]
        require(len(feeding) == 1, "fields", f"action {action!r} feeds {len(feeding)} fields, expected 1")
        field = feeding[0]
        match = _POSITION_FIELD.match(field.field)
        plain = match is not None and not field.transform and not field.axis and field.scale != 0
        require(plain, "fields", f"{field.field!r} ({action}): not a joint position points[0].positions[i]")
        assert match is not None
        joint = command.joint_names[int(match.group(1))]
        require(joint in measured, "joint_names", f"joint {joint!r} is in no JointState input's joints")
        own = not field.relative_to or field.relative_to == measured[joint]
        message = f"{field.relative_to!r} is not joint {joint!r}'s measured position {measured[joint]!r}"
        require(own, "fields", f"{field.field!r} ({action}): relative_to {message}")
        sources.append((measured[joint], field.field))
    return tuple(sources)
