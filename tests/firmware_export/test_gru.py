"""C export of a policy with a GRU memory: the IR reads the ONNX GRU pattern robo_rl's exporter writes (and hand-built
ones), the numpy evaluator and the generated C (host gcc, and Cortex-M4 in QEMU) carry the state `h_in -> h_out`
over 200-step episodes with resets in between and compute what onnxruntime computes, and every other recurrent
form is refused.

The references are not ours: onnxruntime (Microsoft's implementation of the ONNX GRU operator) and the GRU
equations of the ONNX operator specification (onnx/docs/Operators.md, GRU, `linear_before_reset != 0`, gate
order z, r, h), computed by hand in float64 in `_spec_gru_step`."""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from robo_rl.cli.main import main as cli_main
from robo_rl.export.onnx import PolicyMetadata, export_onnx
from robo_rl.firmware_export.build import HostRecurrentPolicy, build_host, build_host_recurrent
from robo_rl.firmware_export.codegen import generate_c
from robo_rl.firmware_export.evaluate import evaluate, evaluate_episode, evaluate_step
from robo_rl.firmware_export.ir import Dense, Gru, PolicyIR
from robo_rl.firmware_export.onnx_ops import UnsupportedGraphError
from robo_rl.firmware_export.onnx_reader import load_policy
from robo_rl.firmware_export.qemu import missing_tools, run_in_qemu
from robo_rl.firmware_export.quantize import quantize
from robo_rl.firmware_export.report import PARITY_TOLERANCE
from robo_rl.firmware_export.targets import export_target
from robo_rl.memory_spec import MemorySpec
from robo_rl.modules.actor_critic import PolicyConfig
from robo_rl.modules.normalizer import EmpiricalNormalizer
from robo_rl.modules.recurrent import GruCore, RecurrentActorCritic
from robo_rl.spaces import SpaceSpec

OBS, ACT = 5, 3
EPISODE = 200
"""Steps per episode of the parity streams (issue 47: parity over 200-step episodes with resets in between)."""
CONFIGS = {
    "dense_gru_dense": PolicyConfig(actor_hidden=(16,), memory="gru", memory_size=8),
    "gru_first": PolicyConfig(actor_hidden=(), memory="gru", memory_size=6),
}
needs_qemu = pytest.mark.skipif(
    bool(missing_tools()), reason=f"QEMU check needs {', '.join(missing_tools())} (install with `make system-deps`)"
)


# ------------------------------------------------------------------------------------------------ policies


def _gru(policy: RecurrentActorCritic) -> torch.nn.GRU:
    assert isinstance(policy.core, GruCore)
    return policy.core.gru


def _normalizer(policy: RecurrentActorCritic) -> EmpiricalNormalizer:
    assert isinstance(policy.obs_normalizer, EmpiricalNormalizer)
    return policy.obs_normalizer


def export_gru_policy(path: Path, cfg: PolicyConfig, seed: int = 0) -> Path:
    """A RecurrentActorCritic's deterministic actor exported by robo_rl's exporter: a trained-looking head and
    normalizer statistics (the init's 0.01 output gain would hide errors), actions scaled into [-2, 1]."""
    torch.manual_seed(seed)
    policy = RecurrentActorCritic(OBS, torch.tensor([-2.0, -1.0, -1.0]), torch.tensor([1.0, 1.0, 0.5]), cfg)
    with torch.no_grad():
        for parameter in policy.head.parameters():
            parameter.normal_(0.0, 0.5)
        for parameter in _gru(policy).parameters():
            parameter.mul_(3.0)  # larger recurrent weights: the state matters more from step to step
        _normalizer(policy).update(torch.randn(64, OBS) * 3 + 1)
    specs = (
        SpaceSpec.unnamed("obs", OBS),
        SpaceSpec(("a0", "a1", "a2"), (-2.0, -1.0, -1.0), (1.0, 1.0, 0.5), ("",) * ACT),
    )
    metadata = PolicyMetadata(*specs, 0.01, "test/gru", "c", "g", memory=policy.memory)
    return export_onnx(policy.deterministic_actor(), metadata, path)


def episode_stream(steps: int = 3 * EPISODE, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """obs `(steps, OBS)` and episode starts `(steps,)`: every EPISODE steps and at random steps in between."""
    rng = np.random.default_rng(seed)
    obs = rng.normal(0.0, 2.0, (steps, OBS)).astype(np.float32)
    starts = rng.random(steps) < 0.02
    starts[::EPISODE] = True
    return obs, starts


def onnxruntime_stream(path: Path | onnx.ModelProto, obs: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, ...]:
    """(actions, states) of onnxruntime stepping the stream, the state zeroed at each start and carried else."""
    source = path.SerializeToString() if isinstance(path, onnx.ModelProto) else str(path)
    session = ort.InferenceSession(source, providers=["CPUExecutionProvider"])
    size = int(session.get_inputs()[1].shape[1])
    h, actions, states = np.zeros((1, size), np.float32), [], []
    for t in range(len(obs)):
        h = np.zeros((1, size), np.float32) if starts[t] else h
        action, h = session.run(["action", "h_out"], {"obs": obs[t : t + 1], "h_in": h})
        actions.append(action[0])
        states.append(h[0])
    return np.array(actions), np.array(states)


def assert_close(got: np.ndarray, expected: np.ndarray, what: str) -> None:
    """Max |error| within PARITY_TOLERANCE x max(1, max |expected|), as the firmware export's verify judges."""
    error = float(np.max(np.abs(got.astype(np.float64) - expected)))
    scale = max(1.0, float(np.max(np.abs(expected))))
    assert error <= PARITY_TOLERANCE * scale, f"{what}: max |error| {error:.3g} (scale {scale:.3g})"


@pytest.fixture(scope="module", params=list(CONFIGS))
def exported(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, PolicyIR]:
    path = export_gru_policy(tmp_path_factory.mktemp(request.param) / "policy.onnx", CONFIGS[request.param])
    return path, load_policy(path)


@pytest.fixture(scope="module")
def host(exported: tuple[Path, PolicyIR], tmp_path_factory: pytest.TempPathFactory) -> HostRecurrentPolicy:
    return build_host_recurrent(generate_c(exported[1]), tmp_path_factory.mktemp("host"))


# ------------------------------------------------------------------------------------- hand-built graphs


def _tensor(name: str, values: object) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(values, dtype=np.float32), name)


def gru_model(
    w: np.ndarray,
    r: np.ndarray,
    b: np.ndarray,
    head: np.ndarray,
    *,
    memory: MemorySpec | str | None = "gru",
    op: str = "GRU",
    read_y: bool = False,
    state_concat: bool = False,
    **gru_attributes: object,
) -> onnx.ModelProto:
    """obs → Unsqueeze → GRU (initial state h_in → Unsqueeze → Slice) → Squeeze = h_out → Gemm → action: the node
    pattern of torch's dynamo exporter, with W `(3H, in)`, R `(3H, H)`, B `(6H,)` and the head `(act, H)`."""
    size, inputs = r.shape[1], w.shape[1]
    attributes = {"hidden_size": size, "linear_before_reset": 1, **gru_attributes}
    nodes = [
        helper.make_node("Unsqueeze", ["obs", "zero"], ["x"], name="unsqueeze_obs"),
        helper.make_node("Unsqueeze", ["h_in", "zero"], ["h_seq"], name="unsqueeze_state"),
        helper.make_node("Slice", ["h_seq", "zero", "one", "zero"], ["h0"], name="slice_state"),
        helper.make_node(op, ["x", "W", "R", "B", "", "h0"], ["y", "y_h"], name="gru", **attributes),
        helper.make_node("Squeeze", ["y_h", "zero"], ["h_out"], name="squeeze_state"),
        helper.make_node("Gemm", ["h_out", "head"], ["action"], name="head", transB=1),
    ]
    if read_y:
        nodes.insert(4, helper.make_node("Squeeze", ["y", "zero_one"], ["y_flat"], name="squeeze_y"))
        nodes[-1] = helper.make_node("Gemm", ["y_flat", "head"], ["action"], name="head", transB=1)
    if state_concat:
        nodes.insert(0, helper.make_node("Concat", ["h_in", "obs"], ["both"], name="concat_state", axis=1))
    initializers = [
        _tensor("W", w[None]),
        _tensor("R", r[None]),
        _tensor("B", b[None]),
        _tensor("head", head),
        numpy_helper.from_array(np.array([0], np.int64), "zero"),
        numpy_helper.from_array(np.array([1], np.int64), "one"),
        numpy_helper.from_array(np.array([0, 1], np.int64), "zero_one"),
    ]
    graph = helper.make_graph(
        nodes,
        "gru_policy",
        [
            helper.make_tensor_value_info(n, TensorProto.FLOAT, ["batch", d])
            for n, d in (("obs", inputs), ("h_in", size))
        ],
        [
            helper.make_tensor_value_info("action", TensorProto.FLOAT, ["batch", head.shape[0]]),
            helper.make_tensor_value_info("h_out", TensorProto.FLOAT, ["batch", size]),
        ],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 10
    spec = MemorySpec(memory, size) if isinstance(memory, str) else memory  # type: ignore[arg-type]
    if spec is not None:
        helper.set_model_props(model, {"robo_rl.schema": "5", "robo_rl.memory": spec.to_json()})
    return model


def random_gru_weights(size: int = 3, inputs: int = 2, seed: int = 0) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    return (
        rng.normal(0, 1.0, (3 * size, inputs)),
        rng.normal(0, 1.0, (3 * size, size)),
        rng.normal(0, 0.5, 6 * size),
        rng.normal(0, 1.0, (2, size)),
    )


def _spec_gru_step(w: np.ndarray, r: np.ndarray, b: np.ndarray, x: list[float], h: list[float]) -> list[float]:
    """The ONNX specification's GRU equations with linear_before_reset != 0, term by term in float64:
    zt = f(Xt*(Wz^T) + Ht-1*(Rz^T) + Wbz + Rbz); rt = f(Xt*(Wr^T) + Ht-1*(Rr^T) + Wbr + Rbr);
    ht = g(Xt*(Wh^T) + (rt (.) (Ht-1*(Rh^T) + Rbh)) + Wbh); Ht = (1 - zt) (.) ht + zt (.) Ht-1;
    f = Sigmoid, g = Tanh; W, R rows and B = [Wb, Rb] in gate order z, r, h."""
    size = len(h)

    def row(matrix: np.ndarray, gate: int, unit: int, vector: list[float]) -> float:
        return sum(float(matrix[gate * size + unit, k]) * vector[k] for k in range(len(vector)))

    new = []
    for i in range(size):
        wb, rb = [float(b[g * size + i]) for g in range(3)], [float(b[(3 + g) * size + i]) for g in range(3)]
        z = 1 / (1 + math.exp(-(row(w, 0, i, x) + row(r, 0, i, h) + wb[0] + rb[0])))
        reset = 1 / (1 + math.exp(-(row(w, 1, i, x) + row(r, 1, i, h) + wb[1] + rb[1])))
        candidate = math.tanh(row(w, 2, i, x) + reset * (row(r, 2, i, h) + rb[2]) + wb[2])
        new.append((1 - z) * candidate + z * h[i])
    return new


# ----------------------------------------------------------------------------------------------- the IR


def test_exporter_pattern_reads_as_one_gru_layer_with_the_state_input_and_output(
    exported: tuple[Path, PolicyIR],
) -> None:
    path, ir = exported
    grus = [layer for layer in ir.layers if isinstance(layer, Gru)]
    assert len(grus) == 1 and ir.gru is grus[0]
    gru = grus[0]
    memory = ir.info.memory
    assert memory is not None and memory.kind == "gru" and memory.size == gru.hidden_size == ir.state_size
    assert ir.info.inputs == (("obs", OBS),) and ir.info.output == "action"  # h_in is not part of obs
    assert ir.obs_dim == OBS and ir.action_dim == ACT
    # The layers before the GRU feed it; the head reads its new state.
    index = ir.layers.index(gru)
    assert ir.widths[index] == gru.in_features and ir.widths[index + 1] == gru.hidden_size
    head = ir.layers[index + 1]
    assert isinstance(head, Dense) and head.in_features == gru.hidden_size
    # The weights are the ONNX GRU's W, R, B (gate rows z, r, h), read as constants.
    model = onnx.load(str(path))
    node = next(n for n in model.graph.node if n.op_type == "GRU")
    weights = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    np.testing.assert_array_equal(gru.input_weight, weights[node.input[1]][0])
    np.testing.assert_array_equal(gru.state_weight, weights[node.input[2]][0])
    np.testing.assert_array_equal(np.concatenate([gru.input_bias, gru.state_bias]), weights[node.input[3]][0])


def test_numpy_evaluator_matches_onnxruntime_over_200_step_episodes(exported: tuple[Path, PolicyIR]) -> None:
    path, ir = exported
    obs, starts = episode_stream()
    actions, states = evaluate_episode(ir, obs, starts)
    expected_actions, expected_states = onnxruntime_stream(path, obs, starts)
    assert_close(actions, expected_actions, "numpy actions vs onnxruntime")
    assert_close(states, expected_states, "numpy states vs onnxruntime")
    # The state matters: the same observations from a reset state every step give other actions.
    stateless, _ = evaluate_step(ir, obs, np.zeros((len(obs), ir.state_size), np.float32))
    assert np.max(np.abs(stateless - actions)) > 0.05


def test_gru_step_follows_the_onnx_specification_equations() -> None:
    """One step computed by hand from the specification, by the IR's evaluator, by onnxruntime and by the C."""
    w, r, b, head = random_gru_weights(size=3, inputs=2, seed=4)
    model = gru_model(w, r, b, head)
    x, h = [0.7, -1.3], [0.5, -0.25, 0.9]
    expected = np.array(_spec_gru_step(w, r, b, x, h))
    obs, state = np.array([x], np.float32), np.array([h], np.float32)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    _, ort_state = session.run(["action", "h_out"], {"obs": obs, "h_in": state})
    np.testing.assert_allclose(ort_state[0], expected, atol=1e-6)  # the hand computation reads the spec right
    ir = load_policy(model)
    action, h_out = evaluate_step(ir, obs[0], state[0])
    np.testing.assert_allclose(h_out, expected, atol=1e-6)
    np.testing.assert_allclose(action, head.astype(np.float32) @ h_out, atol=1e-6)
    # The other form (linear_before_reset=0, the reset gate applied to h before R_h) gives other numbers here, so
    # the agreement above pins the form down.
    other = ort.InferenceSession(
        gru_model(w, r, b, head, linear_before_reset=0).SerializeToString(), providers=["CPUExecutionProvider"]
    )
    assert np.max(np.abs(other.run(["h_out"], {"obs": obs, "h_in": state})[0][0] - expected)) > 1e-3


def test_gru_step_in_c_follows_the_specification(tmp_path: Path) -> None:
    w, r, b, head = random_gru_weights(size=3, inputs=2, seed=4)
    ir = load_policy(gru_model(w, r, b, head))
    host = build_host_recurrent(generate_c(ir), tmp_path)
    x, h = [0.7, -1.3], [0.5, -0.25, 0.9]
    action, h_out, code = host.step(np.array(x), np.array(h))
    assert code == 0
    np.testing.assert_allclose(h_out, _spec_gru_step(w, r, b, x, h), atol=1e-6)
    np.testing.assert_allclose(action, head @ h_out.astype(np.float64), atol=1e-6)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"memory": "history"}, "'history' memory"),
        ({"memory": None}, "needs the robo_rl.memory metadata"),
        ({"op": "RNN"}, "RNN node 'gru': the C export reads one GRU layer"),
        ({"linear_before_reset": 0}, "linear_before_reset=0"),
        ({"direction": "reverse"}, "direction 'reverse'"),
        ({"activations": ["Sigmoid", "Relu"]}, r"activations \['Sigmoid', 'Relu'\]"),
        ({"clip": 5.0}, "clip is not supported"),
        ({"read_y": True}, "its output Y is read"),
        ({"state_concat": True}, "reads the policy's state 'h_in'"),
        ({"memory": MemorySpec("gru", 4)}, "has 3 entries, the metadata's memory 4"),
    ],
)
def test_other_recurrent_forms_are_refused(change: dict, match: str) -> None:
    w, r, b, head = random_gru_weights()
    with pytest.raises(UnsupportedGraphError, match=match):
        load_policy(gru_model(w, r, b, head, **change))


def test_a_history_memory_policy_from_the_exporter_is_refused(tmp_path: Path) -> None:
    cfg = PolicyConfig(actor_hidden=(16,), memory="history", history_length=3)
    policy = RecurrentActorCritic(OBS, -torch.ones(ACT), torch.ones(ACT), cfg)
    specs = SpaceSpec.unnamed("obs", OBS), SpaceSpec.unnamed("action", ACT)
    path = export_onnx(
        policy.deterministic_actor(), PolicyMetadata(*specs, 0.01, "t", "c", "g", memory=policy.memory), tmp_path / "h"
    )
    with pytest.raises(UnsupportedGraphError, match="carries a GRU's state only"):
        load_policy(path)
    with pytest.raises(UnsupportedGraphError, match="'history' memory"):
        export_target(path, "c", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_evaluators_keep_stateless_and_stateful_policies_apart(exported: tuple[Path, PolicyIR]) -> None:
    _, ir = exported
    with pytest.raises(ValueError, match="evaluate_step"):
        evaluate(ir, np.zeros(OBS, np.float32))
    stateless = PolicyIR(layers=ir.layers[:1], obs_dim=OBS, action_dim=OBS, info=ir.info)
    with pytest.raises(ValueError, match="no memory"):
        evaluate_step(stateless, np.zeros(OBS), np.zeros(ir.state_size))


# --------------------------------------------------------------------------------------------- host C


def test_host_c_matches_onnxruntime_over_200_step_episodes_with_resets(
    exported: tuple[Path, PolicyIR], host: HostRecurrentPolicy
) -> None:
    path, _ = exported
    obs, starts = episode_stream()
    actions, states, codes = host.episode(obs, starts)
    assert np.all(codes == 0)
    expected_actions, expected_states = onnxruntime_stream(path, obs, starts)
    assert_close(actions, expected_actions, "host C actions vs onnxruntime")
    assert_close(states, expected_states, "host C states vs onnxruntime")
    # Updating the state in place (h_in and h_out the same array) gives the same bits.
    in_place_actions, in_place_states, _ = host.episode(obs, starts, in_place=True)
    np.testing.assert_array_equal(in_place_actions, actions)
    np.testing.assert_array_equal(in_place_states, states)
    # Never resetting would give other actions after the first episode: the resets are what makes them agree.
    carried, _, _ = host.episode(obs, np.eye(1, len(obs), dtype=bool)[0])
    assert np.max(np.abs(carried[EPISODE:] - actions[EPISODE:])) > 1e-3


@pytest.mark.parametrize("where", ["obs", "state"])
@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_non_finite_obs_or_state_returns_the_error_and_writes_nothing(
    host: HostRecurrentPolicy, where: str, value: float
) -> None:
    obs, state = np.ones(host.obs_dim, np.float32), np.full(host.state_size, 0.25, np.float32)
    (obs if where == "obs" else state)[-1] = value
    action, h_out, code = host.step(obs, state)
    assert code == 1
    assert np.all(np.isnan(action)) and np.all(np.isnan(h_out))  # still the NaN fill: nothing written
    _, kept, code = host.step(obs, state, in_place=True)
    assert code == 1 and np.array_equal(kept, state, equal_nan=True)  # the state in place is left as it was


def test_reset_function_and_header_give_the_state_contract(
    exported: tuple[Path, PolicyIR], host: HostRecurrentPolicy
) -> None:
    _, ir = exported
    np.testing.assert_array_equal(host.reset_state(), np.zeros(ir.state_size, np.float32))
    sources = generate_c(ir)
    header, source = sources.header, sources.source
    assert f"#define ROBO_RL_STATE_SIZE {ir.state_size}\n" in header
    assert "#define ROBO_RL_STATE_RESET_VALUE 0.0f\n" in header
    assert "int robo_rl_policy_step(const float *obs, const float *h_in, float *action, float *h_out);" in header
    assert "void robo_rl_policy_reset(float *state);" in header
    assert "int robo_rl_policy(" not in header  # a caller built for a stateless policy does not link
    assert "Reset rule: set every entry of h_in to reset_value" in header
    assert not re.search(r"\b(malloc|calloc|realloc|free)\s*\(", source)
    with pytest.raises(ValueError, match="build_host_recurrent"):
        build_host(sources, Path(host.library_path).parent / "stateless")


def test_reset_value_from_the_metadata_reaches_the_c(tmp_path: Path) -> None:
    w, r, b, head = random_gru_weights()
    ir = load_policy(gru_model(w, r, b, head, memory=MemorySpec("gru", 3, reset_value=-0.5)))
    host = build_host_recurrent(generate_c(ir, prefix="shifted"), tmp_path)
    np.testing.assert_array_equal(host.reset_state(), np.full(3, -0.5, np.float32))
    obs, starts = np.random.default_rng(0).normal(size=(20, 2)).astype(np.float32), np.zeros(20, bool)
    actions, states, _ = host.episode(obs, starts)
    expected_actions, expected_states = evaluate_episode(ir, obs, starts)  # starts from -0.5 too
    np.testing.assert_allclose(states, expected_states, atol=1e-6)
    np.testing.assert_allclose(actions, expected_actions, atol=1e-6)


def test_int8_is_refused_for_a_policy_with_memory(exported: tuple[Path, PolicyIR], tmp_path: Path) -> None:
    path, ir = exported
    with pytest.raises(ValueError, match="int8 export of a policy with memory"):
        quantize(ir)
    with pytest.raises(ValueError, match="int8 export of a policy with memory"):
        export_target(path, "cortex-m4", tmp_path / "int8", int8=True)
    assert not (tmp_path / "int8").exists()


# ------------------------------------------------------------------------------------- Cortex-M4 in QEMU


@needs_qemu
def test_qemu_cortex_m4_matches_onnxruntime_over_200_step_episodes(
    exported: tuple[Path, PolicyIR], host: HostRecurrentPolicy, tmp_path: Path
) -> None:
    path, ir = exported
    obs, starts = episode_stream(2 * EPISODE, seed=5)
    obs[250, 1] = np.nan  # a rejected step: nothing written, the state kept
    result = run_in_qemu(generate_c(ir), obs, tmp_path, resets=starts)
    assert result.states is not None
    assert np.flatnonzero(result.codes).tolist() == [250]
    assert np.all(np.isnan(result.outputs[250])) and np.all(np.isnan(result.states[250]))
    host_actions, host_states, _ = host.episode(obs, starts)
    ok = result.codes == 0
    # onnxruntime over the same stream (its step 250 skipped: the state carries over it, as on the target).
    kept = np.flatnonzero(ok)
    expected_actions, expected_states = onnxruntime_stream(path, obs[kept], starts[kept])
    assert_close(result.outputs[ok], expected_actions, "QEMU actions vs onnxruntime")
    assert_close(result.states[ok], expected_states, "QEMU states vs onnxruntime")
    assert_close(result.outputs[ok], host_actions[ok].astype(np.float64), "QEMU actions vs host C")
    assert_close(result.states[ok], host_states[ok].astype(np.float64), "QEMU states vs host C")
    assert result.instructions_per_inference is not None and result.instructions_per_inference > 0


@needs_qemu
def test_export_target_verifies_a_policy_with_memory_on_the_host_and_in_qemu(
    exported: tuple[Path, PolicyIR], tmp_path: Path
) -> None:
    path, _ = exported
    report = export_target(path, "cortex-m4", tmp_path / "m4", verify=True)
    assert report.ok, report.lines()
    assert report.host_parity is not None and report.host_parity.within_tolerance
    assert report.nonfinite_rejected is True
    assert report.qemu is not None and report.qemu.vs_onnxruntime.within_tolerance
    assert report.qemu.nonfinite_rejected
    assert any(line.startswith("gru ") for line in report.layers)
    assert json.loads((tmp_path / "m4" / "report.json").read_text())["ok"] is True


def test_c_target_example_runs_a_policy_with_memory(exported: tuple[Path, PolicyIR], tmp_path: Path) -> None:
    path, ir = exported
    out = export_target(path, "c", tmp_path / "c").out_dir
    subprocess.run(["make", "-s"], cwd=out, check=True, capture_output=True)
    printed = subprocess.run([str(out / "policy_example")], check=True, capture_output=True, text=True).stdout
    values = [float(line.split()[1]) for line in printed.splitlines()]
    expected, _ = evaluate_step(ir, np.zeros(OBS, np.float32), np.zeros(ir.state_size, np.float32))
    np.testing.assert_allclose(values, expected, atol=1e-5)


@needs_qemu
def test_cli_exports_a_policy_file_with_memory(exported: tuple[Path, PolicyIR], tmp_path: Path) -> None:
    path, _ = exported
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main(["export", str(path), "--target", "crazyflie", "--verify", "-o", str(tmp_path / "cf")])
    # The Crazyflie target refuses this policy (its observations are not a quadrotor's) with one line...
    assert code != 0 and "crazyflie target" in out.getvalue() + err.getvalue()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main(["export", str(path), "--target", "cortex-m4", "--verify", "-o", str(tmp_path / "m4")])
    assert code == 0, out.getvalue() + err.getvalue()
    text = out.getvalue()
    assert "gru " in text and "QEMU cortex-m4 vs onnxruntime" in text and "MISMATCH" not in text
    assert (tmp_path / "m4" / "robo_rl_policy.h").read_text().count("robo_rl_policy_step(") == 1


@pytest.mark.skipif(shutil.which("arm-none-eabi-g++") is None, reason="arm-none-eabi-g++ not installed")
def test_arduino_example_with_memory_compiles_for_cortex_m4(exported: tuple[Path, PolicyIR], tmp_path: Path) -> None:
    """The sketch carries the state (its `#ifdef ROBO_RL_STATE_SIZE` branch), built as test_targets.py builds it."""
    path, _ = exported
    out = export_target(path, "arduino", tmp_path / "arduino").out_dir
    sketch = out / "examples" / "RoboRlPolicy" / "RoboRlPolicy.ino"
    assert "robo_rl_policy_step(observation, state, action, state)" in sketch.read_text()
    m4 = ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16", "-O2", "-Wall", "-Wextra", "-Werror"]
    stubs = Path(__file__).parent / "arduino_stubs"
    sketch_flags = ["-std=gnu++17", "-x", "c++", "-include", "Arduino.h", f"-I{stubs}", f"-I{out / 'src'}"]
    for command in (
        ["arm-none-eabi-gcc", *m4, "-std=c99", "-c", str(out / "src" / "robo_rl_policy.c")],
        ["arm-none-eabi-g++", *m4, *sketch_flags, "-c", str(sketch), "-o", "sketch.o"],
    ):
        done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
