"""Whether a policy fits a robot profile: every difference between an exported policy's metadata and the profile
(task, dt, names, units, bounds, the command map of its actuator, the car's drive and ESC, the cameras)."""

from __future__ import annotations

import math

from robo_rl.actuator import ACTUATOR_KEY, DriveActuator, MotorActuator
from robo_rl.image_spec import ImageSpec
from robo_rl.real.policy_info import PolicyInfo
from robo_rl.real.profile import CommandSpec, InputSpec, RobotProfile, VescCalibration

BOUND_TOLERANCE = 1e-6
COMMAND_MAP_TOLERANCE = 1e-6
"""Largest relative difference accepted between a profile's command map and the policy's actuator model (of the
command's full scale, absolute)."""


class ProfileMismatchError(ValueError):
    """The policy does not fit the robot profile; `mismatches` lists every difference found."""

    def __init__(self, policy: str, profile: str, mismatches: list[str]) -> None:
        self.mismatches = tuple(mismatches)
        super().__init__(f"policy {policy} does not fit profile {profile!r}: " + "; ".join(mismatches))


def mismatches(info: PolicyInfo, profile: RobotProfile) -> list[str]:
    """Every difference between a policy's metadata and a profile: task, dt, names/order, units, action bounds,
    and, for a policy that states its actuator model, the profile's command map of its actions."""
    found = []
    if info.task != profile.task:
        found.append(f"task: policy {info.task!r}, profile {profile.task!r}")
    if not abs(info.dt - profile.dt) <= profile.dt_tolerance:
        found.append(f"dt: policy {info.dt} s, profile {profile.dt} s (tolerance {profile.dt_tolerance} s)")
    found += _name_mismatches("observation", info.obs_names, profile.obs_names)
    found += _name_mismatches("action", info.action_names, profile.action_names)
    obs_units = {o.name: o.unit for o in profile.observations}
    found += _unit_mismatches("observation", info.obs_names, info.obs_units, obs_units)
    found += _unit_mismatches("action", info.action_names, info.action_units, {a.name: a.unit for a in profile.actions})
    found += _bound_mismatches(info, profile)
    if isinstance(info.actuator, MotorActuator):
        found += [m for spec in profile.commands for m in actuator_mismatches(info.actuator, spec, info.action_names)]
    drive = info.actuator if isinstance(info.actuator, DriveActuator) else None
    found += [m for spec in profile.commands for m in drive_mismatches(drive, spec)]
    found += esc_mismatches(drive, info, profile)
    found += camera_mismatches(info.images, profile)
    return found


ASPECT_TOLERANCE = 0.02
"""Largest relative difference accepted between a crop box's aspect ratio and its camera's: more would stretch
the picture the policy sees."""


def camera_mismatches(cameras: tuple[ImageSpec, ...], profile: RobotProfile) -> list[str]:
    """Every camera of the policy fed by exactly one image input of the profile, which feeds no other camera and
    whose crop box and stated channels fit the camera's spec."""
    fed = {spec.camera: spec for spec in profile.image_inputs}
    found = [
        f"camera {camera.name!r} ({camera.width}x{camera.height}): no image input of the profile feeds it"
        for camera in cameras
        if camera.name not in fed
    ]
    names = {camera.name for camera in cameras}
    found += [
        f"image input {spec.name!r} feeds camera {spec.camera!r}, which the policy does not take "
        f"(its cameras: {sorted(names) or 'none'})"
        for spec in profile.image_inputs
        if spec.camera not in names
    ]
    for camera in cameras:
        if camera.name in fed:
            found += _frame_mismatches(camera, fed[camera.name])
    return found


def _frame_mismatches(camera: ImageSpec, spec: InputSpec) -> list[str]:
    found = []
    where = f"camera {camera.name!r} (input {spec.name!r})"
    if spec.crop is not None:
        aspect, wanted = spec.crop.width / spec.crop.height, camera.width / camera.height
        if abs(aspect - wanted) > ASPECT_TOLERANCE * wanted:
            found.append(
                f"{where}: crop box {spec.crop.width}x{spec.crop.height} (aspect {aspect:.3f}) would stretch the "
                f"policy's {camera.width}x{camera.height} frames (aspect {wanted:.3f})"
            )
    if spec.channels == 1 and camera.channels == 3:
        found.append(f"{where}: the profile's camera sends grey frames (channels 1), the policy takes colour (3)")
    return found


def drive_mismatches(drive: DriveActuator | None, spec: CommandSpec) -> list[str]:
    """How the command `spec` sends an RC car's drive other than the policy's drive action means it.

    A car policy states what its drive action meant to the simulator (`robo_rl.actuator.DriveActuator`): the
    ESC's speed setpoint in m/s = scale × action, or a throttle fraction. Every field carrying that action must
    say it sends the same (`CommandField.esc`); a speed field must be linear, field = scale × action with the
    policy's scale (m/s per unit action) and no offset or transform. A field that says what its ESC receives
    refuses a policy that does not state it (exported before the record: trained on throttle)."""
    found = []
    for f in spec.fields:
        where = f"{spec.type} {f.field} ({f.action})"
        carries = drive is not None and f.action == drive.action
        if not f.esc and not carries:
            continue
        if drive is None:
            found.append(
                f"{where}: profile sends the ESC a {f.esc} command; the policy does not state what its drive "
                f"action means ({ACTUATOR_KEY}: exported before it was recorded, i.e. trained on throttle)"
            )
        elif not carries:
            found.append(f"{where}: an ESC field ({f.esc}), but the policy's drive action is {drive.action!r}")
        elif f.esc != drive.mode:
            sent = f"a {f.esc} command" if f.esc else "a field that does not say what the ESC receives (esc)"
            found.append(f"{where}: profile sends {sent}; the policy's drive action is a {drive.mode} command")
        elif drive.mode == "speed" and (f.transform or f.axis or not _drive_scale_matches(f.scale, f.offset, drive)):
            found.append(
                f"{where}: profile sends speed {f.offset:g} + {f.scale:g} * action m/s, the policy's speed "
                f"setpoint ({ACTUATOR_KEY}) is {drive.scale:g} * action m/s"
            )
    return found


REVERSE_TOLERANCE = 0.01
"""m/s: largest accepted difference between the reverse speed the simulator executed for the policy's lowest
command and the one the car's ESC executes (1 erpm is 0.2 mm/s at F1TENTH's 4614 erpm per m/s)."""


def esc_mismatches(drive: DriveActuator | None, info: PolicyInfo, profile: RobotProfile) -> list[str]:
    """Where the car's ESC (the profile's `vesc` calibration) would execute the policy's lowest drive command as
    another reverse speed than the simulator did.

    The simulator clipped the speed setpoint at -max_reverse_speed (`robo_rl.actuator.DriveActuator`, the car
    file's ESC limit); on the car, vesc_driver clips the ERPM at its reverse limit (`VescCalibration.speed_reach`).
    Over the policy's drive range the two agree when the ESC clips exactly where the simulator did if the policy
    commands beyond it, and reaches the policy's lowest command if it does not. The command itself is not changed:
    the ESC's limit is the clip, so the profile's bounds stay the policy's. Forward speeds are the profile's own
    check (`RobotProfile.vesc`). Not checked: a profile without `vesc`, a throttle policy, and a speed policy
    trained on the car itself (no simulated limit recorded: max_reverse_speed 0)."""
    vesc = profile.vesc
    if vesc is None or drive is None or drive.mode != "speed" or drive.max_reverse_speed <= 0:
        return []
    bounds = dict(zip(info.action_names, zip(info.action_low, info.action_high, strict=True), strict=False))
    if drive.action not in bounds:
        return []
    low, high = bounds[drive.action]
    found = []
    for spec in profile.commands:
        for f in spec.fields:
            if f.action == drive.action and f.esc == "speed":
                lowest = min(f.offset + f.scale * low, f.offset + f.scale * high)
                problem = _reverse_problem(vesc, lowest, drive.max_reverse_speed)
                found += [f"{spec.type} {f.field} ({f.action}): {problem}"] if problem else []
    return found


def _reverse_problem(vesc: VescCalibration, lowest: float, max_reverse_speed: float) -> str:
    """Why the ESC executes the lowest speed command `lowest` (m/s) otherwise than a simulator whose reverse limit
    is `max_reverse_speed`; "" when it does not."""
    simulated = max(lowest, -max_reverse_speed)
    executed = max(lowest, vesc.speed_reach[0])
    if abs(simulated - executed) <= REVERSE_TOLERANCE:
        return ""
    key = vesc.reverse_limit_key
    clipped = simulated > lowest
    simulator = f"{simulated:.3f} m/s (its ESC limit, {ACTUATOR_KEY} max_reverse_speed)" if clipped else "it"
    needed = vesc.erpm_command(simulated)
    fix = f"set {key} to {needed:.0f} erpm, the simulator's limit" if clipped else f"{key} must reach {needed:.0f} erpm"
    return (
        f"reverse: the policy commands down to {lowest:.3f} m/s; the simulator drove {simulator}, the car's ESC would "
        f"drive {executed:.3f} m/s (it reaches {vesc.speed_reach[0]:.3f} m/s: {vesc.speed_text(key)}): {fix}"
    )


def profile_drive(profile: RobotProfile) -> DriveActuator | None:
    """What the profile's first command sends the car's ESC as its drive (its `esc` field), as a policy trained on
    the robot itself records it (the car is the plant: no simulated speed loop); None without an ESC field."""
    for f in profile.commands[0].fields:
        if f.esc:
            scale = f.scale if f.esc == "speed" else 1.0
            return DriveActuator(mode=f.esc, scale=scale, action=f.action, car=profile.name)
    return None


def _drive_scale_matches(scale: float, offset: float, drive: DriveActuator) -> bool:
    return abs(scale - drive.scale) <= COMMAND_MAP_TOLERANCE * drive.scale and offset == 0.0


ACTUATOR_MOTORS = "px4_msgs/msg/ActuatorMotors"
"""The PX4 command whose fields are the motor commands u themselves."""


def actuator_mismatches(actuator: MotorActuator, spec: CommandSpec, action_names: tuple[str, ...]) -> list[str]:
    """How the command `spec` maps the policy's actions other than its actuator model does.

    A policy that states its actuator model (`robo_rl.actuator`) means by each action one motor command u, linear
    in the action (`MotorActuator.command`); the robot's motor driver receives the PWM value u * pwm_full_scale.
    So every field carrying one of its actions must be that value: field = offset + scale * action with
    scale = pwm_full_scale * slope and offset = pwm_full_scale * (command_low - action_low * slope), and no
    transform or body axis. PX4's ActuatorMotors takes the motor command itself (`control[i]` in [0, 1] of full
    thrust, px4_msgs ActuatorMotors.msg), so its full scale is 1 whatever the Crazyflie PWM range.
    """
    full = 1 if spec.type == ACTUATOR_MOTORS else actuator.pwm_full_scale
    scale = full * actuator.slope
    offset = full * (actuator.command_low - actuator.action_low * actuator.slope)
    found = []
    for f in spec.fields:
        if f.action not in action_names:
            continue
        where = f"{spec.type} {f.field} ({f.action})"
        if f.transform or f.axis:
            found.append(f"{where}: a motor command field is linear ({ACTUATOR_KEY}), without transform or axis")
        elif not (_map_close(f.scale, scale, full) and _map_close(f.offset, offset, full)):
            found.append(
                f"{where}: profile sends {f.offset:g} + {f.scale:g} * action, the policy's actuator model "
                f"({ACTUATOR_KEY}, PWM full scale {full}) {offset:g} + {scale:g} * action"
            )
    return found


def _map_close(a: float, b: float, full_scale: float) -> bool:
    return abs(a - b) <= COMMAND_MAP_TOLERANCE * full_scale


def _name_mismatches(what: str, policy: tuple[str, ...], profile: tuple[str, ...]) -> list[str]:
    found = []
    missing = [n for n in profile if n not in policy]
    extra = [n for n in policy if n not in profile]
    if missing:
        found.append(f"{what}s missing from the policy: {missing}")
    if extra:
        found.append(f"{what}s not in the profile: {extra}")
    if not missing and not extra and policy != profile:
        first = next(i for i, (a, b) in enumerate(zip(policy, profile, strict=True)) if a != b)
        found.append(f"{what} order differs at index {first}: policy {policy[first]!r}, profile {profile[first]!r}")
    return found


def _unit_mismatches(what: str, names: tuple[str, ...], units: tuple[str, ...], expected: dict[str, str]) -> list[str]:
    return [
        f"{what} {name!r} unit: policy {unit!r}, profile {expected[name]!r}"
        for name, unit in zip(names, units, strict=False)
        if name in expected and expected[name] != unit
    ]


def _bound_mismatches(info: PolicyInfo, profile: RobotProfile) -> list[str]:
    limits = {a.name: a for a in profile.actions}
    found = []
    for name, low, high in zip(info.action_names, info.action_low, info.action_high, strict=False):
        limit = limits.get(name)
        if limit and not (_close(low, limit.low) and _close(high, limit.high)):
            found.append(f"action {name!r} bounds: policy [{low}, {high}], profile [{limit.low}, {limit.high}]")
    return found


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=BOUND_TOLERANCE, abs_tol=BOUND_TOLERANCE)
