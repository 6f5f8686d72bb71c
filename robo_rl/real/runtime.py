"""Run an exported `policy.onnx` with onnxruntime, after checking its metadata against the robot profile.

A camera policy (artifact schema 4) has one more graph input per camera, named after it: the camera's frame as
uint8 `(1, height, width, channels)` at its `ImageSpec`'s size, made so by `robo_rl.real.images` from what the
profile's image input receives. `PolicyRuntime` feeds the state vector and the newest frame of every camera.

A policy with memory (artifact schema 5, `robo_rl.memory_spec`) has one more input `h_in` and output `h_out`, float32
`(1, size)`: `PolicyRuntime` holds the state, feeds it as `h_in` and keeps each call's `h_out` for the next call;
`reset_memory()` sets every entry to the artifact's `reset_value`, and its caller decides when (`RESET_RULE`; the
node's `PolicyController` does it). A file whose graph does not take and return the state its metadata states is
refused, and so is memory with action chunks or cameras, which no robo_rl export writes. Whether the metadata fits
a profile is `robo_rl.real.policy_fit`'s.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from robo_rl.artifact import MEMORY_KEY
from robo_rl.image_spec import ImageSpec
from robo_rl.memory_spec import STATE_INPUT, STATE_OUTPUT, MemorySpec
from robo_rl.real.policy_fit import ProfileMismatchError, mismatches
from robo_rl.real.policy_info import PolicyFileError, PolicyInfo
from robo_rl.real.profile import RobotProfile

OBS_INPUT = "obs"
ACTION_OUTPUT = "action"


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
