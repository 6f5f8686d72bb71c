"""A run's exported `policy.onnx` as an actor for `robo-rl eval --onnx` and `robo-rl play --onnx`.

A policy with memory (a graph with the state input `h_in` and output `h_out`, its `robo_rl.memory` metadata saying
the state's size and reset value) becomes an `OnnxMemoryActor`: `(obs, h_in) -> (action, h_out)` with the file's
reset state, which `robo_rl.runners.policy_stepper.PolicyStepper` carries from step to step and resets per env.

onnxruntime raises its own exception classes (not ValueError) for a truncated, empty or foreign file, and a
policy whose input or output width differs from the task's would only fail at the first step; both are one
BadFileError line naming the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from robo_rl.api.bad_file import BadFileError, file_errors
from robo_rl.envs import state_of
from robo_rl.memory_spec import STATE_INPUT, STATE_OUTPUT, MemorySpec
from robo_rl.runners.policy_stepper import Actor

OBS_INPUT = "obs"
ACTION_OUTPUT = "action"
ORT_ERRORS = (
    "Fail",
    "InvalidArgument",
    "InvalidProtobuf",
    "InvalidGraph",
    "NoSuchFile",
    "NotImplemented",
    "RuntimeException",
)
"""onnxruntime's exception classes (in onnxruntime_pybind11_state) for a model it cannot load."""


def onnx_actor(path: Path, obs_dim: int | None = None, action_dim: int | None = None) -> Actor:
    """obs `(n, obs_dim)` → action `(n, action_dim)` computed by `path` in onnxruntime (CPU); the sizes, where
    given, are checked against the graph's input and output. A policy with memory (a graph input `h_in`) is an
    `OnnxMemoryActor` instead: `(obs, h_in) -> (action, h_out)`."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no exported policy (run robo-rl export first)")
    session = _session(path)
    _check_io(path, session, obs_dim, action_dim)
    one_row = _fixed_batch_of_one(session)
    if STATE_INPUT in {i.name for i in session.get_inputs()}:
        return OnnxMemoryActor(session, _memory_of(path, session), one_row)

    cameras = [i.name for i in session.get_inputs() if i.name not in (OBS_INPUT, STATE_INPUT)]
    if cameras:
        return _camera_actor(session, cameras)

    def act(obs: torch.Tensor) -> torch.Tensor:
        rows = obs.cpu().numpy().astype(np.float32)
        if one_row:  # a file exported with a batch of 1 (rsl_rl's and Isaac Lab's exporters): row by row
            out = np.concatenate([session.run([ACTION_OUTPUT], {OBS_INPUT: row[None]})[0] for row in rows])
        else:
            out = session.run([ACTION_OUTPUT], {OBS_INPUT: rows})[0]
        return torch.from_numpy(out).to(obs.device)

    return act


def _camera_actor(session: Any, cameras: list[str]) -> Actor:
    """A camera policy's actor: a camera env's observation dict -> action, its state under `obs` and each camera's
    uint8 frames under the camera's input name (`robo_rl.export.camera`)."""

    def act(obs: Any) -> torch.Tensor:
        if not isinstance(obs, dict):
            raise ValueError(f"this policy takes cameras {cameras}: it needs a camera task's observations")
        state = state_of(obs)
        feeds = {OBS_INPUT: state.cpu().numpy().astype(np.float32)}
        feeds |= {name: obs[name].cpu().numpy() for name in cameras}
        return torch.from_numpy(session.run([ACTION_OUTPUT], feeds)[0]).to(state.device)

    return act


class OnnxMemoryActor:
    """A policy with memory in onnxruntime: obs `(n, obs_dim)` and state `(n, size)` → action `(n, action_dim)` and
    the next state (the graph's `h_out`); its reset state is the file's `reset_value` in every entry."""

    def __init__(self, session: Any, memory: MemorySpec, one_row: bool = False) -> None:
        self.session, self.memory, self.one_row = session, memory, one_row

    def initial_state(self, num: int, device: torch.device | str = "cpu") -> torch.Tensor:
        """`(num, size)` of the artifact's reset value: the state before an episode's first step."""
        return torch.full((num, self.memory.size), float(self.memory.reset_value), device=device)

    def __call__(self, obs: torch.Tensor, h_in: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        rows = obs.cpu().numpy().astype(np.float32)
        states = h_in.cpu().numpy().astype(np.float32)
        if self.one_row:  # a file exported with a batch of 1: row by row, each row with its own state
            pairs = [self._run(rows[i : i + 1], states[i : i + 1]) for i in range(len(rows))]
            action, h_out = np.concatenate([a for a, _ in pairs]), np.concatenate([h for _, h in pairs])
        else:
            action, h_out = self._run(rows, states)
        return torch.from_numpy(action).to(obs.device), torch.from_numpy(h_out).to(h_in.device)

    def _run(self, obs: np.ndarray, h_in: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        action, h_out = self.session.run([ACTION_OUTPUT, STATE_OUTPUT], {OBS_INPUT: obs, STATE_INPUT: h_in})
        return action, h_out


def _memory_of(path: Path, session: Any) -> MemorySpec:
    """The memory the file's metadata states, checked against the graph's `h_in` and `h_out` `(batch, size)`."""
    memory = policy_artifact(path).memory
    if memory is None:
        raise BadFileError(path, f"its graph takes a state {STATE_INPUT!r} but its metadata states no robo_rl.memory")
    for role, values, name in (
        ("input", session.get_inputs(), STATE_INPUT),
        ("output", session.get_outputs(), STATE_OUTPUT),
    ):
        shape = {value.name: value.shape for value in values}.get(name)
        if shape is None or len(shape) != 2 or shape[1] != memory.size:
            raise BadFileError(path, f"{role} {name!r} has shape {shape}; its memory needs (batch, {memory.size})")
    return memory


def _fixed_batch_of_one(session: Any) -> bool:
    shape = next((i.shape for i in session.get_inputs() if i.name == OBS_INPUT), None)
    return shape is not None and len(shape) > 0 and shape[0] == 1


def _session(path: Path) -> Any:  # onnxruntime.InferenceSession
    import onnxruntime as ort
    from onnxruntime.capi import onnxruntime_pybind11_state as state

    errors = tuple(getattr(state, name) for name in ORT_ERRORS if hasattr(state, name))
    with file_errors(path, "not a loadable ONNX model", errors):
        return ort.InferenceSession(str(path), _options(ort), providers=["CPUExecutionProvider"])


def _options(ort: Any) -> Any:  # onnxruntime.SessionOptions
    """As many intra-op threads as torch was given (`--threads`, robo_rl.api.threads), one inter-op thread, and
    idle threads that sleep rather than spin: onnxruntime's default spins one thread per core, which collapses
    when another process keeps a core busy."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = torch.get_num_threads()
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return options


def _check_io(path: Path, session: Any, obs_dim: int | None, action_dim: int | None) -> None:
    """The graph takes `obs` `(batch, obs_dim)` and returns `action` `(batch, action_dim)`; a state input `h_in`
    needs its metadata (`_memory_of`)."""
    for role, values, name, width in (
        ("input", session.get_inputs(), OBS_INPUT, obs_dim),
        ("output", session.get_outputs(), ACTION_OUTPUT, action_dim),
    ):
        found = {value.name: value.shape for value in values}
        if name not in found:
            raise BadFileError(path, f"not a robo_rl policy: no {role} {name!r} (it has {sorted(found)})")
        shape = found[name]
        if width is not None and (len(shape) != 2 or shape[1] != width):
            raise BadFileError(path, f"{role} {name!r} has shape {shape}; this run's task needs (batch, {width})")


def policy_artifact(path: Path) -> Any:  # robo_rl.artifact.PolicyArtifact
    """What a policy .onnx file's metadata says (task, observation and action names, bounds, ...); one BadFileError
    line naming the file when it is not an ONNX model (protobuf's DecodeError) or lacks robo_rl's metadata."""
    from google.protobuf.message import DecodeError

    from robo_rl.artifact import PolicyArtifact
    from robo_rl.export.onnx import read_metadata

    with file_errors(path, "not a robo_rl policy file", (DecodeError, OSError, ValueError, KeyError, TypeError)):
        return PolicyArtifact.from_props(read_metadata(path))
