"""The ONNX operators the reader turns into layers: which are supported, the errors for the rest, and one handler
per operator that extends the chain of layers (`ChainReader`: the reader's state a handler reads and changes)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol, SupportsFloat, TypeAlias, cast

import numpy as np
import onnx

from robo_rl.firmware_export.ir import Activation, ActivationKind, Clip, Dense, Elementwise, Layer
from robo_rl.memory_spec import MemorySpec


class UnsupportedOperatorError(ValueError):
    """A node the firmware exporter cannot translate: the message names the operator type and the node."""

    def __init__(self, op_type: str, node_name: str, reason: str = "operator not supported") -> None:
        self.op_type = op_type
        self.node_name = node_name
        self.reason = reason
        super().__init__(
            f"{op_type} node '{node_name}': {reason} (firmware export supports {', '.join(SUPPORTED_OPS)})"
        )


class UnsupportedGraphError(ValueError):
    """The graph as a whole does not have the supported form (inputs, outputs, shapes)."""


_PASS_THROUGH = ("Identity", "Cast", "Flatten", "Reshape")
SUPPORTED_OPS = (
    "Gemm",
    "MatMul",
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Relu",
    "Tanh",
    "Sigmoid",
    "Elu",
    "LeakyRelu",
    "Clip",
    "Concat",
    "Slice",
    *_PASS_THROUGH,
    "Constant",
    "Unsqueeze",
    "Squeeze",
    "GRU",
)
RECURRENT_OPS = ("GRU", "LSTM", "RNN", "Scan", "Loop")
"""Operators that carry a state; only a GRU of the form `Gru` describes is read."""
STATE_OPS = ("Unsqueeze", "Slice", "Identity")
"""Operators allowed on the state's way from `h_in` to the GRU's initial state (torch's exporter: Unsqueeze to
`(1, batch, H)`, Slice of layer 0)."""
SEQUENCE_OPS = ("GRU", "Squeeze", "Identity")
"""Operators allowed on a chain value of the GRU's `(1, batch, features)` sequence form."""


class ChainReader(Protocol):
    """What an operator handler reads and changes of the graph reader (`onnx_reader`)."""

    opset: int
    memory: MemorySpec | None
    constants: dict[str, np.ndarray]
    tail: str | None
    """The tensor at the end of the chain (None until the graph inputs are joined)."""
    width: int
    """Features of `tail`."""
    layers: list[Layer]
    bare_matmul: bool
    """The last layer is a MatMul whose bias a following Add may supply."""
    sequence: bool
    """The chain value has the GRU's (1, batch, features) form."""
    gru_state: str
    new_state: set[str]

    def constant(self, node: onnx.NodeProto) -> np.ndarray: ...

    def add_layer(self, layer: Layer, width: int | None = None) -> None: ...


def unsqueeze_axes(reader: ChainReader, node: onnx.NodeProto) -> list[int]:
    """Unsqueeze/Squeeze axes: an attribute before opset 13, a constant input from it on ([] when absent)."""
    if reader.opset < 13:
        return list(attribute(node, "axes", []))  # type: ignore[call-overload]
    if len(node.input) < 2 or not node.input[1]:
        return []
    if node.input[1] not in reader.constants:
        raise UnsupportedOperatorError(node.op_type, node.name, "the axes are computed; they must be a constant")
    return [int(v) for v in np.asarray(reader.constants[node.input[1]]).reshape(-1)]


def _unsqueeze(reader: ChainReader, node: onnx.NodeProto, _bare: bool) -> None:
    """The chain's (batch, features) value unsqueezed on axis 0 to (1, batch, features): a GRU's input (no layer)."""
    if reader.sequence or unsqueeze_axes(reader, node) != [0]:
        raise UnsupportedOperatorError("Unsqueeze", node.name, "only axis 0 before a GRU is supported")
    reader.sequence = True


def _squeeze(reader: ChainReader, node: onnx.NodeProto, _bare: bool) -> None:
    """The GRU's (1, batch, H) final state squeezed on axis 0 back to (batch, H) (no layer)."""
    if not reader.sequence or unsqueeze_axes(reader, node) not in ([0], [-3]):
        raise UnsupportedOperatorError("Squeeze", node.name, "only axis 0 of a GRU's final state is supported")
    if node.input[0] == reader.gru_state:
        reader.new_state.add(node.output[0])
    reader.sequence = False


def attribute(node: onnx.NodeProto, name: str, default: object) -> object:
    for attribute in node.attribute:
        if attribute.name == name:
            return onnx.helper.get_attribute_value(attribute)
    return default


def float_attribute(node: onnx.NodeProto, name: str, default: float) -> float:
    """A number attribute as a float."""
    return float(cast(SupportsFloat, attribute(node, name, default)))


def _feature_vector(reader: ChainReader, node: onnx.NodeProto, value: np.ndarray) -> np.ndarray:
    """A constant operand as () scalar or (width,) vector; anything that would change the shape is an error."""
    array = np.asarray(value, dtype=np.float32)
    if array.size == 1 and array.ndim <= 2:
        return array.reshape(())
    squeezed = array.reshape(-1) if array.ndim == 2 and array.shape[0] == 1 else array
    if squeezed.ndim != 1 or squeezed.shape[0] != reader.width:
        raise UnsupportedOperatorError(
            node.op_type,
            node.name,
            f"constant of shape {tuple(array.shape)} does not broadcast over {reader.width} features",
        )
    return squeezed


def _gemm(reader: ChainReader, node: onnx.NodeProto, _bare: bool) -> None:
    if node.input[0] != reader.tail or len(node.input) < 2 or node.input[1] not in reader.constants:
        raise UnsupportedOperatorError("Gemm", node.name, "only input @ constant weight (+ constant bias) is supported")
    if attribute(node, "transA", 0):
        raise UnsupportedOperatorError("Gemm", node.name, "transA=1 is not supported")
    weight = np.asarray(reader.constants[node.input[1]], dtype=np.float32)
    weight = weight if attribute(node, "transB", 0) else weight.T
    alpha, beta = float_attribute(node, "alpha", 1.0), float_attribute(node, "beta", 1.0)
    bias = np.zeros(weight.shape[0], np.float32)
    if len(node.input) > 2 and node.input[2]:
        if node.input[2] not in reader.constants:
            raise UnsupportedOperatorError("Gemm", node.name, "the bias C must be a constant")
        given = np.asarray(reader.constants[node.input[2]], np.float32).reshape(-1)
        if given.size not in (1, bias.size):
            raise UnsupportedOperatorError("Gemm", node.name, f"bias of {given.size} values for {bias.size} outputs")
        bias = np.broadcast_to(given, bias.shape)
    _dense(reader, node, weight * np.float32(alpha) if alpha != 1.0 else weight, bias * np.float32(beta))


def _matmul(reader: ChainReader, node: onnx.NodeProto, _bare: bool) -> None:
    if node.input[0] != reader.tail or node.input[1] not in reader.constants:
        raise UnsupportedOperatorError("MatMul", node.name, "only input @ constant weight is supported")
    weight = np.asarray(reader.constants[node.input[1]], dtype=np.float32)
    if weight.ndim != 2:
        raise UnsupportedOperatorError("MatMul", node.name, f"weight of shape {weight.shape}; only 2-D is supported")
    _dense(reader, node, weight.T, np.zeros(weight.shape[1], np.float32))
    reader.bare_matmul = True


def _dense(reader: ChainReader, node: onnx.NodeProto, weight: np.ndarray, bias: np.ndarray) -> None:
    if weight.ndim != 2 or weight.shape[1] != reader.width:
        raise UnsupportedOperatorError(
            node.op_type, node.name, f"weight of shape {weight.shape} does not take {reader.width} input features"
        )
    layer = Dense(node.name, np.ascontiguousarray(weight, np.float32), np.ascontiguousarray(bias, np.float32))
    reader.add_layer(layer, width=layer.out_features)


def _elementwise(reader: ChainReader, node: onnx.NodeProto, bare_matmul: bool) -> None:
    op = node.op_type.lower()
    constant = _feature_vector(reader, node, reader.constant(node))
    constant_first = node.input[0] in reader.constants
    last = reader.layers[-1] if reader.layers else None
    if op == "add" and bare_matmul and isinstance(last, Dense):
        bias = np.broadcast_to(constant, last.bias.shape).astype(np.float32)
        reader.layers[-1] = Dense(f"{last.name}+{node.name}", last.weight, np.ascontiguousarray(bias))
        return
    reader.add_layer(Elementwise(node.name, op, constant, constant_first and op in ("sub", "div")))  # type: ignore[arg-type]


Handler: TypeAlias = Callable[[ChainReader, onnx.NodeProto, bool], None]


def _activation(kind: ActivationKind, default_alpha: float = 0.0) -> Handler:
    def handler(reader: ChainReader, node: onnx.NodeProto, _bare: bool) -> None:
        reader.add_layer(Activation(node.name, kind, float_attribute(node, "alpha", default_alpha)))

    return handler


def _clip(reader: ChainReader, node: onnx.NodeProto, _bare: bool) -> None:
    if reader.opset < 11:
        low = float_attribute(node, "min", -math.inf)
        high = float_attribute(node, "max", math.inf)
    else:
        low, high = (_clip_bound(reader, node, i, default) for i, default in ((1, -math.inf), (2, math.inf)))
    reader.add_layer(Clip(node.name, low, high))


def _clip_bound(reader: ChainReader, node: onnx.NodeProto, index: int, default: float) -> float:
    if len(node.input) <= index or not node.input[index]:
        return default
    value = np.asarray(reader.constants[node.input[index]])
    if value.size != 1:
        raise UnsupportedOperatorError("Clip", node.name, f"bound of shape {value.shape}; Clip bounds are scalars")
    return float(value.reshape(()))


def _pass_through(reader: ChainReader, node: onnx.NodeProto, bare_matmul: bool) -> None:
    """Identity, Cast to float, Flatten/Reshape that keep (batch, features): no layer."""
    if node.op_type == "Cast" and attribute(node, "to", None) != onnx.TensorProto.FLOAT:
        raise UnsupportedOperatorError("Cast", node.name, "only a cast to float32 is supported")
    if node.op_type == "Flatten" and attribute(node, "axis", 1) not in (1, -1):
        raise UnsupportedOperatorError("Flatten", node.name, "only axis=1 keeps (batch, features)")
    if node.op_type == "Reshape":
        _check_reshape(reader, node)
    reader.bare_matmul = bare_matmul


def _check_reshape(reader: ChainReader, node: onnx.NodeProto) -> None:
    shape = [int(v) for v in np.asarray(reader.constants.get(node.input[1], np.zeros(0))).reshape(-1)]
    keeps = len(shape) == 2 and (shape[1] == reader.width or (shape[1] == -1 and shape[0] in (0, 1)))
    if node.input[1] not in reader.constants or not keeps:
        raise UnsupportedOperatorError(
            "Reshape", node.name, f"shape {shape} does not keep (batch, {reader.width}); only such reshapes work"
        )


def _slice(reader: ChainReader, node: onnx.NodeProto, bare_matmul: bool) -> None:
    """A Slice of the features straight after a Dense layer: the Dense keeps only the selected rows (no layer)."""
    last = reader.layers[-1] if reader.layers else None
    if not isinstance(last, Dense) or reader.width != last.out_features:
        raise UnsupportedOperatorError("Slice", node.name, "only a Slice of a Dense layer's outputs is supported")
    starts, ends, axes, steps = slice_arguments(reader, node)
    if len(starts) != 1 or axes[0] not in (1, -1):
        raise UnsupportedOperatorError("Slice", node.name, f"axes {axes}; only the feature axis (1) can be sliced")
    if steps[0] == 0:
        raise UnsupportedOperatorError("Slice", node.name, "step 0")
    rows = np.arange(last.out_features)[starts[0] : ends[0] : steps[0]]  # ONNX clamps as Python slicing does
    if rows.size == 0:
        raise UnsupportedOperatorError("Slice", node.name, "selects no feature")
    weight, bias = np.ascontiguousarray(last.weight[rows]), np.ascontiguousarray(last.bias[rows])
    reader.layers[-1] = Dense(f"{last.name}+{node.name}", weight, bias)
    reader.width = int(rows.size)
    reader.bare_matmul = bare_matmul  # a MatMul's bias may still follow, now one per selected feature


def slice_arguments(reader: ChainReader, node: onnx.NodeProto) -> tuple[list[int], list[int], list[int], list[int]]:
    """(starts, ends, axes, steps): attributes before opset 10, constant inputs from it on."""
    if reader.opset < 10:
        starts, ends = list(attribute(node, "starts", [])), list(attribute(node, "ends", []))  # type: ignore[call-overload]
        axes = list(attribute(node, "axes", range(len(starts))))  # type: ignore[call-overload]
        return starts, ends, axes, [1] * len(starts)
    values: list[list[int]] = []
    for index in range(1, 5):
        name = node.input[index] if len(node.input) > index else ""
        if name and name not in reader.constants:
            raise UnsupportedOperatorError("Slice", node.name, f"input {index} is computed; it must be a constant")
        values.append([int(v) for v in np.asarray(reader.constants[name]).reshape(-1)] if name else [])
    starts, ends, axes, steps = values
    return starts, ends, axes or list(range(len(starts))), steps or [1] * len(starts)


HANDLERS: dict[str, Handler] = {
    "Gemm": _gemm,
    "MatMul": _matmul,
    "Add": _elementwise,
    "Sub": _elementwise,
    "Mul": _elementwise,
    "Div": _elementwise,
    "Relu": _activation("relu"),
    "Tanh": _activation("tanh"),
    "Sigmoid": _activation("sigmoid"),
    "Elu": _activation("elu", 1.0),
    "LeakyRelu": _activation("leaky_relu", 0.01),
    "Clip": _clip,
    "Slice": _slice,
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    **dict.fromkeys(_PASS_THROUGH, _pass_through),
}
