"""The layer IR of a policy: a chain of Dense / Activation / Clip / Elementwise layers and at most one stateful
`Gru` layer on one feature vector, with what the file says about its observation and action vectors.

`onnx_reader.load_policy` reads an ONNX file into it, `evaluate` runs it in numpy, `codegen` writes it as C.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

import numpy as np

from robo_rl.actuator import Actuator
from robo_rl.memory_spec import MemorySpec

ActivationKind = Literal["relu", "tanh", "sigmoid", "elu", "leaky_relu"]
ElementwiseOp = Literal["add", "sub", "mul", "div"]


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
    actuator: Actuator | None = None
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
