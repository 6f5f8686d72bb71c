"""The generated C policy on an emulated Cortex-M4 (QEMU mps2-an386) against onnxruntime, and the instruction
count of the QEMU runner checked against code whose instruction count is known."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from robo_rl.firmware_export.codegen import generate_c
from robo_rl.firmware_export.onnx_reader import load_policy
from robo_rl.firmware_export.qemu import (
    INSTRUCTIONS_PER_TICK,
    QemuError,
    QemuResult,
    estimated_latency_us,
    missing_tools,
    run_in_qemu,
)
from robo_rl.firmware_export.quantize import evaluate_quantized, quantize

pytestmark = pytest.mark.skipif(
    bool(missing_tools()), reason=f"QEMU check needs {', '.join(missing_tools())} (install with `make system-deps`)"
)

NUM_INPUTS = 20
# Float32 maths on both sides, but the target's newlib expf/tanhf may round differently from onnxruntime's.
RELATIVE_TOLERANCE = 1e-5
# One timer tick (40 instructions) of quantization plus the call, return and timer reads around a loop.
LOOP_COUNT_SLACK = INSTRUCTIONS_PER_TICK + 16


def _initializer(name: str, values: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(values, dtype=np.float32), name)


def _model(nodes: list, initializers: list, obs_dim: int, action_dim: int) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "policy",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["batch", obs_dim])],
        [helper.make_tensor_value_info("action", TensorProto.FLOAT, ["batch", action_dim])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 10
    onnx.checker.check_model(model)
    return model


def robo_rl_style_policy(rng: np.random.Generator, obs_dim: int = 30, hidden: int = 64) -> onnx.ModelProto:
    """The op sequence robo_rl's exporter writes: normalizer (Sub, Div, Clip), Gemm-Elu-Gemm-Elu-Gemm, Clip to
    [-1, 1], action scaling (Mul, Add), for a quadrotor-sized 30-64-64-4 actor."""
    action_dim = 4
    sizes = (obs_dim, hidden, hidden, action_dim)
    inits = [
        _initializer("mean", rng.normal(0.0, 0.5, obs_dim)),
        _initializer("std", rng.uniform(0.2, 3.0, obs_dim)),
        _initializer("obs_clip_low", np.float32(-5.0)),
        _initializer("obs_clip_high", np.float32(5.0)),
        _initializer("action_clip_low", np.float32(-1.0)),
        _initializer("action_clip_high", np.float32(1.0)),
        _initializer("half_range", rng.uniform(0.5, 2.0, action_dim)),
        _initializer("center", rng.uniform(-0.5, 0.5, action_dim)),
    ]
    nodes = [
        helper.make_node("Sub", ["obs", "mean"], ["centered"], name="node_sub"),
        helper.make_node("Div", ["centered", "std"], ["normalized"], name="node_div"),
        helper.make_node("Clip", ["normalized", "obs_clip_low", "obs_clip_high"], ["h0"], name="node_clamp"),
    ]
    for layer, (fan_in, fan_out) in enumerate(itertools.pairwise(sizes)):
        inits += [
            _initializer(f"w{layer}", rng.normal(0.0, 1.0 / np.sqrt(fan_in), (fan_out, fan_in))),
            _initializer(f"b{layer}", rng.normal(0.0, 0.1, fan_out)),
        ]
        gemm_out = f"g{layer}"
        nodes.append(helper.make_node("Gemm", [f"h{layer}", f"w{layer}", f"b{layer}"], [gemm_out], transB=1))
        if layer < len(sizes) - 2:
            nodes.append(helper.make_node("Elu", [gemm_out], [f"h{layer + 1}"], alpha=1.0))
    nodes += [
        helper.make_node("Clip", [gemm_out, "action_clip_low", "action_clip_high"], ["clipped"], name="node_clip"),
        helper.make_node("Mul", ["half_range", "clipped"], ["scaled"], name="node_mul"),
        helper.make_node("Add", ["center", "scaled"], ["action"], name="node_add"),
    ]
    return _model(nodes, inits, obs_dim, action_dim)


def tanh_mlp(rng: np.random.Generator, sizes: tuple[int, ...] = (11, 32, 24, 3)) -> onnx.ModelProto:
    """A Stable-Baselines3-style actor: MatMul + Add and Tanh after every layer."""
    nodes, inits, current = [], [], "obs"
    for layer, (fan_in, fan_out) in enumerate(itertools.pairwise(sizes)):
        inits += [
            _initializer(f"w{layer}", rng.normal(0.0, 1.5 / np.sqrt(fan_in), (fan_in, fan_out))),
            _initializer(f"b{layer}", rng.normal(0.0, 0.3, fan_out)),
        ]
        last = layer == len(sizes) - 2
        nodes += [
            helper.make_node("MatMul", [current, f"w{layer}"], [f"m{layer}"]),
            helper.make_node("Add", [f"m{layer}", f"b{layer}"], [f"a{layer}"]),
            helper.make_node("Tanh", [f"a{layer}"], ["action" if last else f"t{layer}"]),
        ]
        current = f"t{layer}"
    return _model(nodes, inits, sizes[0], sizes[-1])


def onnxruntime_actions(model: onnx.ModelProto, obs: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"obs": obs.astype(np.float32)})[0]


def run_model(model: onnx.ModelProto, obs: np.ndarray, directory: Path, prefix: str = "robo_rl") -> QemuResult:
    return run_in_qemu(generate_c(load_policy(model), prefix=prefix), obs, directory)


def assert_matches_onnxruntime(result: QemuResult, model: onnx.ModelProto, obs: np.ndarray) -> None:
    expected = onnxruntime_actions(model, obs)
    assert np.all(result.codes == 0)
    assert result.outputs.shape == expected.shape
    scale = max(1.0, float(np.max(np.abs(expected))))
    error = float(np.max(np.abs(result.outputs - expected)))
    assert error <= RELATIVE_TOLERANCE * scale, f"QEMU vs onnxruntime: max abs error {error:.3g}"


@pytest.fixture(scope="module")
def quadrotor_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[onnx.ModelProto, np.ndarray, QemuResult]:
    rng = np.random.default_rng(0)
    model = robo_rl_style_policy(rng)
    obs = rng.normal(0.0, 2.0, (NUM_INPUTS, 30)).astype(np.float32)
    return model, obs, run_model(model, obs, tmp_path_factory.mktemp("quadrotor"))


def test_robo_rl_style_elu_policy_matches_onnxruntime(quadrotor_run) -> None:
    model, obs, result = quadrotor_run
    assert_matches_onnxruntime(result, model, obs)
    assert np.all(result.written)


def test_tanh_mlp_matches_onnxruntime(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    model = tanh_mlp(rng)
    obs = rng.normal(0.0, 1.0, (NUM_INPUTS, 11)).astype(np.float32)
    assert_matches_onnxruntime(run_model(model, obs, tmp_path, prefix="sb3_actor"), model, obs)


def test_int8_policy_on_the_target_computes_what_the_quantizer_simulates(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    model = robo_rl_style_policy(rng)
    ir = load_policy(model)
    quantized = quantize(ir, rng.normal(0.0, 2.0, (256, 30)).astype(np.float32), activations="int8")
    obs = rng.normal(0.0, 2.0, (NUM_INPUTS, 30)).astype(np.float32)
    result = run_in_qemu(generate_c(ir, quantization=quantized), obs, tmp_path)
    expected = evaluate_quantized(quantized, obs)
    assert np.all(result.codes == 0)
    assert np.max(np.abs(result.outputs - expected)) <= RELATIVE_TOLERANCE * max(1.0, float(np.max(np.abs(expected))))
    # ... and the quantization did change the result, so the comparison above is not the float policy's.
    assert np.max(np.abs(result.outputs - onnxruntime_actions(model, obs))) > 1e-4


def test_non_finite_input_returns_the_error_code_on_the_target(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    model = tanh_mlp(rng, sizes=(5, 8, 2))
    obs = rng.normal(0.0, 1.0, (6, 5)).astype(np.float32)
    obs[1, 0], obs[2, 4], obs[3, 2] = np.nan, np.inf, -np.inf
    result = run_model(model, obs, tmp_path)
    np.testing.assert_array_equal(result.codes, [0, 1, 1, 1, 0, 0])
    finite = result.codes == 0
    expected = onnxruntime_actions(model, obs[finite])
    assert np.max(np.abs(result.outputs[finite] - expected)) <= RELATIVE_TOLERANCE
    # codegen's contract: on a non-finite input nothing is written (the firmware's NaN marker is still there).
    assert not np.any(result.written[~finite])


def test_instruction_count_matches_known_loops(quadrotor_run) -> None:
    _, _, result = quadrotor_run
    assert len(result.loop_checks) == 2
    for check in result.loop_checks:
        assert abs(check.measured_instructions - check.expected_instructions) <= LOOP_COUNT_SLACK
    assert result.max_count_error < 3e-3


@dataclass(frozen=True)
class HandWrittenSources:
    """Stands in for codegen's CSources with a C policy written here (same fields and write())."""

    prefix: str
    header_name: str
    header: str
    source_name: str
    source: str

    def write(self, directory: Path) -> tuple[Path, Path]:
        header, source = directory / self.header_name, directory / self.source_name
        header.write_text(self.header)
        source.write_text(self.source)
        return header, source


def known_cost_policy(iterations: int, body: str = "") -> HandWrittenSources:
    """A 'policy' whose cost is a `subs`/`bne` loop of `iterations` (2 instructions each) plus a few."""
    header = (
        "#ifndef KNOWN_H\n#define KNOWN_H\n#define KNOWN_OBS_DIM 2\n#define KNOWN_ACTION_DIM 1\n"
        "int known_policy(const float *obs, float *action);\n#endif\n"
    )
    source = (
        '#include "known.h"\n\nint known_policy(const float *obs, float *action)\n{\n'
        f"    unsigned int count = {iterations}u;\n"
        '    __asm__ volatile("1:\\n\\tsubs %0, %0, #1\\n\\tbne 1b" : "+r"(count) : : "cc");\n'
        f"    {body}\n    action[0] = obs[0];\n    return 0;\n}}\n"
    )
    return HandWrittenSources("known", "known.h", header, "known.c", source)


def test_instructions_per_inference_of_code_with_known_cost(tmp_path: Path) -> None:
    iterations = 1000
    result = run_in_qemu(known_cost_policy(iterations), np.ones((3, 2)), tmp_path, timed_inferences=50)
    assert result.timed_inferences == 50
    np.testing.assert_array_equal(result.outputs[:, 0], 1.0)
    # On top of the loop: the call, a few moves, the store, the return and the timing loop's bookkeeping.
    overhead = result.instructions_per_inference - 2 * iterations
    assert 3 <= overhead <= 20, f"{result.instructions_per_inference} instructions for a 2000-instruction loop"


def test_quadrotor_policy_costs_and_size_are_plausible(quadrotor_run) -> None:
    _, _, result = quadrotor_run
    multiply_adds = 30 * 64 + 64 * 64 + 64 * 4
    # At least one instruction per multiply-add; a loop that cost 8 per multiply-add would be a regression.
    assert multiply_adds < result.instructions_per_inference < 8 * multiply_adds
    assert 0.0 < estimated_latency_us(result.instructions_per_inference) < 1000.0
    # Weights (6,596 floats = 26 kB) sit in flash, not RAM.
    assert result.firmware_size.text > 4 * multiply_adds
    assert result.firmware_size.ram < 16 * 1024


def test_cpu_fault_in_the_policy_is_reported(tmp_path: Path) -> None:
    with pytest.raises(QemuError, match="CPU fault"):
        run_in_qemu(known_cost_policy(1, body="__builtin_trap();"), np.zeros((1, 2)), tmp_path)


def test_inputs_of_the_wrong_width_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"shape \(num_inputs >= 1, 2\)"):
        run_in_qemu(known_cost_policy(1), np.zeros((4, 3)), tmp_path)


def test_a_policy_that_never_returns_times_out(tmp_path: Path) -> None:
    with pytest.raises(QemuError, match="timed out after 1 s"):
        run_in_qemu(known_cost_policy(1, body="for (;;) {\n    }"), np.zeros((1, 2)), tmp_path, timeout=1.0)
