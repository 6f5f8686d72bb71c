"""Run an exported `policy.onnx` with onnxruntime, after checking its metadata against the robot profile.

A camera policy (artifact schema 4) has one more graph input per camera, named after it: the camera's frame as
uint8 `(1, height, width, channels)` at its `ImageSpec`'s size, made so by `robo_rl.real.images` from what the
profile's image input receives. `PolicyRuntime` feeds the state vector and the newest frame of every camera.

A policy with memory (artifact schema 5, `robo_rl.memory_spec`) has one more input `h_in` and output `h_out`, float32
`(1, size)`: `PolicyRuntime` holds the state, feeds it as `h_in` and keeps each call's `h_out` for the next call;
`reset_memory()` sets every entry to the artifact's `reset_value`, and its caller decides when (`RESET_RULE`; the
node's `PolicyController` does it). A file whose graph does not take and return the state its metadata states is
refused, and so is memory with action chunks or cameras, which no robo_rl export writes.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from robo_rl.actuator import ACTUATOR_KEY, Actuator, DriveActuator, MotorActuator
from robo_rl.artifact import MEMORY_KEY, ArtifactError, PolicyArtifact
from robo_rl.image_spec import ImageSpec
from robo_rl.memory_spec import STATE_INPUT, STATE_OUTPUT, MemorySpec
from robo_rl.real.profile import CommandSpec, InputSpec, RobotProfile, VescCalibration

OBS_INPUT = "obs"
ACTION_OUTPUT = "action"
BOUND_TOLERANCE = 1e-6
COMMAND_MAP_TOLERANCE = 1e-6
"""Largest relative difference accepted between a profile's command map and the policy's actuator model (of the
command's full scale, absolute)."""


class PolicyFileError(ValueError):
    """The file is not a robo_rl policy: unreadable, or missing/malformed `robo_rl.*` metadata."""


class ProfileMismatchError(ValueError):
    """The policy does not fit the robot profile; `mismatches` lists every difference found."""

    def __init__(self, policy: str, profile: str, mismatches: list[str]) -> None:
        self.mismatches = tuple(mismatches)
        super().__init__(f"policy {policy} does not fit profile {profile!r}: " + "; ".join(mismatches))


@dataclass(frozen=True)
class PolicyInfo:
    """The deployment-relevant `robo_rl.*` metadata of an exported policy."""

    task: str
    """Task the policy was trained on."""
    dt: float
    """Control period in seconds the policy was trained at."""
    obs_names: tuple[str, ...]
    """Observation names, in input order."""
    obs_units: tuple[str, ...]
    """Observation units, in input order."""
    action_names: tuple[str, ...]
    """Action names, in output order."""
    action_units: tuple[str, ...]
    """Action units, in output order."""
    action_low: tuple[float, ...]
    """Lower action bounds the outputs are clipped to."""
    action_high: tuple[float, ...]
    """Upper action bounds the outputs are clipped to."""
    version: str
    """robo_rl version that exported the file."""
    action_chunk: int = 1
    """H, the actions the policy outputs at once (`robo_rl.chunks`); the action fields describe one of them."""
    obs_low: tuple[float, ...] = ()
    """Lower observation bounds of the training env, in input order (empty: not given)."""
    obs_high: tuple[float, ...] = ()
    """Upper observation bounds, in input order (an `integral(...)` source is clipped to +-its bound)."""
    actuator: Actuator | None = None
    """What the actions mean physically (`robo_rl.actuator`): the profile's command map must apply it."""
    images: tuple[ImageSpec, ...] = ()
    """The camera inputs (`robo_rl.images`), in graph input order; () for a state-only policy."""
    memory: MemorySpec | None = None
    """The state a policy with memory carries (`robo_rl.memory_spec`); None for a policy without memory."""

    @classmethod
    def from_props(cls, props: Mapping[str, str]) -> PolicyInfo:
        """Parse the metadata_props of an ONNX file (`robo_rl.artifact`, every key required); raises
        PolicyFileError naming the bad key, or saying the file needs a newer robo_rl."""
        try:
            artifact = PolicyArtifact.from_props(props)
        except ArtifactError as err:
            raise PolicyFileError(str(err)) from None
        assert artifact.task is not None and artifact.dt is not None  # required by the strict reading
        return cls(
            task=artifact.task,
            dt=artifact.dt,
            obs_names=artifact.obs.names,
            obs_units=artifact.obs.units,
            action_names=artifact.action.names,
            action_units=artifact.action.units,
            action_low=artifact.action.low,
            action_high=artifact.action.high,
            version=str(artifact.version),
            action_chunk=artifact.action_chunk,
            obs_low=artifact.obs.low,
            obs_high=artifact.obs.high,
            actuator=artifact.actuator,
            images=artifact.images,
            memory=artifact.memory,
        )


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


class PolicyRuntime:
    """An exported policy in onnxruntime (CPU): `runtime(obs)` `(obs_dim,)` → action `(action_dim,)`; a chunked
    policy's H actions `(action_chunk, action_dim)` from `runtime.chunk(obs)`.

    A policy with memory carries its state from call to call (`state`); `reset_memory()` sets it to the artifact's
    reset value, as it is after construction.

    With a `profile`, the constructor refuses to start (ProfileMismatchError) unless the metadata fits it.
    `threads` is onnxruntime's intra-op thread count (see `session_threads`; 0: automatic, which is 1). The
    constructor runs the policy once on zeros, so that onnxruntime's one-time set-up (memory planning, kernel
    selection) is not paid by the first real observation; the state that run leaves is reset.
    """

    def __init__(self, path: Path | str, profile: RobotProfile | None = None, threads: int = 0) -> None:
        self.path = Path(path)
        self.threads = session_threads(threads, usable_cpus())
        self.session = _session(self.path, self.threads)
        self.info = _policy_info(self.path, self.session)
        if profile is not None:
            self.check(profile)
        self._state: np.ndarray | None = None
        self.reset_memory()
        self._warm_up()
        self.reset_memory()

    @property
    def obs_dim(self) -> int:
        return len(self.info.obs_names)

    @property
    def action_dim(self) -> int:
        """Actions of one step."""
        return len(self.info.action_names)

    @property
    def action_chunk(self) -> int:
        """H, the steps the policy outputs at once (1: not chunked)."""
        return self.info.action_chunk

    def check(self, profile: RobotProfile) -> None:
        """Raise ProfileMismatchError listing every mismatch between this policy and `profile`."""
        found = mismatches(self.info, profile)
        if found:
            raise ProfileMismatchError(self.path.name, profile.name, found)

    @property
    def cameras(self) -> tuple[ImageSpec, ...]:
        """The policy's camera inputs (() for a state-only policy)."""
        return self.info.images

    @property
    def memory(self) -> MemorySpec | None:
        """The state the policy carries between calls; None for a policy without memory."""
        return self.info.memory

    @property
    def state(self) -> np.ndarray | None:
        """A copy of the state the next call feeds as `h_in`, float32 `(1, size)`; None without memory."""
        return None if self._state is None else self._state.copy()

    def reset_memory(self) -> None:
        """Set every entry of the state to the artifact's `reset_value` (`robo_rl.memory_spec.RESET_RULE` says
        when); nothing for a policy without memory."""
        memory = self.info.memory
        if memory is not None:
            self._state = np.full((1, memory.size), memory.reset_value, dtype=np.float32)

    def _warm_up(self) -> None:
        frames = {camera.name: np.zeros(camera.shape, dtype=np.uint8) for camera in self.cameras}
        try:
            self(np.zeros(self.obs_dim, dtype=np.float32), frames)
        except Exception as err:  # onnxruntime raises its own untyped exception classes
            raise PolicyFileError(f"{self.path}: the policy does not run ({_first_line(err)})") from None

    def __call__(self, obs: np.ndarray, frames: Mapping[str, np.ndarray] | None = None) -> np.ndarray:
        """Action `(action_dim,)` float64 in the policy's units for one observation `(obs_dim,)` and, for a camera
        policy, one frame per camera (a chunked policy's first action: the one for the observation's own period)."""
        return self.chunk(obs, frames)[0]

    def chunk(self, obs: np.ndarray, frames: Mapping[str, np.ndarray] | None = None) -> np.ndarray:
        """Actions `(action_chunk, action_dim)` float64 for one observation `(obs_dim,)` and the cameras' frames
        (`{camera: (height, width, channels) uint8}`, every camera of the policy); row i is meant for `i * dt`
        seconds after the observation. A policy with memory is fed its state and keeps the state it returns."""
        obs = np.asarray(obs, dtype=np.float32)
        if obs.shape != (self.obs_dim,):
            raise ValueError(f"observation shape {obs.shape}, policy expects ({self.obs_dim},)")
        feed = {OBS_INPUT: obs[None, :]} | self._frames(frames or {})
        if self._state is None:
            action = self.session.run([ACTION_OUTPUT], feed)[0]
        else:
            action, self._state = self.session.run([ACTION_OUTPUT, STATE_OUTPUT], feed | {STATE_INPUT: self._state})
        return action[0].astype(np.float64).reshape(self.action_chunk, self.action_dim)

    def _frames(self, frames: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The graph's image inputs `(1, height, width, channels)` uint8; ValueError for a missing or misshapen one."""
        feed = {}
        for camera in self.cameras:
            frame = frames.get(camera.name)
            if frame is None:
                raise ValueError(f"no frame of camera {camera.name!r}")
            if frame.shape != camera.shape or frame.dtype != np.uint8:
                expected = f"expected {camera.shape} uint8"
                raise ValueError(f"camera {camera.name!r}: frame {frame.shape} {frame.dtype}, {expected}")
            feed[camera.name] = frame[None]
        return feed


def _policy_info(path: Path, session: Any) -> PolicyInfo:
    """The policy's metadata, checked against the widths of its graph's `obs` input and `action` output."""
    try:
        info = PolicyInfo.from_props(session.get_modelmeta().custom_metadata_map)
    except PolicyFileError as err:
        raise PolicyFileError(f"{path}: {err}") from None
    _check_width(path, "input", session.get_inputs(), OBS_INPUT, len(info.obs_names))
    _check_width(path, "output", session.get_outputs(), ACTION_OUTPUT, len(info.action_names) * info.action_chunk)
    if info.memory is not None:
        _check_memory(path, session, info)
    for camera in info.images:
        _check_image_input(path, session.get_inputs(), camera)
    _check_no_other_inputs(path, session.get_inputs(), info)
    return info


def _check_memory(path: Path, session: Any, info: PolicyInfo) -> None:
    """The graph takes the state as float32 `h_in` `(batch, size)` and returns it as `h_out` of the same shape;
    a policy with memory has neither action chunks nor cameras (no robo_rl export writes them, and what its state
    means across a chunk is not defined)."""
    memory = info.memory
    assert memory is not None
    where = f"its memory ({MEMORY_KEY}: {memory.kind}, {memory.size} entries)"
    if info.action_chunk > 1:
        raise PolicyFileError(f"{path}: {where} with action chunks of {info.action_chunk}: not supported")
    if info.images:
        raise PolicyFileError(f"{path}: {where} with cameras: not supported")
    for role, values, name in (
        ("input", session.get_inputs(), STATE_INPUT),
        ("output", session.get_outputs(), STATE_OUTPUT),
    ):
        found = {value.name: value for value in values}
        if name not in found:
            raise PolicyFileError(f"{path}: no graph {role} {name!r} for {where} (it has {sorted(found)})")
        value = found[name]
        if value.type != "tensor(float)" or len(value.shape) != 2 or value.shape[1] != memory.size:
            raise PolicyFileError(
                f"{path}: {role} {name!r} is {value.type} {value.shape}, {where} needs float32 (batch, {memory.size})"
            )


def _check_no_other_inputs(path: Path, inputs: list[Any], info: PolicyInfo) -> None:
    """Every graph input is one the runtime feeds: an input the metadata does not name (e.g. `h_in` of a file
    whose metadata states no memory) is refused here, by name, rather than at the first call."""
    fed = {OBS_INPUT, *(camera.name for camera in info.images)} | ({STATE_INPUT} if info.memory else set())
    other = sorted(value.name for value in inputs if value.name not in fed)
    if not other:
        return
    hint = f" (a policy with memory states it in {MEMORY_KEY})" if STATE_INPUT in other else ""
    raise PolicyFileError(f"{path}: graph inputs {other} are not in its metadata{hint}")


def _check_image_input(path: Path, inputs: list[Any], camera: ImageSpec) -> None:
    """The graph's input named after `camera` is uint8 `(batch, height, width, channels)` of its spec."""
    shapes = {value.name: (value.shape, value.type) for value in inputs}
    if camera.name not in shapes:
        raise PolicyFileError(f"{path}: no graph input {camera.name!r} for its camera (it has {sorted(shapes)})")
    shape, kind = shapes[camera.name]
    if kind != "tensor(uint8)" or len(shape) != 4 or tuple(shape[1:]) != camera.shape:
        raise PolicyFileError(
            f"{path}: input {camera.name!r} is {kind} {shape}, its metadata names uint8 (batch, {camera.height}, "
            f"{camera.width}, {camera.channels})"
        )


def _check_width(path: Path, role: str, values: list[Any], name: str, width: int) -> None:
    shapes = {value.name: value.shape for value in values}
    if name not in shapes:
        raise PolicyFileError(f"{path}: no graph {role} {name!r} (it has {sorted(shapes)})")
    if len(shapes[name]) != 2 or shapes[name][1] != width:
        raise PolicyFileError(f"{path}: {role} {name!r} has shape {shapes[name]}, its metadata names {width} elements")


def session_threads(requested: int, usable_cpus: int) -> int:
    """onnxruntime's intra-op thread count: `requested` (0: automatic) capped at the CPUs this process may use.

    Automatic is 1: the policies are small MLPs (tens of µs per call), for which handing work to other threads
    costs more than it saves, and each extra thread competes with the control thread for a core.
    """
    if requested < 0:
        raise ValueError(f"threads: must be >= 0 (0: automatic), got {requested}")
    return max(1, min(requested or 1, usable_cpus))


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask, e.g. under `taskset`), else the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _session_options(threads: int) -> Any:  # onnxruntime.SessionOptions
    """One intra-op pool of `threads` (the calling thread is one of them), no inter-op parallelism, sequential
    execution, and no spin-waiting: idle pool threads sleep instead of burning a core the control loop needs."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return options


def _session(path: Path, threads: int) -> Any:  # onnxruntime.InferenceSession; its stubs are incomplete
    import onnxruntime as ort

    if not path.is_file():
        raise PolicyFileError(f"{path}: no such policy file")
    options = _session_options(threads)
    try:
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as err:  # onnxruntime raises its own untyped exception classes
        raise PolicyFileError(f"{path}: not a loadable ONNX model ({_first_line(err)})") from None


def _first_line(err: Exception) -> str:
    lines = str(err).strip().splitlines()
    return lines[0] if lines else type(err).__name__
