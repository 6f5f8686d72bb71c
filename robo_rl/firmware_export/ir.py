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

A policy with memory (`robo_rl.memory` in the metadata, `robo_rl.memory_spec.MemorySpec` of kind "gru") has a
second graph input `h_in` `(batch, H)` and a second output `h_out`: one `Gru` layer in the chain (an ONNX GRU node,
one direction, one step, `linear_before_reset=1`, the default Sigmoid/Tanh activations, as torch's exporter writes
`nn.GRU`) takes its initial state from `h_in` (through the Unsqueeze and Slice of the exporter's pattern), and its
new state, squeezed back to `(batch, H)`, is both `h_out` and the input of the layers after it. `evaluate_step`
runs such a chain one step (`(obs, h_in) -> (action, h_out)`), `evaluate_episode` a whole stream with resets. A
`history` memory, an LSTM/RNN/Scan/Loop, or a GRU of another form stops with `UnsupportedGraphError`.

Only numpy and onnx are needed here (no torch, no onnxruntime).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeAlias

import numpy as np
import onnx
from onnx import numpy_helper

from robo_rl.actuator import MotorActuator
from robo_rl.artifact import MEMORY_KEY, PolicyArtifact
from robo_rl.memory_spec import MemorySpec

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


@dataclass(frozen=True, eq=False)
class Gru:
    """One step of a GRU layer with state `h` `(hidden_size,)`, as the ONNX GRU operator defines it with
    `linear_before_reset=1` (torch's `nn.GRU`); gate rows in ONNX's order z (update), r (reset), h (candidate):

        z = sigmoid(W_z x + Wb_z + R_z h + Rb_z)
        r = sigmoid(W_r x + Wb_r + R_r h + Rb_r)
        n = tanh(W_h x + Wb_h + r * (R_h h + Rb_h))
        h' = (1 - z) * n + z * h

    The layer's output is h', which is also the next state (`h_out`)."""

    name: str
    input_weight: np.ndarray = field(repr=False)
    """W: (3 * hidden_size, in_features) float32, rows z, r, h."""
    state_weight: np.ndarray = field(repr=False)
    """R: (3 * hidden_size, hidden_size) float32, rows z, r, h."""
    input_bias: np.ndarray = field(repr=False)
    """Wb: (3 * hidden_size,) float32."""
    state_bias: np.ndarray = field(repr=False)
    """Rb: (3 * hidden_size,) float32."""

    @property
    def in_features(self) -> int:
        return int(self.input_weight.shape[1])

    @property
    def hidden_size(self) -> int:
        return int(self.state_weight.shape[1])

    @property
    def out_features(self) -> int:
        return self.hidden_size

    @property
    def parameter_count(self) -> int:
        return sum(int(a.size) for a in (self.input_weight, self.state_weight, self.input_bias, self.state_bias))


Pointwise: TypeAlias = Activation | Clip | Elementwise
Layer: TypeAlias = Dense | Pointwise | Gru


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
    memory: MemorySpec | None = None
    """The state the policy carries between steps (`robo_rl.memory`: graph input `h_in`, output `h_out`, size,
    reset value and rule); None for a policy without memory. Not part of `inputs`/`output`."""


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
            widths.append(layer.out_features if isinstance(layer, Dense | Gru) else widths[-1])
        return tuple(widths)

    @property
    def dense_layers(self) -> tuple[Dense, ...]:
        return tuple(layer for layer in self.layers if isinstance(layer, Dense))

    @property
    def gru(self) -> Gru | None:
        """The stateful layer, or None for a policy without memory."""
        return next((layer for layer in self.layers if isinstance(layer, Gru)), None)

    @property
    def state_size(self) -> int:
        """Entries of the state carried between steps (`h_in`/`h_out`); 0 without memory."""
        gru = self.gru
        return 0 if gru is None else gru.hidden_size

    @property
    def parameter_count(self) -> int:
        """Weights and biases of the Dense and Gru layers (the normalizer and action scaling not counted)."""
        dense = sum(int(layer.weight.size + layer.bias.size) for layer in self.dense_layers)
        return dense + sum(layer.parameter_count for layer in self.layers if isinstance(layer, Gru))


def load_policy(source: str | Path | onnx.ModelProto) -> PolicyIR:
    """Read `source` (a path or a loaded ModelProto) into a PolicyIR.

    Raises UnsupportedOperatorError for a node that cannot be translated (naming op type and node) and
    UnsupportedGraphError when inputs/outputs do not have the `(batch, features)` float form.
    """
    model = source if isinstance(source, onnx.ModelProto) else onnx.load(str(source))
    graph = model.graph
    props = {p.key: p.value for p in model.metadata_props}
    memory = _declared_memory(props)
    reader = _GraphReader(graph, _default_opset(model), memory)
    layers = reader.read()
    inputs = reader.input_segments
    obs_dim = sum(width for _, width in inputs)
    action_dim = reader.width
    producer = f"{model.producer_name} {model.producer_version}".strip()
    info = _policy_info(props, obs_dim, action_dim, inputs, reader.output, producer)
    return PolicyIR(layers=tuple(layers), obs_dim=obs_dim, action_dim=action_dim, info=info)


def evaluate(ir: PolicyIR, obs: np.ndarray) -> np.ndarray:
    """Numpy float32 forward pass of the IR: obs `(n, obs_dim)` or `(obs_dim,)` → actions of matching rank.
    A policy with memory needs its state: `evaluate_step` (ValueError here)."""
    if ir.state_size:
        raise ValueError("the policy has memory (a GRU state): run it with evaluate_step(ir, obs, h_in)")
    action, _ = _forward(ir, obs, None)
    return action


def evaluate_step(ir: PolicyIR, obs: np.ndarray, h_in: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One step of a policy with memory: obs `(n, obs_dim)` and state `h_in` `(n, state_size)` (or one row each)
    → (action `(n, action_dim)`, next state `h_out` `(n, state_size)`), float32, of matching rank."""
    if not ir.state_size:
        raise ValueError("the policy has no memory: run it with evaluate(ir, obs)")
    state = np.atleast_2d(np.asarray(h_in, dtype=np.float32))
    if state.shape[1] != ir.state_size:
        raise ValueError(f"h_in has {state.shape[1]} entries, the policy's state has {ir.state_size}")
    action, h_out = _forward(ir, obs, state)
    assert h_out is not None
    return action, h_out if np.ndim(obs) > 1 else h_out[0]


def evaluate_episode(ir: PolicyIR, obs: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A policy with memory over a stream of steps, as the deploy side runs it: obs `(T, obs_dim)`, `starts`
    `(T,)` bool (an episode begins at that step; step 0 always does). The state is set to the memory's reset value
    at each start and carried from `h_out` otherwise. Returns (actions `(T, action_dim)`, states `(T,
    state_size)`: each step's `h_out`)."""
    obs = np.asarray(obs, dtype=np.float32)
    starts = np.asarray(starts, dtype=bool).reshape(-1)
    if obs.ndim != 2 or len(starts) != len(obs):
        raise ValueError(f"obs {obs.shape} and starts {starts.shape} must be (T, obs_dim) and (T,)")
    reset = np.full((1, ir.state_size), _reset_value(ir), np.float32)
    h, actions, states = reset, [], []
    for t in range(len(obs)):
        h = reset if starts[t] or t == 0 else h
        action, h = evaluate_step(ir, obs[t : t + 1], h)
        actions.append(action[0])
        states.append(h[0])
    return np.stack(actions), np.stack(states)


def _reset_value(ir: PolicyIR) -> float:
    return ir.info.memory.reset_value if ir.info.memory is not None else 0.0


def _forward(ir: PolicyIR, obs: np.ndarray, state: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
    x = np.asarray(obs, dtype=np.float32)
    single = x.ndim == 1
    x = np.atleast_2d(x)
    if x.shape[1] != ir.obs_dim:
        raise ValueError(f"obs has {x.shape[1]} features, the policy expects {ir.obs_dim}")
    if state is not None and len(state) != len(x):
        raise ValueError(f"{len(x)} observations but {len(state)} states")
    h_out = None
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for layer in ir.layers:
            if isinstance(layer, Gru):
                assert state is not None
                x = h_out = gru_step(layer, x, state)
            else:
                x = apply_layer(layer, x)
    return (x[0] if single else x), h_out


def apply_layer(layer: Dense | Pointwise, x: np.ndarray) -> np.ndarray:
    """One stateless layer on `x` `(n, in_features)` float32 → `(n, out_features)` float32."""
    if isinstance(layer, Dense):
        return (x @ layer.weight.T + layer.bias).astype(np.float32)
    return apply_pointwise(layer, x)


def gru_step(layer: Gru, x: np.ndarray, h: np.ndarray) -> np.ndarray:
    """The GRU's next state `(n, hidden_size)` float32 for inputs `x` `(n, in_features)` and states `h`."""
    size = layer.hidden_size
    gates_x = x @ layer.input_weight.T + layer.input_bias
    gates_h = h @ layer.state_weight.T + layer.state_bias
    sigmoid = _ACTIVATIONS["sigmoid"]
    z = sigmoid(gates_x[:, :size] + gates_h[:, :size], np.float32(0))
    r = sigmoid(gates_x[:, size : 2 * size] + gates_h[:, size : 2 * size], np.float32(0))
    n = np.tanh(gates_x[:, 2 * size :] + r * gates_h[:, 2 * size :])
    return ((np.float32(1) - z) * n + z * h).astype(np.float32)


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


def _default_opset(model: onnx.ModelProto) -> int:
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return int(entry.version)
    raise UnsupportedGraphError("the model imports no default-domain (ai.onnx) opset")


class _GraphReader:
    """Walks the nodes once, folding constants and turning the observation's chain of nodes into layers."""

    def __init__(self, graph: onnx.GraphProto, opset: int, memory: MemorySpec | None = None) -> None:
        self.graph = graph
        self.opset = opset
        self.memory = memory
        _check_recurrence(graph, memory)
        self.constants: dict[str, np.ndarray] = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
        self.graph_inputs = _graph_inputs(graph, self.constants)
        state_input = _take_state_input(self.graph_inputs, memory)
        self.input_segments: tuple[tuple[str, int], ...] = tuple(self.graph_inputs.items())
        self.tail: str | None = next(iter(self.graph_inputs)) if len(self.graph_inputs) == 1 else None
        self.width = next(iter(self.graph_inputs.values())) if len(self.graph_inputs) == 1 else 0
        self.consumed: set[str] = set()
        self.layers: list[Layer] = []
        self.bare_matmul = False  # the last layer is a MatMul whose bias a following Add may supply
        self.output = ""
        self.sequence = False  # the chain value has the GRU's (1, batch, features) form
        self.state_tensors: dict[str, bool] = {state_input: False} if state_input else {}
        """Tensors holding the incoming state on its way to the GRU → whether in the (1, batch, H) form."""
        self.gru_state = ""  # the GRU's Y_h output
        self.new_state: set[str] = set()  # tensors equal to the GRU's new state in the (batch, H) form
        self.read_names = {name for node in graph.node for name in node.input} | {o.name for o in graph.output}

    def read(self) -> list[Layer]:
        for node in self.graph.node:
            if all(not name or name in self.constants for name in node.input):
                self._fold(node)
            elif node.op_type != "GRU" and any(name in self.state_tensors for name in node.input):
                self._state_node(node)
            else:
                self._translate(node)
        if self.memory is not None and not self.gru_state:
            raise UnsupportedGraphError(
                f"the metadata declares a GRU memory of size {self.memory.size}, but no GRU node reads the state "
                f"input '{self.memory.input}'"
            )
        self._check_output()
        return self.layers

    def _state_node(self, node: onnx.NodeProto) -> None:
        """A node on the state's way from `h_in` to the GRU's initial state: Unsqueeze to (1, batch, H), a Slice
        of layer 0 along axis 0, Identity. Anything else reading the state is refused."""
        source = next(name for name in node.input if name in self.state_tensors)
        dynamic = [name for name in node.input if name and name not in self.constants]
        if node.op_type not in STATE_OPS or len(dynamic) != 1 or len(node.output) != 1:
            raise UnsupportedGraphError(
                f"{node.op_type} node '{node.name}' reads the policy's state '{source}': the state may only reach "
                f"one GRU's initial state (through {', '.join(STATE_OPS)}); no other recurrent form is supported"
            )
        sequence = self.state_tensors[source]
        if node.op_type == "Unsqueeze":
            if sequence or _unsqueeze_axes(self, node) != [0]:
                raise UnsupportedGraphError(f"Unsqueeze node '{node.name}': the state is unsqueezed on axis 0 only")
            sequence = True
        elif node.op_type == "Slice":
            starts, ends, axes, steps = _slice_arguments(self, node)
            if not sequence or starts != [0] or axes not in ([0], [-3]) or steps != [1] or ends[0] < 1:
                raise UnsupportedGraphError(
                    f"Slice node '{node.name}' of the state: only all of axis 0 (one layer) is supported"
                )
        self.state_tensors[node.output[0]] = sequence

    def _gru(self, node: onnx.NodeProto) -> None:
        """The GRU node: the chain's (1, batch, in) value and the state from `h_in` → a Gru layer; its Y_h output
        (1, batch, H) becomes the chain's value."""
        x, w, r, b, lengths, h0 = [*node.input, "", "", "", "", ""][:6]
        if self.gru_state:
            raise UnsupportedGraphError(f"GRU node '{node.name}': a second GRU; one GRU layer is supported")
        if x != self.tail or not self.sequence:
            raise UnsupportedGraphError(
                f"GRU node '{node.name}': its input X must be the chain's value unsqueezed on axis 0 to "
                "(1, batch, features), a sequence of one step"
            )
        if not self.state_tensors.get(h0, False):
            raise UnsupportedGraphError(
                f"GRU node '{node.name}': its initial state must be the graph input "
                f"'{self.memory.input if self.memory else 'h_in'}' unsqueezed to (1, batch, H)"
            )
        if any(name not in self.constants for name in (w, r)) or (b and b not in self.constants) or lengths:
            raise UnsupportedGraphError(
                f"GRU node '{node.name}': W, R and B must be constants and sequence_lens absent (one step)"
            )
        _check_gru_attributes(node)
        outputs = [*node.output, "", ""][:2]
        if outputs[0] and outputs[0] in self.read_names:
            raise UnsupportedGraphError(
                f"GRU node '{node.name}': its output Y is read; only its final state Y_h is supported"
            )
        if not outputs[1]:
            raise UnsupportedGraphError(f"GRU node '{node.name}': its final state Y_h must be the policy's h_out")
        layer = _gru_layer(node, self, w, r, b)
        self.add_layer(layer, width=layer.hidden_size)
        self.consumed.update((x, h0))
        self.tail = self.gru_state = outputs[1]
        self.bare_matmul = False

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
        if node.op_type == "GRU":
            self._gru(node)
            return
        if self.sequence and node.op_type not in SEQUENCE_OPS:
            raise UnsupportedOperatorError(
                node.op_type, node.name, "on the (1, batch, features) form only a GRU, Squeeze or Identity is supported"
            )
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
        source = node.input[self._dynamic_index(node)]
        self.consumed.add(source)
        if source in self.new_state and node.op_type == "Identity":
            self.new_state.add(node.output[0])
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
        if self.memory is not None:
            if self.memory.output not in self.new_state:
                raise UnsupportedGraphError(
                    f"the graph output '{self.memory.output}' must be the GRU's new state squeezed to (batch, H)"
                )
            outputs = [name for name in outputs if name != self.memory.output]
        if self.sequence:
            raise UnsupportedGraphError("the chain of layers ends in the (1, batch, features) form of a GRU")
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


def _declared_memory(props: dict[str, str]) -> MemorySpec | None:
    """The memory the metadata declares (`robo_rl.memory`), None without it."""
    text = props.get(MEMORY_KEY)
    if text is None:
        return None
    try:
        return MemorySpec.from_dict(json.loads(text))
    except ValueError as error:
        raise UnsupportedGraphError(f"metadata {MEMORY_KEY!r}: {error}") from None


def _check_recurrence(graph: onnx.GraphProto, memory: MemorySpec | None) -> None:
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


def _take_state_input(inputs: dict[str, int], memory: MemorySpec | None) -> str:
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


def _check_gru_attributes(node: onnx.NodeProto) -> None:
    """UnsupportedGraphError unless the GRU is one forward direction, layout 0, linear_before_reset non-zero
    (torch's form: 1), with the default Sigmoid/Tanh activations and no clip."""
    direction = _attr(node, "direction", b"forward")
    direction = direction.decode() if isinstance(direction, bytes) else direction
    activations = [a.decode() if isinstance(a, bytes) else a for a in _attr(node, "activations", [])]  # type: ignore[attr-defined]
    problems = [
        *([f"direction {direction!r} (only 'forward')"] if direction != "forward" else []),
        *([f"layout {_attr(node, 'layout', 0)} (only 0)"] if _attr(node, "layout", 0) != 0 else []),
        *(["linear_before_reset=0 (only non-zero, torch's GRU)"] if not _attr(node, "linear_before_reset", 0) else []),
        *([f"activations {activations} (only Sigmoid, Tanh)"] if activations not in ([], ["Sigmoid", "Tanh"]) else []),
        *(["clip"] if _attr(node, "clip", None) is not None else []),
    ]
    if problems:
        raise UnsupportedGraphError(f"GRU node '{node.name}': {'; '.join(problems)} is not supported")


def _gru_layer(node: onnx.NodeProto, reader: _GraphReader, w: str, r: str, b: str) -> Gru:
    """The Gru layer of a GRU node's constants W (1, 3H, in), R (1, 3H, H), B (1, 6H), checked against the
    chain's width, `hidden_size` and the metadata's memory size."""
    weight = np.asarray(reader.constants[w], np.float32)
    recurrence = np.asarray(reader.constants[r], np.float32)
    size = int(_attr(node, "hidden_size", recurrence.shape[-1]))  # type: ignore[call-overload]
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


def _unsqueeze_axes(reader: _GraphReader, node: onnx.NodeProto) -> list[int]:
    """Unsqueeze/Squeeze axes: an attribute before opset 13, a constant input from it on ([] when absent)."""
    if reader.opset < 13:
        return list(_attr(node, "axes", []))  # type: ignore[call-overload]
    if len(node.input) < 2 or not node.input[1]:
        return []
    if node.input[1] not in reader.constants:
        raise UnsupportedOperatorError(node.op_type, node.name, "the axes are computed; they must be a constant")
    return [int(v) for v in np.asarray(reader.constants[node.input[1]]).reshape(-1)]


def _unsqueeze(reader: _GraphReader, node: onnx.NodeProto, _bare: bool) -> None:
    """The chain's (batch, features) value unsqueezed on axis 0 to (1, batch, features): a GRU's input (no layer)."""
    if reader.sequence or _unsqueeze_axes(reader, node) != [0]:
        raise UnsupportedOperatorError("Unsqueeze", node.name, "only axis 0 before a GRU is supported")
    reader.sequence = True


def _squeeze(reader: _GraphReader, node: onnx.NodeProto, _bare: bool) -> None:
    """The GRU's (1, batch, H) final state squeezed on axis 0 back to (batch, H) (no layer)."""
    if not reader.sequence or _unsqueeze_axes(reader, node) not in ([0], [-3]):
        raise UnsupportedOperatorError("Squeeze", node.name, "only axis 0 of a GRU's final state is supported")
    if node.input[0] == reader.gru_state:
        reader.new_state.add(node.output[0])
    reader.sequence = False


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
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
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
        memory=artifact.memory,
    )
