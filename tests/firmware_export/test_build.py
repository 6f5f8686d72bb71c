"""Host and Cortex-M4F builds of generated code: -Werror on both compilers, the size report of the policy
object, and the host library's ctypes interface."""

from __future__ import annotations

import math
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from robo_rl.firmware_export.build import (
    CORTEX_M4_CC,
    CompileError,
    ToolNotFoundError,
    build_cortex_m4,
    build_host,
    build_host_library,
    find_tool,
    header_define,
)
from robo_rl.firmware_export.codegen import CSources, generate_c
from robo_rl.firmware_export.evaluate import evaluate
from robo_rl.firmware_export.ir import PolicyIR
from robo_rl.firmware_export.onnx_reader import load_policy
from robo_rl.firmware_export.quantize import quantize, sample_observations

needs_arm = pytest.mark.skipif(
    shutil.which(CORTEX_M4_CC) is None, reason=f"{CORTEX_M4_CC} not installed (`make system-deps` installs it)"
)
QUADROTOR = (30, 64, 64, 4)


def _tensor(name: str, values: object) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(values, dtype=np.float32), name)


def _policy(sizes: tuple[int, ...], activations: tuple[str, ...], seed: int = 0) -> PolicyIR:
    """Normalizer, Gemm layers with the given activations between them (cycled), clip and action scaling."""
    rng = np.random.default_rng(seed)
    nodes = [
        helper.make_node("Sub", ["obs", "mean"], ["x0"], name="sub"),
        helper.make_node("Div", ["x0", "std"], ["x1"], name="div"),
        helper.make_node("Clip", ["x1", "lo", "hi"], ["h0"], name="clip"),
    ]
    inits = [
        _tensor("mean", rng.normal(size=sizes[0])),
        _tensor("std", rng.uniform(0.5, 2, sizes[0])),
        _tensor("lo", -5),
        _tensor("hi", 5),
    ]
    tail = "h0"
    for k in range(len(sizes) - 1):
        inits += [
            _tensor(f"W{k}", rng.normal(0, 1 / math.sqrt(sizes[k]), (sizes[k + 1], sizes[k]))),
            _tensor(f"b{k}", rng.normal(0, 0.1, sizes[k + 1])),
        ]
        nodes.append(helper.make_node("Gemm", [tail, f"W{k}", f"b{k}"], [f"g{k}"], name=f"gemm{k}", transB=1))
        tail = f"g{k}"
        if k < len(sizes) - 2:
            op = activations[k % len(activations)]
            attributes = {"alpha": 0.5} if op in ("Elu", "LeakyRelu") else {}
            nodes.append(helper.make_node(op, [tail], [f"a{k}"], name=f"act{k}", **attributes))
            tail = f"a{k}"
    nodes += [
        helper.make_node("Clip", [tail, "alo", "ahi"], ["c"], name="clip_action"),
        helper.make_node("Mul", ["half", "c"], ["m"], name="half_range"),
        helper.make_node("Add", ["m", "center"], ["action"], name="center"),
    ]
    inits += [
        _tensor("alo", -1),
        _tensor("ahi", 1),
        _tensor("half", [0.5] * sizes[-1]),
        _tensor("center", [0.5] * sizes[-1]),
    ]
    graph = helper.make_graph(
        nodes,
        "policy",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["batch", sizes[0]])],
        [helper.make_tensor_value_info("action", TensorProto.FLOAT, ["batch", sizes[-1]])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    return load_policy(model)


@pytest.fixture(scope="module")
def quadrotor() -> PolicyIR:
    return _policy(QUADROTOR, ("Elu",))


def _weights(ir: PolicyIR) -> int:
    return sum(layer.weight.size for layer in ir.dense_layers)


@needs_arm
def test_cortex_m4_float_object_size(quadrotor: PolicyIR, tmp_path: Path) -> None:
    size = build_cortex_m4(generate_c(quadrotor), tmp_path)
    assert size.object_path == tmp_path / "robo_rl_policy.o" and size.object_path.exists()
    weights = 4 * (_weights(quadrotor) + 64 + 64 + 4)
    assert weights <= size.text <= weights + 2048  # weights and biases are in .rodata (counted in text)
    assert size.data == 0 and size.bss == 2 * 64 * 4  # the two ping-pong buffers only
    assert size.flash == size.text and size.ram == size.bss


@needs_arm
@pytest.mark.parametrize("activations", ["float", "int8"])
def test_cortex_m4_int8_object_is_mostly_its_int8_weights(
    quadrotor: PolicyIR, activations: str, tmp_path: Path
) -> None:
    calibration = sample_observations(quadrotor.info, 256)
    float_size = build_cortex_m4(generate_c(quadrotor), tmp_path / "reference")
    size = build_cortex_m4(generate_c(quantize(quadrotor, calibration, activations)), tmp_path / activations)  # type: ignore[arg-type]
    assert _weights(quadrotor) <= size.text < float_size.text / 2.5
    floats = 2 * (64 + 64 + 4) + 2 * 30 + 2 * 4  # bias and scale per row, normalizer, action scaling
    assert size.text - _weights(quadrotor) - 4 * floats <= 1536  # code
    codes = 64 + 64 * 2 if activations == "int8" else 0  # int8 input codes, and packed in pairs for SMLAD
    assert size.bss == 2 * 64 * 4 + codes
    print(f"\ncortex-m4 object: float {float_size}, int8 ({activations} activations) {size}")


@needs_arm
def test_every_operator_compiles_for_cortex_m4_with_werror(tmp_path: Path) -> None:
    ir = _policy((5, 9, 17, 3, 12, 7), ("Relu", "Tanh", "Sigmoid", "Elu", "LeakyRelu"))
    for name, sources in {
        "float": generate_c(ir, prefix="all_ops"),
        "int8w": generate_c(quantize(ir), prefix="all_ops_w8"),
        "int8a": generate_c(quantize(ir, activations="int8"), prefix="all_ops_a8"),
    }.items():
        assert build_cortex_m4(sources, tmp_path / name).text > 0


@needs_arm
@pytest.mark.parametrize("target", ["host", "cortex-m4"])
def test_warnings_are_errors_on_both_compilers(quadrotor: PolicyIR, target: str, tmp_path: Path) -> None:
    sources = generate_c(quadrotor)
    noisy = replace(sources, source=sources.source + "\nstatic int robo_rl_never_used;\n")
    with pytest.raises(CompileError, match=r"robo_rl_never_used.*\[-Werror=unused-variable\]"):
        if target == "host":
            build_host(noisy, tmp_path)
        else:
            build_cortex_m4(noisy, tmp_path)


def test_compile_error_carries_the_compiler_message(quadrotor: PolicyIR, tmp_path: Path) -> None:
    sources = generate_c(quadrotor)
    broken = replace(sources, source=sources.source.replace("return ROBO_RL_OK;", "return ROBO_RL_OK"))
    with pytest.raises(CompileError, match=r"(?s)gcc .*failed \(1\):.*robo_rl_policy\.c:\d+:\d+: error"):
        build_host(broken, tmp_path)


def test_missing_tool_is_named_with_its_package() -> None:
    with pytest.raises(ToolNotFoundError, match="arm-none-eabi-objcopy-nonexistent not found on PATH; install gcc-arm"):
        find_tool("arm-none-eabi-objcopy-nonexistent")


def test_host_library_with_several_prefixes(tmp_path: Path) -> None:
    irs = {f"p{k}": _policy((4 + k, 8, 3), ("Tanh",), seed=k) for k in range(3)}
    library = build_host_library([generate_c(ir, prefix=p) for p, ir in irs.items()], tmp_path, jobs=2)
    assert sorted(library) == ["p0", "p1", "p2"]
    for prefix, ir in irs.items():
        obs = sample_observations(ir.info, 50, seed=1)
        actions, codes = library[prefix](obs)
        assert actions.shape == (50, 3) and codes.shape == (50,) and (codes == 0).all()
        np.testing.assert_allclose(actions, evaluate(ir, obs), rtol=0, atol=1e-5)
    with pytest.raises(ValueError, match="prefixes must be distinct"):
        build_host_library([generate_c(irs["p0"], prefix="x"), generate_c(irs["p1"], prefix="x")], tmp_path)


def test_host_policy_single_vector_and_wrong_width(quadrotor: PolicyIR, tmp_path: Path) -> None:
    host = build_host(generate_c(quadrotor), tmp_path)
    obs = sample_observations(quadrotor.info, 1, seed=2)[0]
    action, code = host(obs)
    assert action.shape == (4,) and code.shape == () and int(code) == 0
    np.testing.assert_allclose(action, evaluate(quadrotor, obs), rtol=0, atol=1e-5)
    with pytest.raises(ValueError, match="obs has 29 features, the policy expects 30"):
        host(np.zeros(29, np.float32))


def test_rebuilt_sources_in_the_same_directory_are_not_served_stale(tmp_path: Path) -> None:
    first, second = (_policy((3, 5, 2), ("Relu",), seed=s) for s in (10, 11))
    obs = sample_observations(first.info, 5)
    a = build_host(generate_c(first), tmp_path)(obs)[0]
    b = build_host(generate_c(second), tmp_path)(obs)[0]
    np.testing.assert_allclose(b, evaluate(second, obs), rtol=0, atol=1e-5)
    assert not np.allclose(a, b)


def test_policy_without_layers_copies_obs(tmp_path: Path) -> None:
    graph = helper.make_graph(
        [helper.make_node("Identity", ["obs"], ["action"], name="id")],
        "identity",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["batch", 3])],
        [helper.make_tensor_value_info("action", TensorProto.FLOAT, ["batch", 3])],
    )
    ir = load_policy(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]))
    assert ir.layers == ()
    obs = np.float32([[1.5, -2.0, 3.25]])
    np.testing.assert_array_equal(build_host(generate_c(ir), tmp_path)(obs)[0], obs)


def test_header_define_reads_the_generated_sizes(quadrotor: PolicyIR) -> None:
    sources: CSources = generate_c(quadrotor, prefix="cf")
    assert (header_define(sources, "OBS_DIM"), header_define(sources, "ACTION_DIM")) == (30, 4)
    with pytest.raises(ValueError, match="defines no CF_NOT_THERE"):
        header_define(sources, "NOT_THERE")
