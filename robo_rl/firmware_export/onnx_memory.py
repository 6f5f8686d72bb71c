"""A policy with memory in the ONNX graph: the memory its metadata declares, the recurrent forms the C export
refuses, the state input, and the one GRU node read into a `Gru` layer."""

from __future__ import annotations

import json

import numpy as np
import onnx

from robo_rl.artifact import MEMORY_KEY
from robo_rl.firmware_export.ir import Gru
from robo_rl.firmware_export.onnx_ops import RECURRENT_OPS, ChainReader, UnsupportedGraphError, attribute
from robo_rl.memory_spec import MemorySpec


def declared_memory(props: dict[str, str]) -> MemorySpec | None:
    """The memory the metadata declares (`robo_rl.memory`), None without it."""
    text = props.get(MEMORY_KEY)
    if text is None:
        return None
    try:
        return MemorySpec.from_dict(json.loads(text))
    except ValueError as error:
        raise UnsupportedGraphError(f"metadata {MEMORY_KEY!r}: {error}") from None


def check_recurrence(graph: onnx.GraphProto, memory: MemorySpec | None) -> None:
    """UnsupportedGraphError, before any node is read, for memory the C export cannot carry: a `history` memory,
    a recurrent operator other than GRU, or a GRU without the memory metadata that names its state."""
    if memory is not None and memory.kind != "gru":
        raise UnsupportedGraphError(
            f"the policy has a '{memory.kind}' memory ({MEMORY_KEY}, state of {memory.size}): the C export carries a "
            "GRU's state only; train the policy with memory 'gru', or deploy this one with onnxruntime"
        )
    for node in graph.node:
        if node.op_type in RECURRENT_OPS and node.op_type != "GRU":
            raise UnsupportedGraphError(
                f"{node.op_type} node '{node.name}': the C export reads one GRU layer as memory, not {node.op_type}"
            )
        if node.op_type == "GRU" and memory is None:
            raise UnsupportedGraphError(
                f"GRU node '{node.name}': a policy with memory needs the {MEMORY_KEY} metadata (its state input "
                "h_in, output h_out, size and reset rule); export it with robo_rl's exporter"
            )


def take_state_input(inputs: dict[str, int], memory: MemorySpec | None) -> str:
    """Remove the state input (`h_in`) from `inputs` (graph input → width), checking its width; its name, or ""
    without memory."""
    if memory is None:
        return ""
    width = inputs.pop(memory.input, None)
    if width is None:
        raise UnsupportedGraphError(f"the metadata declares a memory, but the graph has no input '{memory.input}'")
    if width != memory.size:
        raise UnsupportedGraphError(
            f"the state input '{memory.input}' has {width} entries, the metadata's memory {memory.size}"
        )
    if not inputs:
        raise UnsupportedGraphError(f"the graph has no observation input besides the state '{memory.input}'")
    return memory.input


def check_gru_attributes(node: onnx.NodeProto) -> None:
    """UnsupportedGraphError unless the GRU is one forward direction, layout 0, linear_before_reset non-zero
    (torch's form: 1), with the default Sigmoid/Tanh activations and no clip."""
    direction = attribute(node, "direction", b"forward")
    direction = direction.decode() if isinstance(direction, bytes) else direction
    activations = [a.decode() if isinstance(a, bytes) else a for a in attribute(node, "activations", [])]  # type: ignore[attr-defined]
    linear_before_reset = attribute(node, "linear_before_reset", 0)
    problems = [
        *([f"direction {direction!r} (only 'forward')"] if direction != "forward" else []),
        *([f"layout {attribute(node, 'layout', 0)} (only 0)"] if attribute(node, "layout", 0) != 0 else []),
        *(["linear_before_reset=0 (only non-zero, torch's GRU)"] if not linear_before_reset else []),
        *([f"activations {activations} (only Sigmoid, Tanh)"] if activations not in ([], ["Sigmoid", "Tanh"]) else []),
        *(["clip"] if attribute(node, "clip", None) is not None else []),
    ]
    if problems:
        raise UnsupportedGraphError(f"GRU node '{node.name}': {'; '.join(problems)} is not supported")


def gru_layer(node: onnx.NodeProto, reader: ChainReader, w: str, r: str, b: str) -> Gru:
    """The Gru layer of a GRU node's constants W (1, 3H, in), R (1, 3H, H), B (1, 6H), checked against the
    chain's width, `hidden_size` and the metadata's memory size."""
    weight = np.asarray(reader.constants[w], np.float32)
    recurrence = np.asarray(reader.constants[r], np.float32)
    size = int(attribute(node, "hidden_size", recurrence.shape[-1]))  # type: ignore[call-overload]
    bias = np.asarray(reader.constants[b], np.float32) if b else np.zeros((1, 6 * size), np.float32)
    expected = {"W": (1, 3 * size, reader.width), "R": (1, 3 * size, size), "B": (1, 6 * size)}
    for name, array in (("W", weight), ("R", recurrence), ("B", bias)):
        if array.shape != expected[name]:
            raise UnsupportedGraphError(
                f"GRU node '{node.name}': {name} of shape {array.shape}, expected {expected[name]} (one direction, "
                f"hidden size {size}, {reader.width} inputs)"
            )
    if reader.memory is not None and size != reader.memory.size:
        raise UnsupportedGraphError(
            f"GRU node '{node.name}': hidden size {size}, but the metadata's memory has {reader.memory.size} entries"
        )
    return Gru(
        node.name,
        np.ascontiguousarray(weight[0]),
        np.ascontiguousarray(recurrence[0]),
        np.ascontiguousarray(bias[0, : 3 * size]),
        np.ascontiguousarray(bias[0, 3 * size :]),
    )
