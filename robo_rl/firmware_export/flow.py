"""Flow-matching policies (K Euler steps) → C: the sampler rebuilt from the chain-shaped parts in the metadata.

The unrolled sampler graph of a flow policy reads the observation at every step, so it is not a chain of layers
(`ir.load_policy` refuses it). robo_rl's exporter stores the sampler's parts as small ONNX chains in the metadata
(`robo_rl.export.flow_metadata`: `robo_rl.flow.velocity`, optional `obs_normalizer`, `latent` or `noise`,
`action_center`/`action_half_range`, `steps`). Each chain is generated with the ordinary code generator under its
own prefix (`{prefix}_velocity`, `{prefix}_obs_normalizer`, `{prefix}_latent`), made `static`, and joined with a
sampler into one source whose entry keeps the contract of `codegen` (`int {prefix}_policy(const float *obs, float
*action)`, `{PREFIX}_OK` / `{PREFIX}_ERR_NONFINITE` with nothing written, the same header defines):

    features = normalizer(obs)            (or obs)
    x = latent(obs)                       (= latent_scale * tanh(u); or the fixed noise)
    for k in 0 .. K-1: x = x + velocity([features, x, k / K]) / K
    action = center + half_range * clamp(x, -1, 1)

in the same float operations, in the same order, as torch's `ExportableFlowSampler`. An intermediate that becomes
non-finite also returns `{PREFIX}_ERR_NONFINITE` without writing `action`. Only float32 weights (no int8).
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

from robo_rl.firmware_export.c_text import float_literal
from robo_rl.firmware_export.codegen import CSources, generate_c
from robo_rl.firmware_export.evaluate import evaluate
from robo_rl.firmware_export.ir import Activation, Dense, Elementwise, Layer, PolicyIR
from robo_rl.firmware_export.onnx_ops import UnsupportedGraphError
from robo_rl.firmware_export.onnx_reader import load_policy, policy_info

KEY = "robo_rl.flow."
VELOCITY_KEY = KEY + "velocity"


@dataclass(frozen=True)
class FlowIR:
    """A flow sampler's parts, each a chain PolicyIR, and `summary`: the policy's dims and metadata (no layers)."""

    summary: PolicyIR
    steps: int
    velocity: PolicyIR
    """`[features, x, t]` `(obs_dim + action_dim + 1,)` → velocity `(action_dim,)`."""
    normalizer: PolicyIR | None
    """Raw obs → features `(obs_dim,)`; None: features are the raw obs."""
    latent: PolicyIR | None
    """Raw obs → start noise `(action_dim,)`; None: `noise`."""
    noise: np.ndarray | None
    """`(action_dim,)` float32 fixed start noise."""
    center: np.ndarray
    """`(action_dim,)` float32."""
    half_range: np.ndarray
    """`(action_dim,)` float32."""

    @property
    def obs_dim(self) -> int:
        return self.summary.obs_dim

    @property
    def action_dim(self) -> int:
        return self.summary.action_dim

    def describe(self) -> tuple[str, ...]:
        """Short descriptions of the parts, e.g. ("flow 10 steps", "velocity: dense 27→64, relu, ...")."""
        parts = [f"flow {self.steps} Euler steps", f"velocity: {_layers(self.velocity)}"]
        if self.normalizer is not None:
            parts.append(f"obs normalizer: {_layers(self.normalizer)}")
        parts.append(f"latent noise: {_layers(self.latent)}" if self.latent is not None else "fixed noise")
        return (*parts, "clip [-1, 1], scale to action bounds")


def is_flow_policy(source: str | Path | onnx.ModelProto) -> bool:
    """Whether the policy file carries the flow sampler's parts (`robo_rl.flow.velocity`)."""
    return VELOCITY_KEY in _props(_model(source))


def load_flow_policy(source: str | Path | onnx.ModelProto) -> FlowIR:
    """The flow sampler's parts from a robo_rl policy.onnx; ValueError when they are missing or inconsistent."""
    model = _model(source)
    props = _props(model)
    if VELOCITY_KEY not in props:
        raise UnsupportedGraphError(f"no {VELOCITY_KEY} metadata: not a robo_rl flow policy")
    center, half_range = _floats(props, "action_center"), _floats(props, "action_half_range")
    action_dim = center.size
    velocity = _part(props, "velocity")
    obs_dim = velocity.obs_dim - action_dim - 1
    normalizer = _part(props, "obs_normalizer") if KEY + "obs_normalizer" in props else None
    latent = _part(props, "latent") if KEY + "latent" in props else None
    noise = _floats(props, "noise") if latent is None else None
    steps = int(props.get(KEY + "steps", "0"))
    inputs, output = _graph_io(model)
    summary = PolicyIR(
        layers=(),
        obs_dim=obs_dim,
        action_dim=action_dim,
        info=policy_info(
            props, obs_dim, action_dim, inputs, output, f"{model.producer_name} {model.producer_version}".strip()
        ),
    )
    flow = FlowIR(summary, steps, velocity, normalizer, latent, noise, center, half_range)
    _check(flow, sum(width for _, width in inputs))
    return flow


def evaluate_flow(flow: FlowIR, obs: np.ndarray) -> np.ndarray:
    """Numpy float32 forward pass of the sampler: obs `(n, obs_dim)` → actions `(n, action_dim)`."""
    obs = np.atleast_2d(np.asarray(obs, np.float32))
    features = evaluate(flow.normalizer, obs) if flow.normalizer is not None else obs
    if flow.latent is not None:
        x = evaluate(flow.latent, obs)
    else:
        assert flow.noise is not None  # a sampler without a latent network starts from its fixed noise
        x = np.broadcast_to(flow.noise, (len(obs), flow.action_dim))
    steps = np.float32(flow.steps)
    for k in range(flow.steps):
        t = np.full((len(obs), 1), np.float32(k) / steps, np.float32)
        x = x + evaluate(flow.velocity, np.concatenate([features, x, t], axis=1)) / steps
    return flow.center + flow.half_range * np.clip(x, np.float32(-1), np.float32(1))


def generate_flow_c(flow: FlowIR, prefix: str = "robo_rl") -> CSources:
    """One header and one source `{prefix}_policy.{h,c}` running the sampler (see the module docstring)."""
    parts = {"velocity": flow.velocity, "obs_normalizer": flow.normalizer, "latent": flow.latent}
    units = {name: generate_c(ir, prefix=f"{prefix}_{name}") for name, ir in parts.items() if ir is not None}
    outer = generate_c(flow.summary, prefix=prefix)  # for its header: dims, names, bounds, provenance
    network = f"flow sampler, {flow.steps} Euler steps; " + "; ".join(flow.describe()[1:])
    header = re.sub(r"^ \* Network: .*$", f" * Network: {network}.", outer.header, count=1, flags=re.MULTILINE)
    source = "\n".join(
        [
            f"/* {outer.source_name}: flow-matching policy generated by robo_rl.firmware_export (float32 weights"
            " and activations).",
            "   Do not edit; regenerate from the ONNX file instead. */",
            f'#include "{outer.header_name}"',
            "",
            "#include <float.h>",
            "#include <math.h>",
            "",
            *(_static_unit(unit, name) for name, unit in units.items()),
            _sampler(flow, prefix),
        ]
    )
    return CSources(prefix, outer.header_name, header, outer.source_name, source)


def _static_unit(unit: CSources, part: str) -> str:
    """A generated unit's header and source as one block whose entry `{prefix}_policy` is static."""
    entry = f"int {unit.prefix}_policy(const float *obs, float *action)"
    header = unit.header.replace(f"{entry};", f"static {entry};")
    source = unit.source.replace(f'#include "{unit.header_name}"\n', "").replace(f"{entry}\n{{", f"static {entry}\n{{")
    if f"static {entry};" not in header or f"static {entry}\n{{" not in source:
        raise RuntimeError(f"unexpected generated code for the flow's {part}")
    return f"/* ---------------- {part}: {unit.prefix}_policy ---------------- */\n{header}\n{source}"


def _sampler(flow: FlowIR, prefix: str) -> str:
    p, u = prefix, prefix.upper()
    obs, act = flow.obs_dim, flow.action_dim
    constants = [
        _array(f"{p}_flow_center", flow.center),
        _array(f"{p}_flow_half_range", flow.half_range),
        *([_array(f"{p}_flow_noise", flow.noise)] if flow.noise is not None else []),
        f"/* [features, x, t]: the velocity field's input; x is the sampler's state. */\n"
        f"static float {p}_flow_input[{obs + act + 1}];\n"
        f"static float {p}_flow_velocity[{act}];\n",
    ]
    if flow.normalizer is not None:
        features = f"    if ({p}_obs_normalizer_policy(obs, in) != {u}_OBS_NORMALIZER_OK) return {u}_ERR_NONFINITE;\n"
    else:
        features = f"    for (int i = 0; i < {obs}; ++i) in[i] = obs[i];\n"
    if flow.latent is not None:
        start = f"    if ({p}_latent_policy(obs, x) != {u}_LATENT_OK) return {u}_ERR_NONFINITE;\n"
    else:
        start = f"    for (int i = 0; i < {act}; ++i) x[i] = {p}_flow_noise[i];\n"
    steps = float_literal(flow.steps)
    entry = (
        f"int {p}_policy(const float *obs, float *action)\n"
        "{\n"
        f"    float *const in = {p}_flow_input, *const x = {p}_flow_input + {obs}, *const v = {p}_flow_velocity;\n"
        "    /* Check every input before writing anything: !(x within +-FLT_MAX) holds for NaN and +-inf. */\n"
        f"    for (int i = 0; i < {u}_OBS_DIM; ++i) {{\n"
        "        if (!(obs[i] >= -FLT_MAX && obs[i] <= FLT_MAX)) {\n"
        f"            return {u}_ERR_NONFINITE;\n"
        "        }\n"
        "    }\n"
        f"{features}{start}"
        f"    for (int k = 0; k < {flow.steps}; ++k) {{ /* Euler steps as torch: x = x + v / K, t = k / K */\n"
        f"        in[{obs + act}] = (float)k / {steps};\n"
        f"        if ({p}_velocity_policy(in, v) != {u}_VELOCITY_OK) return {u}_ERR_NONFINITE;\n"
        f"        for (int i = 0; i < {act}; ++i) x[i] = x[i] + v[i] / {steps};\n"
        "    }\n"
        f"    for (int i = 0; i < {act}; ++i) {{ /* center + half_range * clamp(x, -1, 1) */\n"
        "        float c = x[i];\n"
        "        if (c < -1.0f) c = -1.0f;\n"
        "        if (c > 1.0f) c = 1.0f;\n"
        f"        action[i] = {p}_flow_center[i] + {p}_flow_half_range[i] * c;\n"
        "    }\n"
        f"    return {u}_OK;\n"
        "}\n"
    )
    return f"/* ---------------- the sampler ---------------- */\n{''.join(constants)}\n{entry}"


def _array(name: str, values: np.ndarray) -> str:
    literals = ", ".join(float_literal(float(v)) for v in np.asarray(values, np.float32).reshape(-1))
    return f"static const float {name}[{np.asarray(values).size}] = {{{literals}}};\n"


def _layers(ir: PolicyIR) -> str:
    def one(layer: Layer) -> str:
        if isinstance(layer, Dense):
            return f"dense {layer.in_features}→{layer.out_features}"
        return layer.kind if isinstance(layer, Activation) else layer.op if isinstance(layer, Elementwise) else "clip"

    return ", ".join(one(layer) for layer in ir.layers)


def _model(source: str | Path | onnx.ModelProto) -> onnx.ModelProto:
    return source if isinstance(source, onnx.ModelProto) else onnx.load(str(source))


def _props(model: onnx.ModelProto) -> dict[str, str]:
    return {p.key: p.value for p in model.metadata_props}


def _part(props: dict[str, str], name: str) -> PolicyIR:
    try:
        model = onnx.load_from_string(base64.b64decode(props[KEY + name]))
    except Exception as error:
        raise ValueError(f"metadata {KEY}{name}: not a base64 ONNX model ({error})") from error
    return load_policy(model)


def _floats(props: dict[str, str], name: str) -> np.ndarray:
    key = KEY + name
    if key not in props:
        raise ValueError(f"flow policy without {key} metadata")
    values = json.loads(props[key])
    if not isinstance(values, list) or not values:
        raise ValueError(f"metadata {key}: expected a non-empty JSON list")
    return np.asarray(values, np.float32)


def _graph_io(model: onnx.ModelProto) -> tuple[tuple[tuple[str, int], ...], str]:
    inputs = []
    initializers = {t.name for t in model.graph.initializer}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        dims = value.type.tensor_type.shape.dim
        inputs.append((value.name, int(dims[-1].dim_value) if dims else 0))
    return tuple(inputs), model.graph.output[0].name if model.graph.output else "action"


def _check(flow: FlowIR, graph_obs_dim: int) -> None:
    obs, act = flow.obs_dim, flow.action_dim
    problems = []
    if flow.steps < 1:
        problems.append(f"steps = {flow.steps}")
    if obs < 1 or graph_obs_dim != obs:
        problems.append(f"velocity input {flow.velocity.obs_dim} != obs {graph_obs_dim} + action {act} + 1")
    if flow.velocity.action_dim != act or flow.half_range.size != act:
        problems.append(f"velocity / half range widths {flow.velocity.action_dim}, {flow.half_range.size} != {act}")
    if flow.normalizer is not None and (flow.normalizer.obs_dim, flow.normalizer.action_dim) != (obs, obs):
        problems.append(f"normalizer {flow.normalizer.obs_dim} → {flow.normalizer.action_dim}, expected {obs}")
    if flow.latent is not None and (flow.latent.obs_dim, flow.latent.action_dim) != (obs, act):
        problems.append(f"latent {flow.latent.obs_dim} → {flow.latent.action_dim}, expected {obs} → {act}")
    if flow.noise is not None and flow.noise.size != act:
        problems.append(f"noise of {flow.noise.size} values for {act} actions")
    if problems:
        raise ValueError("inconsistent robo_rl.flow metadata: " + "; ".join(problems))
