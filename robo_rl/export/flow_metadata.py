"""Metadata that lets firmware export rebuild a K-step flow sampler from chain-shaped parts.

The unrolled sampler in `policy.onnx` reads the observation at every Euler step, so its graph is not the chain of
layers `robo_rl.firmware_export` translates. `flow_metadata` therefore stores the sampler's parts next to it, each
part a small single-input ONNX chain (base64 of the serialized model), and the C generator loops over them:

- `robo_rl.flow.steps`: K.
- `robo_rl.flow.velocity`: the velocity MLP, `[features, x, t]` `(batch, obs_dim + action_dim + 1)` →
  `(batch, action_dim)` (Gemm and activations).
- `robo_rl.flow.obs_normalizer` (only when the policy normalizes observations): raw obs → features as
  Sub(mean), Div(std), Clip(±clip). It stays a separate chain because the clip cannot be folded into the
  velocity MLP's first layer exactly (and must not touch x or t).
- the start point: `robo_rl.flow.noise` (JSON list, the fixed noise in action units) or `robo_rl.flow.latent`: raw
  obs → start, the latent MLP's first action_dim outputs, Tanh, Mul(`robo_rl.flow.latent_scale`), then the action
  standardization, Mul(scale) and Sub(-mean), when the flow has one.
- `robo_rl.flow.action_center`, `robo_rl.flow.action_half_range` (JSON lists): action = center + half_range ×
  clamp(x, -1, 1), the sampler's own `ActionScaler` values.

Float32 values are written exactly (JSON numbers that parse back to the same float32). The graph that onnxruntime
and `robo_rl.real` run is not changed.
"""

from __future__ import annotations

import base64
import json
import logging
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from robo_rl.modules.flow import FlowSamplerParts
from robo_rl.modules.normalizer import EmpiricalNormalizer

if TYPE_CHECKING:
    import onnx

PREFIX = "robo_rl.flow."
OPSET = 18
_ACTIVATIONS = {nn.ReLU: "Relu", nn.Tanh: "Tanh", nn.ELU: "Elu", nn.LeakyReLU: "LeakyRelu"}

logger = logging.getLogger(__name__)


class UnsupportedFlowPart(ValueError):
    """A part of the sampler that has no chain form (a layer type other than Linear and the mlp activations)."""


def flow_metadata(actor: nn.Module) -> dict[str, str]:
    """`robo_rl.flow.*` metadata_props for an actor with `sampler_parts()` (flow samplers); {} for other actors.

    A flow actor with a part that has no chain form gets {} too (logged): its policy.onnx still runs everywhere
    except firmware export, which then stops on the unrolled graph as for any unsupported graph.
    """
    parts_of = getattr(actor, "sampler_parts", None)
    if not callable(parts_of):
        return {}
    try:
        return _props(parts_of())
    except UnsupportedFlowPart as error:
        logger.warning("no firmware metadata for this flow policy: %s", error)
        return {}


@torch.no_grad()
def _props(parts: FlowSamplerParts) -> dict[str, str]:
    action_dim = int(parts.center.numel())
    props = {
        "steps": str(parts.steps),
        "velocity": _encode(_chain(_mlp_nodes(parts.net), "velocity")),
        "action_center": _floats(parts.center),
        "action_half_range": _floats(parts.half_range),
    }
    normalizer = _normalizer_nodes(parts.normalizer)
    if normalizer:
        props["obs_normalizer"] = _encode(_chain(normalizer, "obs_normalizer"))
    if parts.latent is not None:
        nodes = _mlp_nodes(parts.latent, keep_outputs=action_dim)
        nodes += [("Tanh", {}, {}), ("Mul", {"c": torch.tensor(parts.latent_scale, dtype=torch.float32)}, {})]
        if parts.latent_gain is not None:  # into action units: the flow's action standardization
            nodes.append(("Mul", {"c": parts.latent_gain}, {}))
        if parts.latent_offset is not None:
            nodes.append(("Sub", {"c": -parts.latent_offset}, {}))
        props["latent"] = _encode(_chain(nodes, "latent"))
        props["latent_scale"] = repr(float(parts.latent_scale))
    elif parts.noise is not None:
        props["noise"] = _floats(parts.noise)
    else:
        raise UnsupportedFlowPart("the sampler has neither a fixed noise nor a latent actor")
    return {PREFIX + key: value for key, value in props.items()}


_Node = tuple[str, dict[str, torch.Tensor], dict[str, float]]
"""One node of a chain: its ONNX operator, its constant inputs by name (in input order) and its attributes."""


def _mlp_nodes(net: nn.Module, keep_outputs: int | None = None) -> list[_Node]:
    """Gemm/activation nodes of an `nn.Sequential`; `keep_outputs` keeps the last Linear's first rows only."""
    modules = list(net) if isinstance(net, nn.Sequential) else [net]
    linears = [m for m in modules if isinstance(m, nn.Linear)]
    nodes: list[_Node] = []
    for module in modules:
        if isinstance(module, nn.Linear):
            rows = keep_outputs if module is linears[-1] and keep_outputs is not None else module.out_features
            bias = module.bias if module.bias is not None else torch.zeros(module.out_features)
            nodes.append(("Gemm", {"weight": module.weight[:rows], "bias": bias[:rows]}, {}))
        elif type(module) in _ACTIVATIONS:
            alpha = getattr(module, "alpha", getattr(module, "negative_slope", None))
            nodes.append((_ACTIVATIONS[type(module)], {}, {} if alpha is None else {"alpha": float(alpha)}))
        elif not isinstance(module, nn.Identity):
            raise UnsupportedFlowPart(f"layer {type(module).__name__} has no chain form")
    return nodes


def _normalizer_nodes(normalizer: nn.Module) -> list[_Node]:
    """Sub, Div, Clip computing exactly `EmpiricalNormalizer.forward`; [] for the identity."""
    if isinstance(normalizer, nn.Identity):
        return []
    if type(normalizer) is not EmpiricalNormalizer:
        raise UnsupportedFlowPart(f"observation normalizer {type(normalizer).__name__} has no chain form")
    std = torch.sqrt(normalizer.var + normalizer.eps)  # the float32 tensor forward divides by
    clip = torch.tensor(normalizer.clip, dtype=torch.float32)
    return [("Sub", {"c": normalizer.mean}, {}), ("Div", {"c": std}, {}), ("Clip", {"low": -clip, "high": clip}, {})]


def _chain(nodes: list[_Node], name: str) -> onnx.ModelProto:
    """A single-input, single-output ONNX model `input (batch, in) → output (batch, out)` of `nodes` in order."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    graph_nodes, initializers, tail = [], [], "input"
    in_width = width = None
    for index, (op, constants, attributes) in enumerate(nodes):
        out = f"{op.lower()}_{index}"
        inputs = [tail]
        extra: dict[str, Any] = dict(attributes)
        if op == "Gemm":
            weight = constants["weight"]
            in_width = in_width if in_width is not None else int(weight.shape[1])
            width = int(weight.shape[0])
            extra = {"transB": 1}
        for key, value in constants.items():
            tensor_name = f"{out}_{key}"
            array = value.detach().to(torch.float32).cpu().numpy()
            initializers.append(numpy_helper.from_array(array, tensor_name))
            inputs.append(tensor_name)
            if op != "Gemm" and array.ndim == 1:
                in_width = in_width if in_width is not None else int(array.shape[0])
                width = int(array.shape[0])
        graph_nodes.append(helper.make_node(op, inputs, [out], name=out, **extra))
        tail = out
    if in_width is None or width is None:
        raise UnsupportedFlowPart(f"{name}: no layer fixes the feature width")
    graph_nodes.append(helper.make_node("Identity", [tail], ["output"], name="output"))
    graph = helper.make_graph(
        graph_nodes,
        name,
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", in_width])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", width])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="robo_rl")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _encode(model: onnx.ModelProto) -> str:
    return base64.b64encode(model.SerializeToString()).decode("ascii")


def _floats(values: torch.Tensor) -> str:
    """JSON list of float32 values; Python's repr of each float32 as a double parses back exactly."""
    return json.dumps([float(v) for v in values.detach().to(torch.float32).reshape(-1).cpu().tolist()])
