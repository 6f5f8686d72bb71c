"""A run's exported `policy.onnx` as an actor for `robo-rl eval --onnx` and `robo-rl play --onnx`.

onnxruntime raises its own exception classes (not ValueError) for a truncated, empty or foreign file, and a
policy whose input or output width differs from the task's would only fail at the first step; both are one
BadFileError line naming the file.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from robo_rl.api.bad_file import BadFileError, file_errors

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


def onnx_actor(
    path: Path, obs_dim: int | None = None, action_dim: int | None = None
) -> Callable[[torch.Tensor], torch.Tensor]:
    """obs `(n, obs_dim)` → action `(n, action_dim)` computed by `path` in onnxruntime (CPU); the sizes, where
    given, are checked against the graph's input and output."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no exported policy (run robo-rl export first)")
    session = _session(path)
    _check_io(path, session, obs_dim, action_dim)

    one_row = _fixed_batch_of_one(session)

    def act(obs: torch.Tensor) -> torch.Tensor:
        rows = obs.cpu().numpy().astype(np.float32)
        if one_row:  # a file exported with a batch of 1 (rsl_rl's and Isaac Lab's exporters): row by row
            out = np.concatenate([session.run([ACTION_OUTPUT], {OBS_INPUT: row[None]})[0] for row in rows])
        else:
            out = session.run([ACTION_OUTPUT], {OBS_INPUT: rows})[0]
        return torch.from_numpy(out).to(obs.device)

    return act


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
    """The graph takes `obs` `(batch, obs_dim)` and returns `action` `(batch, action_dim)`."""
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
