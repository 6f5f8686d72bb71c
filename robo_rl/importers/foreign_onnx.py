"""An ONNX policy exported by rsl_rl, Isaac Lab or mjlab (its observation normalizer inside, its action scaling
outside) as a robo_rl policy artifact, without torch.

The imported graph is the original one between two folds of elementwise constants:
`obs → (obs − offset) × gain → [original graph] → clipped to ±clip_actions (the runner's, when set) → offset +
scale × raw → clipped to the action bounds → action`,
so the file takes what a robot publishes (absolute joint angles, the last command sent) and outputs joint targets
(`robo_rl.importers.terms`). Only the ops the firmware export reads are added (Sub, Mul, Add, Div, a scalar Clip),
so the C export keeps working when the original graph is an MLP. What the source does not say (control period,
names, bounds, term widths) must be supplied; `MissingInfoError` names the flag.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import robo_rl
from robo_rl.artifact import PREFIX, PolicyArtifact
from robo_rl.importers.sources import (
    LAST_ACTION,
    Description,
    clip_actions_assumption,
    from_isaaclab,
    from_mjlab,
    is_mjlab,
    read_clip_actions,
    read_env_config,
)
from robo_rl.importers.supplied import (
    MissingInfoError,
    Supplied,
    action_spec,
    box_center_half,
    gather,
    listed,
    obs_spec,
    relative_difference,
)
from robo_rl.importers.terms import Entry, entries, term_sizes
from robo_rl.spaces import SpaceSpec

OBS_INPUT, ACTION_OUTPUT = "obs", "action"
"""The names robo_rl's own exports use (`robo_rl.export.onnx`)."""


@dataclass(frozen=True)
class ImportedOnnx:
    """The result of an import: the artifact written, the observation entries (with the draft profile's sources)
    and the description it was built from."""

    artifact: PolicyArtifact
    entries: tuple[Entry, ...]
    description: Description
    model: onnx.ModelProto


def _widths(model: onnx.ModelProto, path: Path) -> tuple[int, int]:
    graph = model.graph
    initializers = {i.name for i in graph.initializer}
    inputs = [i for i in graph.input if i.name not in initializers]
    if len(inputs) != 1 or len(graph.output) != 1:
        raise MissingInfoError(
            f"{path}: {len(inputs)} inputs and {len(graph.output)} outputs; only a feed-forward "
            "policy (one observation input, one action output) can be imported (a recurrent "
            "policy's hidden state has no place in the artifact)"
        )
    return _last_dim(inputs[0], path), _last_dim(graph.output[0], path)


def _last_dim(value: onnx.ValueInfoProto, path: Path) -> int:
    dims = value.type.tensor_type.shape.dim
    if len(dims) != 2 or not dims[1].dim_value:
        raise MissingInfoError(f"{path}: {value.name!r} is not a (batch, features) tensor with a known width")
    return int(dims[1].dim_value)


def describe(model: onnx.ModelProto, path: Path, supplied: Supplied, env_config: Path | None) -> Description:
    """What the file (mjlab metadata) or the run's env config (Isaac Lab, with agent.yaml's clip_actions beside
    it) says; a plain description otherwise. The assumptions name what the import took for granted."""
    props = {p.key: p.value for p in model.metadata_props}
    _, action_size = _widths(model, path)
    if env_config is not None:
        config = read_env_config(env_config)
        description = from_isaaclab(config, supplied, str(env_config), read_clip_actions(env_config))
    elif is_mjlab(props):
        description = from_mjlab(props, action_size)
    else:
        assumption = clip_actions_assumption(None, "a plain ONNX file does not record it")
        return Description("onnx", None, assumptions=(assumption,))
    if description.action is not None and any(kind == "last_action" for _, kind, _ in description.terms or ()):
        description = replace(description, assumptions=(*description.assumptions, LAST_ACTION))
    return description


def observation_entries(
    description: Description, obs_size: int, action_size: int, supplied: Supplied, obs_sizes: Mapping[str, int]
) -> tuple[Entry, ...]:
    """The observation vector entry by entry: from the terms when known, else from the supplied names."""
    if description.terms is None:
        names = supplied.obs_names
        if not names:
            raise MissingInfoError(
                f"the policy's {obs_size} observations are not described: supply --obs-names "
                "(and --obs-units), or the run's --env-config (Isaac Lab), or an mjlab ONNX"
            )
        names = listed(names, obs_size, "--obs-names", "the observation")
        units = listed(supplied.obs_units, obs_size, "--obs-units", "the observation", ("",))
        return tuple(Entry(n, u, f"state.{n}") for n, u in zip(names, units, strict=True))
    terms = term_sizes(description.terms, description.joints, action_size, obs_sizes)
    total = sum(t.size for t in terms)
    if total != obs_size:
        widths = ", ".join(f"{t.name}={t.size}" for t in terms)
        raise MissingInfoError(
            f"the observation terms add up to {total} entries ({widths}), the policy takes "
            f"{obs_size}: supply the right widths with --obs-sizes TERM=N"
        )
    return entries(terms, description.joints, description.action)


def import_onnx(
    path: Path,
    out: Path,
    supplied: Supplied,
    env_config: Path | None = None,
    obs_sizes: Mapping[str, int] | None = None,
) -> ImportedOnnx:
    """Write `out`, a robo_rl policy artifact, from a foreign ONNX policy (and its run's env config)."""
    from robo_rl.export.onnx import save_checked

    model = _load(path)
    obs_size, action_size = _widths(model, path)
    description = describe(model, path, supplied, env_config)
    files = [path, *([env_config] if env_config else [])]
    found, meta = _artifact(description, obs_size, action_size, supplied, obs_sizes or {}, files)
    composed = compose(model, found, description, meta)
    save_checked(composed, out)
    return ImportedOnnx(meta, found, description, composed)


def _load(path: Path) -> onnx.ModelProto:
    try:
        return onnx.load(str(path))
    except Exception as err:  # protobuf's decode errors share no public class
        raise MissingInfoError(f"{path}: not an ONNX model ({str(err).splitlines()[0][:120]})") from None


def _artifact(
    description: Description,
    obs_size: int,
    action_size: int,
    supplied: Supplied,
    obs_sizes: Mapping[str, int],
    files: list[Path],
) -> tuple[tuple[Entry, ...], PolicyArtifact]:
    """The observation entries and the artifact's metadata; everything still missing is named in one error."""
    joint = description.action
    names = joint.names if joint is not None and len(joint.joints) == action_size else None
    units = ("rad",) if names else None
    low, high = description.bounds if description.bounds else (None, None)

    def observations() -> tuple[tuple[Entry, ...], SpaceSpec]:
        found = observation_entries(description, obs_size, action_size, supplied, obs_sizes)
        return found, obs_spec(supplied, len(found), [e.name for e in found], units=[e.unit for e in found])

    (found, obs), action, dt = gather(
        observations,
        lambda: action_spec(supplied, action_size, names, low, high, units),
        lambda: supplied.control_period(description.dt, f"the {description.label} policy"),
    )
    last_action = LAST_ACTION if LAST_ACTION in description.assumptions else None
    origin = {
        "imported": {
            "from": description.source,
            "files": {p.name: hashlib.sha256(p.read_bytes()).hexdigest()[:16] for p in files},
            "assumptions": list(description.assumptions),
            "clip_actions": description.clip_actions,
            "last_action": last_action,
        }
    }
    text = json.dumps(origin, sort_keys=True, separators=(",", ":"))
    return found, PolicyArtifact(
        obs=obs,
        action=action,
        dt=dt,
        task=supplied.task or f"imported/{description.source}",
        config_hash=hashlib.sha256(text.encode()).hexdigest()[:16],
        version=robo_rl.__version__,
        task_config=text,
    )


def compose(
    model: onnx.ModelProto, found: Sequence[Entry], description: Description, meta: PolicyArtifact
) -> onnx.ModelProto:
    """The original graph between the input fold and the output fold, with robo_rl's input/output names and the
    artifact's metadata (the source's own metadata is kept beside it)."""
    graph = model.graph
    original_in, original_out = _widths_names(graph)
    renamed = {original_in: "source_obs", original_out: "source_action"}
    nodes = [_renamed(node, renamed) for node in graph.node]
    pre, pre_init, fed = _input_fold(found)
    post, post_init, out_name = _output_fold(description, meta)
    nodes = pre + ([helper.make_node("Identity", [fed], ["source_obs"])] if fed != "source_obs" else []) + nodes + post
    in_value = _value(OBS_INPUT, graph.input[0])
    out_value = _value(ACTION_OUTPUT, graph.output[0])
    nodes.append(helper.make_node("Identity", [out_name], [ACTION_OUTPUT]))
    initializers = list(graph.initializer) + pre_init + post_init
    new_graph = helper.make_graph(nodes, "robo_rl_imported_policy", [in_value], [out_value], initializers)
    composed = helper.make_model(new_graph, opset_imports=list(model.opset_import), ir_version=model.ir_version)
    composed.producer_name, composed.producer_version = "robo_rl import", robo_rl.__version__
    kept = {p.key: p.value for p in model.metadata_props if not p.key.startswith(PREFIX)}
    helper.set_model_props(composed, {**kept, **meta.to_props()})
    return composed


def _widths_names(graph: onnx.GraphProto) -> tuple[str, str]:
    initializers = {i.name for i in graph.initializer}
    inputs = [i.name for i in graph.input if i.name not in initializers]
    return inputs[0], graph.output[0].name


def _renamed(node: onnx.NodeProto, names: Mapping[str, str]) -> onnx.NodeProto:
    copy = onnx.NodeProto()
    copy.CopyFrom(node)
    for i, name in enumerate(copy.input):
        copy.input[i] = names.get(name, name)
    for i, name in enumerate(copy.output):
        copy.output[i] = names.get(name, name)
    return copy


def _value(name: str, like: onnx.ValueInfoProto) -> onnx.ValueInfoProto:
    dims = like.type.tensor_type.shape.dim
    shape = [d.dim_param or d.dim_value or "batch" for d in dims]
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _constant(name: str, values: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(values, dtype=np.float32).reshape(1, -1), name)


def _input_fold(found: Sequence[Entry]) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto], str]:
    offset = np.array([e.offset for e in found])
    gain = np.array([e.gain for e in found])
    nodes, init, current = [], [], OBS_INPUT
    if np.any(offset != 0):
        init.append(_constant("import_obs_offset", offset))
        nodes.append(helper.make_node("Sub", [current, "import_obs_offset"], ["import_obs_centered"]))
        current = "import_obs_centered"
    if np.any(gain != 1):
        init.append(_constant("import_obs_gain", gain))
        nodes.append(helper.make_node("Mul", [current, "import_obs_gain"], ["import_obs_scaled"]))
        current = "import_obs_scaled"
    return nodes, init, current


def _output_fold(
    description: Description, meta: PolicyArtifact
) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto], str]:
    nodes, init, current = [], [], "source_action"
    if description.clip_actions is not None:
        init += [
            numpy_helper.from_array(np.array(-description.clip_actions, dtype=np.float32), "import_raw_low"),
            numpy_helper.from_array(np.array(description.clip_actions, dtype=np.float32), "import_raw_high"),
        ]
        nodes.append(helper.make_node("Clip", [current, "import_raw_low", "import_raw_high"], ["import_raw_clipped"]))
        current = "import_raw_clipped"
    joint = description.action
    if joint is not None and len(joint.joints) == meta.action.dim:
        init += [_constant("import_action_scale", joint.scale), _constant("import_action_offset", joint.offset)]
        nodes.append(helper.make_node("Mul", [current, "import_action_scale"], ["import_action_scaled"]))
        nodes.append(helper.make_node("Add", ["import_action_scaled", "import_action_offset"], ["import_target"]))
        current = "import_target"
    center, half = box_center_half(meta.action.low, meta.action.high)
    init += [
        _constant("import_action_center", center),
        _constant("import_action_half", half),
        numpy_helper.from_array(np.array(-1.0, dtype=np.float32), "import_minus_one"),
        numpy_helper.from_array(np.array(1.0, dtype=np.float32), "import_one"),
    ]
    nodes += [
        helper.make_node("Sub", [current, "import_action_center"], ["import_box_centered"]),
        helper.make_node("Div", ["import_box_centered", "import_action_half"], ["import_box_unit"]),
        helper.make_node("Clip", ["import_box_unit", "import_minus_one", "import_one"], ["import_box_clipped"]),
        helper.make_node("Mul", ["import_box_clipped", "import_action_half"], ["import_box_rescaled"]),
        helper.make_node("Add", ["import_box_rescaled", "import_action_center"], ["import_action_bounded"]),
    ]
    return nodes, init, "import_action_bounded"


def reference_actions(source: Path, imported: ImportedOnnx, obs: np.ndarray) -> np.ndarray:
    """What the source stack's deployment computes for robot observations `obs`: the original file on the folded
    input, then its joint-action mapping and the bounds, in numpy (float64)."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(source), providers=["CPUExecutionProvider"])
    offset = np.array([e.offset for e in imported.entries])
    gain = np.array([e.gain for e in imported.entries])
    feed = session.get_inputs()[0].name
    rows = [session.run(None, {feed: ((row - offset) * gain).astype(np.float32)[None]})[0][0] for row in obs]
    raw = np.asarray(rows, dtype=np.float64)
    if imported.description.clip_actions is not None:
        raw = np.clip(raw, -imported.description.clip_actions, imported.description.clip_actions)
    joint = imported.description.action
    if joint is not None and len(joint.joints) == raw.shape[1]:
        raw = joint.offset + joint.scale * raw
    return np.clip(raw, imported.artifact.action.low, imported.artifact.action.high)


def parity(source: Path, imported: ImportedOnnx, out: Path, obs: np.ndarray) -> float:
    """Max |imported file − reference_actions| over the rows of `obs` (one row at a time: rsl_rl files have a
    fixed batch of 1), as a fraction of each action's half-width."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    got = np.asarray([session.run(None, {OBS_INPUT: row.astype(np.float32)[None]})[0][0] for row in obs])
    box = imported.artifact.action
    return relative_difference(got, reference_actions(source, imported, obs), box.low, box.high)


def sample_obs(imported: ImportedOnnx, count: int, seed: int = 0) -> np.ndarray:
    """Robot observations to check parity on: around each entry's offset, ±2 of the policy's units."""
    rng = np.random.default_rng(seed)
    offset = np.array([e.offset for e in imported.entries])
    gain = np.maximum(np.abs([e.gain for e in imported.entries]), 1e-6)
    return (offset + rng.uniform(-2.0, 2.0, size=(count, len(offset))) / gain).astype(np.float32)
