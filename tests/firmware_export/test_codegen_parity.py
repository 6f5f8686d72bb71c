"""Generated C (host gcc, through ctypes) against onnxruntime: 240 random MLPs compiled into one library, a real
robo_rl export, an SB3-style graph; non-finite inputs; the header's contract."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from robo_rl.api.configs import preset
from robo_rl.build import build_policy
from robo_rl.config import config_hash
from robo_rl.export.onnx import PolicyMetadata, export_onnx
from robo_rl.firmware_export.build import HostPolicy, build_host, build_host_library
from robo_rl.firmware_export.codegen import CSources, generate_c
from robo_rl.firmware_export.ir import Activation, Clip, Dense, Elementwise, PolicyIR
from robo_rl.firmware_export.onnx_reader import load_policy
from robo_rl.sim import make

NUM_MODELS = 240
ROWS = 24
TOLERANCE = 1e-5
"""Max |C − onnxruntime| allowed, relative to max(1, largest |output|)."""
QUADROTOR_OBS = 22
"""Observation size of quadrotor/hover (position error, rotation matrix, velocity, angular velocity, ...)."""
ACTIVATIONS = ("Relu", "Tanh", "Sigmoid", "Elu", "LeakyRelu", None)
FORMS = ("gemm", "gemm_transposed", "matmul_add")


@dataclass(frozen=True)
class RandomMLP:
    model: onnx.ModelProto
    depth: int
    widths: tuple[int, ...]
    activation: str | None
    form: str


def _tensor(name: str, values: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(values, dtype=np.float32), name)


def _model(nodes: list, initializers: list, obs_dim: int, action_dim: int, opset: int = 18) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "policy",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["batch", obs_dim])],
        [helper.make_tensor_value_info("action", TensorProto.FLOAT, ["batch", action_dim])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


class _GraphBuilder:
    """Appends nodes to a chain starting at `obs`; each method returns nothing and advances the tail."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.tail = "obs"

    def _next(self, op: str) -> str:
        return f"{op.lower()}_{len(self.nodes)}"

    def const(self, values: np.ndarray) -> str:
        name = f"c_{len(self.initializers)}"
        self.initializers.append(_tensor(name, values))
        return name

    def node(self, op: str, inputs: list[str], **attributes: object) -> None:
        out = self._next(op)
        self.nodes.append(helper.make_node(op, inputs, [out], name=f"node_{out}", **attributes))
        self.tail = out

    def dense(self, rng: np.random.Generator, fan_in: int, fan_out: int, form: str) -> None:
        weight = rng.normal(0.0, 1.2 / math.sqrt(fan_in), (fan_out, fan_in))
        bias = rng.normal(0.0, 0.3, fan_out)
        if form == "gemm":
            self.node("Gemm", [self.tail, self.const(weight), self.const(bias)], transB=1)
        elif form == "gemm_transposed":
            alpha, beta = 0.5, 2.0
            self.node(
                "Gemm",
                [self.tail, self.const(weight.T / alpha), self.const(bias[None, :] / beta)],
                alpha=alpha,
                beta=beta,
            )
        else:
            self.node("MatMul", [self.tail, self.const(weight.T)])
            self.node("Add", [self.const(bias), self.tail] if fan_out % 2 else [self.tail, self.const(bias)])

    def finish(self, obs_dim: int, action_dim: int) -> onnx.ModelProto:
        self.nodes[-1].output[0] = "action"
        return _model(self.nodes, self.initializers, obs_dim, action_dim)


def _width(rng: np.random.Generator, index: int) -> int:
    """Log-uniform in [1, 256], with the extremes forced now and then."""
    if index % 17 == 0:
        return 256
    if index % 13 == 0:
        return 1
    return int(np.clip(np.round(np.exp(rng.uniform(0.0, math.log(256)))), 1, 256))


def random_mlp(index: int) -> RandomMLP:
    """MLP number `index`: depth 1-4, an activation from ACTIVATIONS, a dense form from FORMS, and optional
    normalizer (Sub, Div, Clip) and action scaling (Clip, Mul, Add) with vector or scalar constants."""
    rng = np.random.default_rng(1000 + index)
    depth = 1 + index % 4
    activation = ACTIVATIONS[(index // 4) % len(ACTIVATIONS)]
    form = FORMS[(index // 24) % len(FORMS)]
    widths = (int(rng.integers(1, 48)), *(_width(rng, index + k) for k in range(depth - 1)), int(rng.integers(1, 9)))
    builder = _GraphBuilder()
    if index % 2:
        mean, std = rng.normal(0, 1, widths[0]), rng.uniform(0.5, 2.0, widths[0])
        mean_input = [builder.const(mean), builder.tail] if index % 6 == 1 else [builder.tail, builder.const(mean)]
        builder.node("Sub", mean_input)
        builder.node("Div", [builder.tail, builder.const(std if index % 4 == 1 else np.float32(1.5))])
        builder.node("Clip", [builder.tail, builder.const(np.float32(-3)), builder.const(np.float32(3))])
    for layer in range(depth):
        builder.dense(rng, widths[layer], widths[layer + 1], form)
        if activation is not None and (layer < depth - 1 or index % 3 == 0):
            alpha = {"Elu": {"alpha": 0.7}, "LeakyRelu": {"alpha": 0.1}}.get(activation, {})
            builder.node(activation, [builder.tail], **alpha)
    if index % 5 == 0:
        builder.node("Clip", [builder.tail, "", builder.const(np.float32(0.8))])
        builder.node("Mul", [builder.const(rng.uniform(0.5, 2, widths[-1])), builder.tail])
        builder.node("Add", [builder.tail, builder.const(np.float32(0.25))])
    if index % 7 == 0 and activation == "Sigmoid" and index % 3 == 0:
        builder.node("Add", [builder.tail, builder.const(np.float32(1.0))])
        builder.node("Div", [builder.const(rng.uniform(1, 2, widths[-1])), builder.tail])
    model = builder.finish(widths[0], widths[-1])
    return RandomMLP(model, depth, widths, activation, form)


def _onnxruntime(model: onnx.ModelProto | Path, obs: np.ndarray) -> np.ndarray:
    source = model.SerializeToString() if isinstance(model, onnx.ModelProto) else str(model)
    session = ort.InferenceSession(source, providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: obs})[0]


def _relative_error(got: np.ndarray, expected: np.ndarray) -> float:
    return float(np.abs(got - expected).max() / max(1.0, float(np.abs(expected).max())))


@pytest.fixture(scope="module")
def random_library(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[RandomMLP], dict[str, HostPolicy]]:
    mlps = [random_mlp(i) for i in range(NUM_MODELS)]
    sources = [generate_c(load_policy(m.model), prefix=f"mlp{i}") for i, m in enumerate(mlps)]
    return mlps, build_host_library(sources, tmp_path_factory.mktemp("random_mlps"))


def test_random_mlps_cover_the_required_architectures(random_library: tuple[list[RandomMLP], dict]) -> None:
    mlps, _ = random_library
    assert len(mlps) >= 200
    assert {m.depth for m in mlps} == {1, 2, 3, 4}
    assert set(ACTIVATIONS) == {m.activation for m in mlps}
    assert set(FORMS) == {m.form for m in mlps}
    hidden = [w for m in mlps for w in m.widths[1:-1]]
    assert min(hidden) == 1 and max(hidden) == 256
    for activation in ACTIVATIONS[:-1]:  # each activation appears at several depths and in every form
        covered = {(m.depth, m.form) for m in mlps if m.activation == activation}
        assert {d for d, _ in covered} >= {2, 3, 4} and {f for _, f in covered} == set(FORMS)
    pointwise = [layer for m in mlps for layer in load_policy(m.model).layers if not isinstance(layer, Dense)]
    elementwise = {(e.op, e.constant_first, e.constant.ndim) for e in pointwise if isinstance(e, Elementwise)}
    assert elementwise >= {("sub", True, 1), ("sub", False, 1), ("div", False, 0), ("div", False, 1), ("div", True, 1)}
    assert elementwise >= {("mul", False, 1), ("add", False, 0)}
    assert any(isinstance(c, Clip) and c.low == -math.inf for c in pointwise)


def test_random_mlps_match_onnxruntime(random_library: tuple[list[RandomMLP], dict[str, HostPolicy]]) -> None:
    mlps, library = random_library
    errors = []
    for index, mlp in enumerate(mlps):
        rng = np.random.default_rng(index)
        obs = (rng.normal(0.0, 2.0, (ROWS, mlp.widths[0]))).astype(np.float32)
        expected = _onnxruntime(mlp.model, obs)
        actions, codes = library[f"mlp{index}"](obs)
        assert (codes == 0).all()
        errors.append(_relative_error(actions, expected))
    worst = int(np.argmax(errors))
    print(f"\n{len(mlps)} random MLPs: max relative |C - onnxruntime| = {errors[worst]:.2e} (model {worst})")
    assert errors[worst] <= TOLERANCE, f"model {worst} {mlps[worst].widths} {mlps[worst].activation}"


def _robo_rl_quadrotor_onnx(path: Path) -> Path:
    """A robo_rl quadrotor actor with random weights and non-trivial normalizer statistics, exported by
    robo_rl's own exporter (nothing is trained)."""
    cfg = preset("quadrotor_hover_ppo")
    cfg = replace(cfg, task=replace(cfg.task, num_envs=1))
    env = make(cfg.task.name, num_envs=1, seed=0)
    torch.manual_seed(0)
    policy = build_policy(cfg, env)
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        policy.obs_normalizer.mean.copy_(torch.randn(env.obs_spec.dim, generator=generator) * 0.5)
        policy.obs_normalizer.var.copy_(torch.rand(env.obs_spec.dim, generator=generator) + 0.05)
        policy.obs_normalizer.count.fill_(1000.0)
        policy.actor[-1].weight.mul_(20.0)  # large enough for the action clip to act
    metadata = PolicyMetadata(env.obs_spec, env.action_spec, env.dt, cfg.task.name, config_hash(cfg), "f" * 40)
    return export_onnx(policy.deterministic_actor(), metadata, path)


@pytest.fixture(scope="module")
def robo_rl_export(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, PolicyIR, HostPolicy]:
    path = _robo_rl_quadrotor_onnx(tmp_path_factory.mktemp("robo_rl") / "policy.onnx")
    ir = load_policy(path)
    assert ir.obs_dim == QUADROTOR_OBS, "quadrotor/hover changed its observation; update QUADROTOR_OBS"
    return path, ir, build_host(generate_c(ir), tmp_path_factory.mktemp("robo_rl_build"))


def test_robo_rl_export_reads_as_normalizer_mlp_and_action_scaling(
    robo_rl_export: tuple[Path, PolicyIR, HostPolicy],
) -> None:
    _, ir, _ = robo_rl_export
    kinds = [type(layer).__name__ for layer in ir.layers]
    assert kinds == [
        "Elementwise",
        "Elementwise",
        "Clip",
        "Dense",
        "Activation",
        "Dense",
        "Activation",
        "Dense",
        "Clip",
        "Elementwise",
        "Elementwise",
    ]
    sub, div, clip = ir.layers[:3]
    assert isinstance(sub, Elementwise) and sub.op == "sub" and not sub.constant_first
    assert isinstance(div, Elementwise) and div.op == "div"
    assert isinstance(clip, Clip) and clip.low == -clip.high
    assert [layer.weight.shape for layer in ir.dense_layers] == [(64, QUADROTOR_OBS), (64, 64), (4, 64)]
    assert all(isinstance(layer, Activation) and layer.kind == "elu" for layer in (ir.layers[4], ir.layers[6]))
    assert isinstance(ir.layers[3], Dense) and ir.obs_dim == QUADROTOR_OBS and ir.action_dim == 4
    assert ir.info.task == "quadrotor/hover" and ir.info.dt == pytest.approx(0.01)
    assert ir.info.obs_names[0] == "position_error_x" and ir.info.obs_units[0] == "m"
    assert ir.info.action_names == ("rotor_0", "rotor_1", "rotor_2", "rotor_3")
    assert ir.info.action_low == (-1.0,) * 4 and ir.info.git_hash == "f" * 40


def test_robo_rl_export_matches_onnxruntime(robo_rl_export: tuple[Path, PolicyIR, HostPolicy]) -> None:
    path, _, host = robo_rl_export
    obs = np.random.default_rng(3).normal(0.0, 3.0, (2000, QUADROTOR_OBS)).astype(np.float32)
    expected = _onnxruntime(path, obs)
    actions, codes = host(obs)
    assert (codes == 0).all()
    assert _relative_error(actions, expected) <= TOLERANCE
    # The sample exercises both action clip bounds and the interior.
    assert (expected == -1).any() and (expected == 1).any() and (np.abs(expected) < 0.9).any()


def _sb3_style_model(rng: np.random.Generator) -> onnx.ModelProto:
    """What an SB3 MlpPolicy actor looks like after torch.onnx.export: Flatten, then MatMul+Add with Tanh
    between, a final Tanh squash and a Clip, with Constant nodes for the clip bounds."""
    builder = _GraphBuilder()
    builder.node("Flatten", ["obs"], axis=1)
    sizes = (11, 64, 64, 3)
    for k in range(3):
        builder.dense(rng, sizes[k], sizes[k + 1], "matmul_add")
        builder.node("Tanh", [builder.tail])
    for name, value in (("low", -0.9), ("high", 0.9)):
        builder.nodes.append(
            helper.make_node("Constant", [], [name], name=f"const_{name}", value=_tensor("v", np.float32(value)))
        )
    builder.node("Clip", [builder.tail, "low", "high"])
    builder.node("Identity", [builder.tail])
    return builder.finish(11, 3)


def test_sb3_style_graph_matches_onnxruntime(tmp_path: Path) -> None:
    model = _sb3_style_model(np.random.default_rng(5))
    ir = load_policy(model)
    assert [type(layer).__name__ for layer in ir.layers] == [*["Dense", "Activation"] * 3, "Clip"]
    obs = np.random.default_rng(6).normal(0, 2, (500, 11)).astype(np.float32)
    actions, codes = build_host(generate_c(ir, prefix="sb3"), tmp_path)(obs)
    assert (codes == 0).all()
    assert _relative_error(actions, _onnxruntime(model, obs)) <= TOLERANCE


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("position", [0, 11, QUADROTOR_OBS - 1])
def test_non_finite_observation_returns_the_error_code_and_leaves_action_untouched(
    robo_rl_export: tuple[Path, PolicyIR, HostPolicy], value: float, position: int
) -> None:
    _, _, host = robo_rl_export
    obs = np.random.default_rng(position).normal(0, 1, (3, QUADROTOR_OBS)).astype(np.float32)
    obs[1, position] = value
    actions, codes = host(obs, fill=123.0)
    assert codes.tolist() == [0, 1, 0]
    assert (actions[1] == 123.0).all()
    assert np.isfinite(actions[[0, 2]]).all() and (np.abs(actions[[0, 2]]) <= 1.0).all()


def test_largest_finite_observations_are_accepted(robo_rl_export: tuple[Path, PolicyIR, HostPolicy]) -> None:
    path, _, host = robo_rl_export
    big = np.finfo(np.float32).max
    obs = np.resize(np.float32([big, -big, 0.0]), (1, QUADROTOR_OBS))
    actions, codes = host(obs)
    assert codes.tolist() == [0]
    np.testing.assert_allclose(actions, _onnxruntime(path, obs), rtol=0, atol=TOLERANCE)


@pytest.fixture(scope="module")
def activation_library(tmp_path_factory: pytest.TempPathFactory) -> dict[str, HostPolicy]:
    """One policy per activation that needs e^x, applied elementwise to a 1001-wide observation."""
    models = {}
    for op, attributes in (("Elu", {"alpha": 1.0}), ("Elu", {"alpha": 0.3}), ("Sigmoid", {}), ("Tanh", {})):
        name = f"{op.lower()}{len(models)}"
        node = helper.make_node(op, ["obs"], ["action"], name=name, **attributes)
        models[name] = _model([node], [], ACTIVATION_GRID.size, ACTIVATION_GRID.size)
    sources = [generate_c(load_policy(model), prefix=name) for name, model in models.items()]
    return build_host_library(sources, tmp_path_factory.mktemp("activations"))


ACTIVATION_GRID = np.concatenate(
    [np.linspace(-100, 100, 801), np.geomspace(1e-8, 10, 100), -np.geomspace(1e-8, 10, 98), [0.0, -87.0, -87.5]]
).astype(np.float32)


def test_activations_match_float64_over_their_whole_range(activation_library: dict[str, HostPolicy]) -> None:
    """The generated e^x-based ELU, sigmoid and tanh against float64 numpy, from -100 to 100 and near 0."""
    x = ACTIVATION_GRID.astype(np.float64)
    expected = {
        "elu0": np.where(x > 0, x, np.expm1(x)),
        "elu1": np.where(x > 0, x, 0.3 * np.expm1(x)),
        "sigmoid2": 1 / (1 + np.exp(-x)),
        "tanh3": np.tanh(x),
    }
    for name, reference in expected.items():
        got, codes = activation_library[name](ACTIVATION_GRID)
        assert int(codes) == 0
        error = np.abs(got.astype(np.float64) - reference)
        assert error.max() <= 2e-7, (name, float(x[np.argmax(error)]))
        tiny = np.abs(reference) > 1e-30  # relative accuracy where the value is tiny: sigmoid's left tail
        assert (error[tiny] / np.abs(reference[tiny])).max() <= (2e-6 if name == "sigmoid2" else 1.0), name


def _sources(robo_rl_export: tuple[Path, PolicyIR, HostPolicy]) -> CSources:
    return generate_c(robo_rl_export[1], prefix="quad")


def test_header_carries_the_contract_and_metadata(robo_rl_export: tuple[Path, PolicyIR, HostPolicy]) -> None:
    sources = _sources(robo_rl_export)
    header = sources.header
    assert sources.header_name == "quad_policy.h" and sources.source_name == "quad_policy.c"
    for line in (
        "#ifndef QUAD_POLICY_H_",
        'extern "C" {',
        "#define QUAD_OK 0",
        "#define QUAD_ERR_NONFINITE 1",
        f"#define QUAD_OBS_DIM {QUADROTOR_OBS}",
        "#define QUAD_ACTION_DIM 4",
        "#define QUAD_DT 0.01f",
        '#define QUAD_TASK "quadrotor/hover"',
        f'#define QUAD_GIT_HASH "{"f" * 40}"',
        "#define QUAD_OBS_POSITION_ERROR_X 0",
        "#define QUAD_ACTION_ROTOR_3 3",
        "#define QUAD_ACTION_LOW {-1.0f, -1.0f, -1.0f, -1.0f}",
        "int quad_policy(const float *obs, float *action);",
    ):
        assert line in header, line
    assert re.search(r"\[ 0\] position_error_x \[m\] \(-inf, inf\)", header)
    assert re.search(r"\[ 3\] rotor_3 \[1\] \(-1, 1\)", header)
    assert "#include" not in header


def test_source_uses_no_heap_and_no_library_beyond_math(robo_rl_export: tuple[Path, PolicyIR, HostPolicy]) -> None:
    source = _sources(robo_rl_export).source
    includes = {'"quad_policy.h"', "<float.h>", "<math.h>", "<stdint.h>"}  # freestanding, except math.h
    assert set(re.findall(r"#include\s+(\S+)", source)) == includes
    assert not re.search(r"\b(malloc|calloc|free|printf|memcpy|double|expf|expm1f|tanhf)\b", source)
    assert source.count("static const float quad_stage") == 3 * 2 + 4  # 3 weights + 3 biases + 4 vectors
    assert "static float quad_buffer0[64];" in source and "static float quad_buffer1[64];" in source


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")
def test_header_compiles_as_cxx(robo_rl_export: tuple[Path, PolicyIR, HostPolicy], tmp_path: Path) -> None:
    header, _ = _sources(robo_rl_export).write(tmp_path)
    main = tmp_path / "main.cpp"
    main.write_text(
        f'#include "{header.name}"\nint main() {{ float o[QUAD_OBS_DIM] = {{}}, a[4]; return quad_policy(o, a); }}\n'
    )
    result = subprocess.run(
        ["g++", "-std=c++11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", str(main)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
