"""A policy .onnx file read for the firmware export: every problem is a ValueError that starts with the file.

protobuf raises DecodeError for a truncated or foreign file, and an empty file parses as an empty model; the IR
and flow readers name what they cannot translate (an operator, a metadata key) but not the file they read.
"""

from __future__ import annotations

from pathlib import Path

import onnx
from google.protobuf.message import DecodeError

from robo_rl.firmware_export.flow import FlowIR, is_flow_policy, load_flow_policy
from robo_rl.firmware_export.ir import PolicyIR
from robo_rl.firmware_export.onnx_reader import load_policy
from robo_rl.firmware_export.vector_only import check_vector_policy


class PolicyFileError(ValueError):
    """A file that is not an ONNX model; the message is `PATH: PROBLEM`, one line."""


def read_model(path: Path) -> onnx.ModelProto:
    """The ONNX model in `path`; PolicyFileError when the file is not one (truncated, empty, another format)."""
    try:
        model = onnx.load(str(path))
    except (DecodeError, OSError, ValueError) as err:
        raise PolicyFileError(f"{path}: not an ONNX model ({_one_line(err)})") from None
    if not model.graph.node:
        raise PolicyFileError(f"{path}: not an ONNX model (no graph nodes; empty or truncated?)")
    return model


def read_policy(path: Path) -> tuple[FlowIR | None, PolicyIR]:
    """(the flow sampler's parts or None, the IR the C is generated from) of policy file `path`. Errors keep
    their type (UnsupportedOperatorError, UnsupportedGraphError, ValueError); their message starts with `path`.
    A policy with camera inputs is refused first (`ImagePolicyError`, `robo_rl.firmware_export.vector_only`)."""
    model = read_model(path)
    try:
        check_vector_policy(model)
        flow = load_flow_policy(model) if is_flow_policy(model) else None
        return flow, flow.summary if flow is not None else load_policy(model)
    except ValueError as err:
        err.args = (f"{path}: {_one_line(err)}",)
        raise


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__
