"""Read a policy ONNX file into a small layer IR that the C generator walks from input to output.

The IR is a chain: `obs (batch, obs_dim) → layer → layer → … → action (batch, action_dim)`. Every layer works on
one feature vector; constants are folded in while reading (initializers, `Constant` nodes, and any node whose
inputs are all constant). Supported operators: Gemm (transA=0), MatMul (+ Add, folded into the bias), Relu, Tanh,
Sigmoid, Elu, LeakyRelu, Clip (attributes or inputs, opset 6-18), Add/Sub/Mul/Div with a constant operand on
either side (scalar or one value per feature), Concat of the graph inputs (the C entry then takes them
concatenated in the Concat's order), Identity, Cast to float, Flatten/Reshape that keep `(batch, features)`, and a
Slice of a Dense layer's features (folded into its rows: SAC's actor computes mean and log-std in one layer and its
deterministic export slices out the mean). Anything else stops with `UnsupportedOperatorError` naming the operator
type and the node.

Only numpy and onnx are needed here (no torch, no onnxruntime).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeAlias

import numpy as np
import onnx
from onnx import numpy_helper

from robo_rl.actuator import MotorActuator
from robo_rl.artifact import PolicyArtifact

ActivationKind = Literal["relu", "tanh", "sigmoid", "elu", "leaky_relu"]
ElementwiseOp = Literal["add", "sub", "mul", "div"]


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


@dataclass(frozen=True, eq=False)
class Dense:
    """`y = weight @ x + bias` for one feature vector."""

    name: str
    """ONNX node name(s) the layer came from (Gemm, or MatMul+Add)."""
    weight: np.ndarray = field(repr=False)
    """(out_features, in_features) float32, row-major."""
    bias: np.ndarray = field(repr=False)
    """(out_features,) float32."""

    @property
    def in_features(self) -> int:
        return int(self.weight.shape[1])

    @property
    def out_features(self) -> int:
        return int(self.weight.shape[0])


@dataclass(frozen=True)
class Activation:
    """Pointwise nonlinearity. `alpha` is ELU's negative-side scale or LeakyRelu's slope (unused otherwise)."""

    name: str
    kind: ActivationKind
    alpha: float = 0.0


@dataclass(frozen=True)
class Clip:
    """`min(max(x, low), high)`; an infinite bound means no bound on that side."""

    name: str
    low: float
    high: float


@dataclass(frozen=True, eq=False)
class Elementwise:
    """`x op constant`, or `constant op x` when `constant_first` (matters for sub and div only)."""

    name: str
    op: ElementwiseOp
    constant: np.ndarray = field(repr=False)
    """() scalar or (features,) float32, broadcast over the feature axis."""
    constant_first: bool = False


Pointwise: TypeAlias = Activation | Clip | Elementwise
Layer: TypeAlias = Dense | Pointwise


@dataclass(frozen=True)
class PolicyInfo:
    """What the policy file says about its observation and action vectors, from the `robo_rl.*` metadata.

    Files without that metadata (e.g. from SB3 or Isaac Lab) get names `obs_0…`/`action_0…`, empty units and
    unbounded (±inf) bounds; `dt`, `task` and the provenance fields are then None.
    """

    obs_names: tuple[str, ...]
    obs_units: tuple[str, ...]
    obs_low: tuple[float, ...]
    obs_high: tuple[float, ...]
    action_names: tuple[str, ...]
    action_units: tuple[str, ...]
    action_low: tuple[float, ...]
    action_high: tuple[float, ...]
    dt: float | None
    """Control period (s)."""
    task: str | None
    version: str | None
    """robo_rl version that exported the file."""
    git_hash: str | None
    config_hash: str | None
    inputs: tuple[tuple[str, int], ...]
    """Graph inputs `(name, width)` in the order the C `obs` vector concatenates them."""
    output: str
    """Graph output name."""
    producer: str = ""
    """ONNX producer name and version."""
    action_chunk: int = 1
    """H, the actions the policy outputs at once (`robo_rl.action_chunk`); the action_* fields describe one step,
    and the output holds H of them, step after step."""
    actuator: MotorActuator | None = None
    """What the actions mean physically (`robo_rl.actuator`): a motor-level quadrotor's map onto the normalized
    motor command; None when the file does not say."""


@dataclass(frozen=True)
class PolicyIR:
    """A policy as a chain of layers on one feature vector: `obs (obs_dim,) → … → action (action_dim,)`."""

    layers: tuple[Layer, ...]
    obs_dim: int
    action_dim: int
    """Width of the output: `info.action_chunk` steps of `len(info.action_names)` actions each."""
    info: PolicyInfo

    @property
    def widths(self) -> tuple[int, ...]:
        """Feature width after each layer, starting with the input: `len(layers) + 1` entries."""
        widths = [self.obs_dim]
        for layer in self.layers:
            widths.append(layer.out_features if isinstance(layer, Dense) else widths[-1])
        return tuple(widths)

    @property
    def dense_layers(self) -> tuple[Dense, ...]:
        return tuple(layer for layer in self.layers if isinstance(layer, Dense))


def load_policy(source: str | Path | onnx.ModelProto) -> PolicyIR:
    """Read `source` (a path or a loaded ModelProto) into a PolicyIR.

    Raises UnsupportedOperatorError for a node that cannot be translated (naming op type and node) and
    UnsupportedGraphError when inputs/outputs do not have the `(batch, features)` float form.
    """
    model = source if isinstance(source, onnx.ModelProto) else onnx.load(str(source))
    graph = model.graph
    reader = _GraphReader(graph, _default_opset(model))
    layers = reader.read()
    inputs = reader.input_segments
    obs_dim = sum(width for _, width in inputs)
    action_dim = reader.width
    props = {p.key: p.value for p in model.metadata_props}
    producer = f"{model.producer_name} {model.producer_version}".strip()
    info = _policy_info(props, obs_dim, action_dim, inputs, reader.output, producer)
    return PolicyIR(layers=tuple(layers), obs_dim=obs_dim, action_dim=action_dim, info=info)


def evaluate(ir: PolicyIR, obs: np.ndarray) -> np.ndarray:
    """Numpy float32 forward pass of the IR: obs `(n, obs_dim)` or `(obs_dim,)` → actions of matching rank."""
    x = np.asarray(obs, dtype=np.float32)
    single = x.ndim == 1
    x = np.atleast_2d(x)
    if x.shape[1] != ir.obs_dim:
        raise ValueError(f"obs has {x.shape[1]} features, the policy expects {ir.obs_dim}")
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for layer in ir.layers:
            x = apply_layer(layer, x)
    return x[0] if single else x


def apply_layer(layer: Layer, x: np.ndarray) -> np.ndarray:
    """One layer on `x` `(n, in_features)` float32 → `(n, out_features)` float32."""
    if isinstance(layer, Dense):
        return (x @ layer.weight.T + layer.bias).astype(np.float32)
    return apply_pointwise(layer, x)


def apply_pointwise(layer: Pointwise, x: np.ndarray) -> np.ndarray:
    """An Activation, Clip or Elementwise layer on `x` `(n, features)` float32."""
    if isinstance(layer, Activation):
        return _ACTIVATIONS[layer.kind](x, np.float32(layer.alpha)).astype(np.float32)
    if isinstance(layer, Clip):
        return np.minimum(np.maximum(x, np.float32(layer.low)), np.float32(layer.high))
    c = layer.constant
    a, b = (c, x) if layer.constant_first else (x, c)
    return _ELEMENTWISE[layer.op](a, b).astype(np.float32)


_ACTIVATIONS: dict[str, Callable[[np.ndarray, np.float32], np.ndarray]] = {
    "relu": lambda x, _: np.maximum(x, np.float32(0)),
    "tanh": lambda x, _: np.tanh(x),
    "sigmoid": lambda x, _: np.float32(1) / (np.float32(1) + np.exp(-x)),
    "elu": lambda x, alpha: np.where(x > 0, x, alpha * np.expm1(x)),
    "leaky_relu": lambda x, alpha: np.where(x >= 0, x, alpha * x),
}
_ELEMENTWISE: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
}
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
)


def _default_opset(model: onnx.ModelProto) -> int:
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return int(entry.version)
    raise UnsupportedGraphError("the model imports no default-domain (ai.onnx) opset")


class _GraphReader:
    """Walks the nodes once, folding constants and turning the observation's chain of nodes into layers."""

    def __init__(self, graph: onnx.GraphProto, opset: int) -> None:
        self.graph = graph
        self.opset = opset
        self.constants: dict[str, np.ndarray] = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
        self.graph_inputs = _graph_inputs(graph, self.constants)
        self.input_segments: tuple[tuple[str, int], ...] = tuple(self.graph_inputs.items())
        self.tail: str | None = next(iter(self.graph_inputs)) if len(self.graph_inputs) == 1 else None
        self.width = next(iter(self.graph_inputs.values())) if len(self.graph_inputs) == 1 else 0
        self.consumed: set[str] = set()
        self.layers: list[Layer] = []
        self.bare_matmul = False  # the last layer is a MatMul whose bias a following Add may supply
        self.output = ""

    def read(self) -> list[Layer]:
        for node in self.graph.node:
            if all(not name or name in self.constants for name in node.input):
                self._fold(node)
            else:
                self._translate(node)
        self._check_output()
        return self.layers

    def _fold(self, node: onnx.NodeProto) -> None:
        """Evaluate a node whose inputs are all constant (Constant nodes included) with onnx's reference runtime."""
        from onnx.reference import ReferenceEvaluator

        feeds = {name: self.constants[name] for name in node.input if name}
        try:
            results = ReferenceEvaluator(node, opsets={"": self.opset}).run(None, feeds)
        except Exception as error:
            raise UnsupportedOperatorError(node.op_type, node.name, f"cannot fold constant node: {error}") from error
        for name, value in zip(node.output, results, strict=False):
            self.constants[name] = np.asarray(value)

    def _translate(self, node: onnx.NodeProto) -> None:
        if node.op_type == "Concat":
            self._concat(node)
            return
        handler = _HANDLERS.get(node.op_type)
        if handler is None:
            raise UnsupportedOperatorError(node.op_type, node.name)
        self._check_chain(node)
        bare_before = self.bare_matmul
        self.bare_matmul = False
        handler(self, node, bare_before)
        self.consumed.add(node.input[self._dynamic_index(node)])
        self.tail = node.output[0]

    def _dynamic_index(self, node: onnx.NodeProto) -> int:
        return next(i for i, name in enumerate(node.input) if name and name not in self.constants)

    def _check_chain(self, node: onnx.NodeProto) -> None:
        dynamic = [name for name in node.input if name and name not in self.constants]
        if self.tail is None:
            raise UnsupportedOperatorError(
                node.op_type,
                node.name,
                f"the graph has {len(self.graph_inputs)} inputs; they must first be joined by one Concat",
            )
        if len(dynamic) > 1:
            raise UnsupportedOperatorError(
                node.op_type,
                node.name,
                "more than one operand is computed from the observation; the other operands must be constants",
            )
        if dynamic[0] != self.tail:
            what = "an earlier tensor" if dynamic[0] in self.consumed else "a tensor no earlier node produced"
            raise UnsupportedOperatorError(
                node.op_type,
                node.name,
                f"reads '{dynamic[0]}', {what}; only a single chain of layers (no branches) is supported",
            )
        if len(node.output) != 1:
            raise UnsupportedOperatorError(node.op_type, node.name, "nodes with several outputs are not supported")

    def _concat(self, node: onnx.NodeProto) -> None:
        names = list(node.input)
        axis = _attr(node, "axis", None)
        if axis not in (1, -1):
            raise UnsupportedOperatorError("Concat", node.name, f"axis={axis}; only the feature axis (1) is supported")
        if self.tail is not None or sorted(names) != sorted(self.graph_inputs) or len(set(names)) != len(names):
            raise UnsupportedOperatorError(
                "Concat", node.name, "only a Concat of all graph inputs, each once, before any other node is supported"
            )
        self.input_segments = tuple((name, self.graph_inputs[name]) for name in names)
        self.width = sum(self.graph_inputs.values())
        self.consumed.update(names)
        self.tail = node.output[0]

    def _check_output(self) -> None:
        outputs = [o.name for o in self.graph.output]
        if len(outputs) != 1:
            raise UnsupportedGraphError(f"the graph has {len(outputs)} outputs {outputs}; exactly one is supported")
        if outputs[0] != self.tail:
            raise UnsupportedGraphError(
                f"the graph output '{outputs[0]}' is not the end of the chain of layers from the input"
            )
        self.output = outputs[0]

    def constant(self, node: onnx.NodeProto) -> np.ndarray:
        """The node's one constant operand."""
        return next(self.constants[name] for name in node.input if name in self.constants)

    def add_layer(self, layer: Layer, width: int | None = None) -> None:
        self.layers.append(layer)
        if width is not None:
            self.width = width


def _graph_inputs(graph: onnx.GraphProto, constants: dict[str, np.ndarray]) -> dict[str, int]:
    """Non-constant graph inputs → feature width, checking the `(batch, features)` float form."""
    inputs: dict[str, int] = {}
    for value in graph.input:
        if value.name in constants:
            continue  # old exporters list initializers among the inputs
        tensor = value.type.tensor_type
        if tensor.elem_type != onnx.TensorProto.FLOAT:
            kind = onnx.TensorProto.DataType.Name(tensor.elem_type)
            raise UnsupportedGraphError(f"input '{value.name}' has element type {kind}; only float32 is supported")
        dims = tensor.shape.dim
        if len(dims) != 2 or not dims[1].HasField("dim_value"):
            raise UnsupportedGraphError(
                f"input '{value.name}' must have shape (batch, features) with a fixed feature count"
            )
        inputs[value.name] = int(dims[1].dim_value)
    if not inputs:
        raise UnsupportedGraphError("the graph has no non-constant input")
    return inputs


def _attr(node: onnx.NodeProto, name: str, default: object) -> object:
    for attribute in node.attribute:
        if attribute.name == name:
            return onnx.helper.get_attribute_value(attribute)
    return default


def _feature_vector(reader: _GraphReader, node: onnx.NodeProto, value: np.ndarray) -> np.ndarray:
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


def _gemm(reader: _GraphReader, node: onnx.NodeProto, _bare: bool) -> None:
    if node.input[0] != reader.tail or len(node.input) < 2 or node.input[1] not in reader.constants:
        raise UnsupportedOperatorError("Gemm", node.name, "only input @ constant weight (+ constant bias) is supported")
    if _attr(node, "transA", 0):
        raise UnsupportedOperatorError("Gemm", node.name, "transA=1 is not supported")
    weight = np.asarray(reader.constants[node.input[1]], dtype=np.float32)
    weight = weight if _attr(node, "transB", 0) else weight.T
    alpha, beta = float(_attr(node, "alpha", 1.0)), float(_attr(node, "beta", 1.0))
    bias = np.zeros(weight.shape[0], np.float32)
    if len(node.input) > 2 and node.input[2]:
        if node.input[2] not in reader.constants:
            raise UnsupportedOperatorError("Gemm", node.name, "the bias C must be a constant")
        given = np.asarray(reader.constants[node.input[2]], np.float32).reshape(-1)
        if given.size not in (1, bias.size):
            raise UnsupportedOperatorError("Gemm", node.name, f"bias of {given.size} values for {bias.size} outputs")
        bias = np.broadcast_to(given, bias.shape)
    _dense(reader, node, weight * np.float32(alpha) if alpha != 1.0 else weight, bias * np.float32(beta))


def _matmul(reader: _GraphReader, node: onnx.NodeProto, _bare: bool) -> None:
    if node.input[0] != reader.tail or node.input[1] not in reader.constants:
        raise UnsupportedOperatorError("MatMul", node.name, "only input @ constant weight is supported")
    weight = np.asarray(reader.constants[node.input[1]], dtype=np.float32)
    if weight.ndim != 2:
        raise UnsupportedOperatorError("MatMul", node.name, f"weight of shape {weight.shape}; only 2-D is supported")
    _dense(reader, node, weight.T, np.zeros(weight.shape[1], np.float32))
    reader.bare_matmul = True


def _dense(reader: _GraphReader, node: onnx.NodeProto, weight: np.ndarray, bias: np.ndarray) -> None:
    if weight.ndim != 2 or weight.shape[1] != reader.width:
        raise UnsupportedOperatorError(
            node.op_type, node.name, f"weight of shape {weight.shape} does not take {reader.width} input features"
        )
    layer = Dense(node.name, np.ascontiguousarray(weight, np.float32), np.ascontiguousarray(bias, np.float32))
    reader.add_layer(layer, width=layer.out_features)


def _elementwise(reader: _GraphReader, node: onnx.NodeProto, bare_matmul: bool) -> None:
    op = node.op_type.lower()
    constant = _feature_vector(reader, node, reader.constant(node))
    constant_first = node.input[0] in reader.constants
    last = reader.layers[-1] if reader.layers else None
    if op == "add" and bare_matmul and isinstance(last, Dense):
        bias = np.broadcast_to(constant, last.bias.shape).astype(np.float32)
        reader.layers[-1] = Dense(f"{last.name}+{node.name}", last.weight, np.ascontiguousarray(bias))
        return
    reader.add_layer(Elementwise(node.name, op, constant, constant_first and op in ("sub", "div")))  # type: ignore[arg-type]


_Handler: TypeAlias = Callable[["_GraphReader", onnx.NodeProto, bool], None]


def _activation(kind: ActivationKind, default_alpha: float = 0.0) -> _Handler:
    def handler(reader: _GraphReader, node: onnx.NodeProto, _bare: bool) -> None:
        reader.add_layer(Activation(node.name, kind, float(_attr(node, "alpha", default_alpha))))  # type: ignore[arg-type]

    return handler


def _clip(reader: _GraphReader, node: onnx.NodeProto, _bare: bool) -> None:
    if reader.opset < 11:
        low = float(_attr(node, "min", -math.inf))
        high = float(_attr(node, "max", math.inf))
    else:
        low, high = (_clip_bound(reader, node, i, default) for i, default in ((1, -math.inf), (2, math.inf)))
    reader.add_layer(Clip(node.name, low, high))


def _clip_bound(reader: _GraphReader, node: onnx.NodeProto, index: int, default: float) -> float:
    if len(node.input) <= index or not node.input[index]:
        return default
    value = np.asarray(reader.constants[node.input[index]])
    if value.size != 1:
        raise UnsupportedOperatorError("Clip", node.name, f"bound of shape {value.shape}; Clip bounds are scalars")
    return float(value.reshape(()))


def _pass_through(reader: _GraphReader, node: onnx.NodeProto, bare_matmul: bool) -> None:
    """Identity, Cast to float, Flatten/Reshape that keep (batch, features): no layer."""
    if node.op_type == "Cast" and _attr(node, "to", None) != onnx.TensorProto.FLOAT:
        raise UnsupportedOperatorError("Cast", node.name, "only a cast to float32 is supported")
    if node.op_type == "Flatten" and _attr(node, "axis", 1) not in (1, -1):
        raise UnsupportedOperatorError("Flatten", node.name, "only axis=1 keeps (batch, features)")
    if node.op_type == "Reshape":
        _check_reshape(reader, node)
    reader.bare_matmul = bare_matmul


def _check_reshape(reader: _GraphReader, node: onnx.NodeProto) -> None:
    shape = [int(v) for v in np.asarray(reader.constants.get(node.input[1], np.zeros(0))).reshape(-1)]
    keeps = len(shape) == 2 and (shape[1] == reader.width or (shape[1] == -1 and shape[0] in (0, 1)))
    if node.input[1] not in reader.constants or not keeps:
        raise UnsupportedOperatorError(
            "Reshape", node.name, f"shape {shape} does not keep (batch, {reader.width}); only such reshapes work"
        )


def _slice(reader: _GraphReader, node: onnx.NodeProto, bare_matmul: bool) -> None:
    """A Slice of the features straight after a Dense layer: the Dense keeps only the selected rows (no layer)."""
    last = reader.layers[-1] if reader.layers else None
    if not isinstance(last, Dense) or reader.width != last.out_features:
        raise UnsupportedOperatorError("Slice", node.name, "only a Slice of a Dense layer's outputs is supported")
    starts, ends, axes, steps = _slice_arguments(reader, node)
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


def _slice_arguments(reader: _GraphReader, node: onnx.NodeProto) -> tuple[list[int], list[int], list[int], list[int]]:
    """(starts, ends, axes, steps): attributes before opset 10, constant inputs from it on."""
    if reader.opset < 10:
        starts, ends = list(_attr(node, "starts", [])), list(_attr(node, "ends", []))  # type: ignore[call-overload]
        axes = list(_attr(node, "axes", range(len(starts))))  # type: ignore[call-overload]
        return starts, ends, axes, [1] * len(starts)
    values: list[list[int]] = []
    for index in range(1, 5):
        name = node.input[index] if len(node.input) > index else ""
        if name and name not in reader.constants:
            raise UnsupportedOperatorError("Slice", node.name, f"input {index} is computed; it must be a constant")
        values.append([int(v) for v in np.asarray(reader.constants[name]).reshape(-1)] if name else [])
    starts, ends, axes, steps = values
    return starts, ends, axes or list(range(len(starts))), steps or [1] * len(starts)


_HANDLERS: dict[str, _Handler] = {
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
    **dict.fromkeys(_PASS_THROUGH, _pass_through),
}


def _policy_info(
    props: dict[str, str],
    obs_dim: int,
    action_dim: int,
    inputs: tuple[tuple[str, int], ...],
    output: str,
    producer: str,
) -> PolicyInfo:
    """PolicyInfo from the policy artifact's metadata (`robo_rl.artifact`), with defaults for what is missing."""
    artifact = PolicyArtifact.from_foreign(props, obs_dim, action_dim)  # action_dim: the output's width
    obs, action = artifact.obs, artifact.action
    return PolicyInfo(
        obs_names=obs.names,
        obs_units=obs.units,
        obs_low=obs.low,
        obs_high=obs.high,
        action_names=action.names,
        action_units=action.units,
        action_low=action.low,
        action_high=action.high,
        dt=artifact.dt,
        task=artifact.task,
        version=artifact.version,
        git_hash=artifact.git_hash,
        config_hash=artifact.config_hash,
        inputs=inputs,
        output=output,
        producer=producer,
        action_chunk=artifact.action_chunk,
        actuator=artifact.actuator,
    )
