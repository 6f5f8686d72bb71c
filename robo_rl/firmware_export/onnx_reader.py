"""Read a policy ONNX file into the layer IR (`ir`) that the C generator walks from input to output.

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
new state, squeezed back to `(batch, H)`, is both `h_out` and the input of the layers after it (`onnx_memory`). A
`history` memory, an LSTM/RNN/Scan/Loop, or a GRU of another form stops with `UnsupportedGraphError`. The operator
handlers are in `onnx_ops`.

Only numpy and onnx are needed here (no torch, no onnxruntime).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from robo_rl.artifact import PolicyArtifact
from robo_rl.firmware_export.ir import Layer, PolicyInfo, PolicyIR
from robo_rl.firmware_export.onnx_memory import (
    check_gru_attributes,
    check_recurrence,
    declared_memory,
    gru_layer,
    take_state_input,
)
from robo_rl.firmware_export.onnx_ops import (
    HANDLERS,
    SEQUENCE_OPS,
    STATE_OPS,
    UnsupportedGraphError,
    UnsupportedOperatorError,
    attribute,
    slice_arguments,
    unsqueeze_axes,
)
from robo_rl.memory_spec import MemorySpec


def load_policy(source: str | Path | onnx.ModelProto) -> PolicyIR:
    """Read `source` (a path or a loaded ModelProto) into a PolicyIR.

    Raises UnsupportedOperatorError for a node that cannot be translated (naming op type and node) and
    UnsupportedGraphError when inputs/outputs do not have the `(batch, features)` float form.
    """
    model = source if isinstance(source, onnx.ModelProto) else onnx.load(str(source))
    graph = model.graph
    props = {p.key: p.value for p in model.metadata_props}
    memory = declared_memory(props)
    reader = _GraphReader(graph, _default_opset(model), memory)
    layers = reader.read()
    inputs = reader.input_segments
    obs_dim = sum(width for _, width in inputs)
    action_dim = reader.width
    producer = f"{model.producer_name} {model.producer_version}".strip()
    info = policy_info(props, obs_dim, action_dim, inputs, reader.output, producer)
    return PolicyIR(layers=tuple(layers), obs_dim=obs_dim, action_dim=action_dim, info=info)


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
        check_recurrence(graph, memory)
        self.constants: dict[str, np.ndarray] = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
        self.graph_inputs = _graph_inputs(graph, self.constants)
        state_input = take_state_input(self.graph_inputs, memory)
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
            if sequence or unsqueeze_axes(self, node) != [0]:
                raise UnsupportedGraphError(f"Unsqueeze node '{node.name}': the state is unsqueezed on axis 0 only")
            sequence = True
        elif node.op_type == "Slice":
            starts, ends, axes, steps = slice_arguments(self, node)
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
        check_gru_attributes(node)
        outputs = [*node.output, "", ""][:2]
        if outputs[0] and outputs[0] in self.read_names:
            raise UnsupportedGraphError(
                f"GRU node '{node.name}': its output Y is read; only its final state Y_h is supported"
            )
        if not outputs[1]:
            raise UnsupportedGraphError(f"GRU node '{node.name}': its final state Y_h must be the policy's h_out")
        layer = gru_layer(node, self, w, r, b)
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
        handler = HANDLERS.get(node.op_type)
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
        axis = attribute(node, "axis", None)
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


def policy_info(
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
