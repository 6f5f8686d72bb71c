"""Reading ONNX graphs into the layer IR: each supported operator form, constant folding, metadata, and the
errors for what is not supported (naming the operator and the node)."""

from __future__ import annotations

import json
import math

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from robo_rl.firmware_export.evaluate import evaluate
from robo_rl.firmware_export.ir import Activation, Clip, Dense, Elementwise
from robo_rl.firmware_export.onnx_ops import UnsupportedGraphError, UnsupportedOperatorError
from robo_rl.firmware_export.onnx_reader import load_policy

RNG = np.random.default_rng(0)


def _tensor(name: str, values: object) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(values, dtype=np.float32), name)


def _model(
    nodes: list[onnx.NodeProto],
    initializers: list[onnx.TensorProto],
    inputs: dict[str, int],
    outputs: dict[str, int],
    opset: int = 18,
    props: dict[str, str] | None = None,
) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "policy",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["batch", w]) for n, w in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["batch", w]) for n, w in outputs.items()],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    if props:
        helper.set_model_props(model, props)
    onnx.checker.check_model(model)
    return model


def _node(op: str, inputs: list[str], output: str, **attributes: object) -> onnx.NodeProto:
    return helper.make_node(op, inputs, [output], name=f"{op.lower()}_node_{output}", **attributes)


def _check_against_onnxruntime(model: onnx.ModelProto, obs: np.ndarray | dict[str, np.ndarray]) -> None:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = obs if isinstance(obs, dict) else {session.get_inputs()[0].name: obs}
    expected = session.run(None, feeds)[0]
    ir = load_policy(model)
    concatenated = np.concatenate([feeds[name] for name, _ in ir.info.inputs], axis=1)
    np.testing.assert_allclose(evaluate(ir, concatenated), expected, rtol=1e-6, atol=1e-6)


def _obs(width: int, rows: int = 16) -> np.ndarray:
    return RNG.normal(0, 2, (rows, width)).astype(np.float32)


@pytest.mark.parametrize("trans_b", [0, 1])
def test_gemm_with_alpha_beta_and_either_weight_layout(trans_b: int) -> None:
    weight = RNG.normal(size=(5, 3)).astype(np.float32)  # (out, in)
    bias = RNG.normal(size=(1, 5)).astype(np.float32)
    stored = weight if trans_b else weight.T
    nodes = [_node("Gemm", ["obs", "W", "b"], "action", transB=trans_b, alpha=0.5, beta=2.0)]
    model = _model(nodes, [_tensor("W", stored), _tensor("b", bias)], {"obs": 3}, {"action": 5})
    ir = load_policy(model)
    (dense,) = ir.layers
    assert isinstance(dense, Dense) and dense.weight.shape == (5, 3)
    np.testing.assert_allclose(dense.weight, 0.5 * weight, rtol=1e-7)
    np.testing.assert_allclose(dense.bias, 2.0 * bias[0], rtol=1e-7)
    _check_against_onnxruntime(model, _obs(3))


@pytest.mark.parametrize("bias_first", [False, True])
def test_matmul_followed_by_add_becomes_one_dense_layer(bias_first: bool) -> None:
    weight, bias = RNG.normal(size=(4, 6)), RNG.normal(size=6)
    add_inputs = ["b", "h"] if bias_first else ["h", "b"]
    nodes = [_node("MatMul", ["obs", "W"], "h"), _node("Add", add_inputs, "action")]
    model = _model(nodes, [_tensor("W", weight), _tensor("b", bias)], {"obs": 4}, {"action": 6})
    (dense,) = load_policy(model).layers
    assert isinstance(dense, Dense) and dense.weight.shape == (6, 4)
    np.testing.assert_allclose(dense.bias, bias.astype(np.float32))
    _check_against_onnxruntime(model, _obs(4))


def _ints(name: str, values: list[int]) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(values, dtype=np.int64), name)


@pytest.mark.parametrize(
    ("starts", "ends", "axes", "steps", "rows"),
    [
        ([0], [3], [1], None, [0, 1, 2]),  # SAC's deterministic actor: the mean half of mean and log-std
        ([2], [2**62], [-1], [1], [2, 3, 4, 5]),  # an open end, as torch exports `x[:, 2:]`
        ([-1], [-(2**62)], [1], [-2], [5, 3, 1]),  # negative start and step
    ],
)
def test_slice_of_a_gemms_features_keeps_only_those_rows(
    starts: list[int], ends: list[int], axes: list[int], steps: list[int] | None, rows: list[int]
) -> None:
    weight, bias = RNG.normal(size=(6, 4)).astype(np.float32), RNG.normal(size=6).astype(np.float32)
    arguments = [_ints("starts", starts), _ints("ends", ends), _ints("axes", axes)]
    arguments += [_ints("steps", steps)] if steps else []
    names = ["h", *(t.name for t in arguments)]
    nodes = [_node("Gemm", ["obs", "W", "b"], "h", transB=1), _node("Slice", names, "s")]
    nodes.append(_node("Tanh", ["s"], "action"))
    model = _model(nodes, [_tensor("W", weight), _tensor("b", bias), *arguments], {"obs": 4}, {"action": len(rows)})
    dense, tanh = load_policy(model).layers
    assert isinstance(dense, Dense) and isinstance(tanh, Activation)
    np.testing.assert_array_equal(dense.weight, weight[rows])
    np.testing.assert_array_equal(dense.bias, bias[rows])
    _check_against_onnxruntime(model, _obs(4))


def test_slice_with_attributes_before_opset_10() -> None:
    weight, bias = RNG.normal(size=(5, 3)).astype(np.float32), np.zeros(5, np.float32)
    nodes = [_node("Gemm", ["obs", "W", "b"], "h", transB=1)]
    nodes.append(_node("Slice", ["h"], "action", starts=[1], ends=[4], axes=[1]))
    model = _model(nodes, [_tensor("W", weight), _tensor("b", bias)], {"obs": 3}, {"action": 3}, opset=9)
    (dense,) = load_policy(model).layers
    assert isinstance(dense, Dense)
    np.testing.assert_array_equal(dense.weight, weight[1:4])
    _check_against_onnxruntime(model, _obs(3))


def test_slice_of_a_matmul_takes_the_bias_of_the_following_add() -> None:
    weight, bias = RNG.normal(size=(4, 6)).astype(np.float32), RNG.normal(size=2).astype(np.float32)
    slicing = [_ints("starts", [1]), _ints("ends", [3]), _ints("axes", [1])]
    nodes = [
        _node("MatMul", ["obs", "W"], "h"),
        _node("Slice", ["h", "starts", "ends", "axes"], "s"),
        _node("Add", ["s", "b"], "action"),
    ]
    model = _model(nodes, [_tensor("W", weight), _tensor("b", bias), *slicing], {"obs": 4}, {"action": 2})
    (dense,) = load_policy(model).layers
    assert isinstance(dense, Dense) and dense.weight.shape == (2, 4)
    np.testing.assert_array_equal(dense.bias, bias)
    _check_against_onnxruntime(model, _obs(4))


@pytest.mark.parametrize(
    ("first", "axes", "reason"),
    [
        ("Relu", [1], "only a Slice of a Dense layer's outputs"),  # selecting after a pointwise layer
        ("Gemm", [0], r"axes \[0\]; only the feature axis"),  # the batch axis
    ],
)
def test_slices_that_do_not_fold_into_a_dense_layer_are_rejected(first: str, axes: list[int], reason: str) -> None:
    head = _node("Gemm", ["obs", "W"], "h", transB=1) if first == "Gemm" else _node("Relu", ["obs"], "h")
    slicing = [_ints("starts", [0]), _ints("ends", [2]), _ints("axes", axes)]
    nodes = [head, _node("Slice", ["h", "starts", "ends", "axes"], "action")]
    model = _model(nodes, [_tensor("W", np.eye(3)), *slicing], {"obs": 3}, {"action": 2})
    with pytest.raises(UnsupportedOperatorError, match=rf"^Slice node 'slice_node_action': {reason}"):
        load_policy(model)


def test_add_after_a_biased_gemm_stays_a_separate_layer() -> None:
    nodes = [_node("Gemm", ["obs", "W", "b"], "h", transB=1), _node("Add", ["h", "c"], "action")]
    inits = [_tensor("W", RNG.normal(size=(2, 3))), _tensor("b", [1.0, 2.0]), _tensor("c", [0.5, -0.5])]
    model = _model(nodes, inits, {"obs": 3}, {"action": 2})
    layers = load_policy(model).layers
    assert [type(layer) for layer in layers] == [Dense, Elementwise]
    _check_against_onnxruntime(model, _obs(3))


@pytest.mark.parametrize(
    ("op", "attributes", "kind", "alpha"),
    [
        ("Relu", {}, "relu", 0.0),
        ("Tanh", {}, "tanh", 0.0),
        ("Sigmoid", {}, "sigmoid", 0.0),
        ("Elu", {}, "elu", 1.0),
        ("Elu", {"alpha": 0.3}, "elu", 0.3),
        ("LeakyRelu", {}, "leaky_relu", 0.01),
        ("LeakyRelu", {"alpha": 0.2}, "leaky_relu", 0.2),
    ],
)
def test_activations_with_their_default_and_given_alpha(op: str, attributes: dict, kind: str, alpha: float) -> None:
    model = _model([_node(op, ["obs"], "action", **attributes)], [], {"obs": 7}, {"action": 7})
    (layer,) = load_policy(model).layers
    assert isinstance(layer, Activation) and layer.kind == kind and layer.alpha == pytest.approx(alpha)
    _check_against_onnxruntime(model, _obs(7))


def test_clip_bounds_as_attributes_in_opset_6() -> None:
    model = _model([_node("Clip", ["obs"], "action", min=-0.5, max=2.0)], [], {"obs": 3}, {"action": 3}, opset=6)
    assert load_policy(model).layers == (Clip("clip_node_action", -0.5, 2.0),)
    unbounded = _model([_node("Clip", ["obs"], "action", max=1.0)], [], {"obs": 3}, {"action": 3}, opset=6)
    assert load_policy(unbounded).layers[0].low == -math.inf


def test_clip_bounds_as_inputs_with_one_left_out() -> None:
    nodes = [_node("Clip", ["obs", "", "hi"], "action")]
    model = _model(nodes, [_tensor("hi", 0.25)], {"obs": 3}, {"action": 3})
    (clip,) = load_policy(model).layers
    assert isinstance(clip, Clip) and clip.low == -math.inf and clip.high == 0.25
    _check_against_onnxruntime(model, _obs(3))


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("constant_first", [False, True])
@pytest.mark.parametrize("shape", [(), (1,), (4,), (1, 4)])
def test_elementwise_with_constant_on_either_side(op: str, constant_first: bool, shape: tuple[int, ...]) -> None:
    constant = RNG.uniform(0.5, 2.0, shape).astype(np.float32)
    inputs = ["c", "obs"] if constant_first else ["obs", "c"]
    model = _model([_node(op, inputs, "action")], [_tensor("c", constant)], {"obs": 4}, {"action": 4})
    (layer,) = load_policy(model).layers
    assert isinstance(layer, Elementwise) and layer.op == op.lower()
    assert layer.constant.shape == (() if constant.size == 1 else (4,))
    assert layer.constant_first == (constant_first and op in ("Sub", "Div"))
    _check_against_onnxruntime(model, _obs(4))


def test_constant_nodes_and_constant_subgraphs_are_folded() -> None:
    """robo_rl-like normalizer whose std is computed in the graph: Sqrt(var + eps), from Constant nodes."""
    var = RNG.uniform(0.1, 2.0, 5).astype(np.float32)
    nodes = [
        helper.make_node("Constant", [], ["eps"], name="eps_const", value=_tensor("v", 1e-8)),
        _node("Add", ["var", "eps"], "var_eps"),
        _node("Sqrt", ["var_eps"], "std"),
        _node("Div", ["obs", "std"], "action"),
    ]
    model = _model(nodes, [_tensor("var", var)], {"obs": 5}, {"action": 5})
    (layer,) = load_policy(model).layers
    assert isinstance(layer, Elementwise) and layer.op == "div"
    np.testing.assert_allclose(layer.constant, np.sqrt(var + np.float32(1e-8)), rtol=1e-6)
    _check_against_onnxruntime(model, _obs(5))


def test_identity_cast_flatten_and_reshape_that_keep_the_shape_are_dropped() -> None:
    nodes = [
        _node("Identity", ["obs"], "a"),
        _node("Cast", ["a"], "b", to=TensorProto.FLOAT),
        _node("Flatten", ["b"], "c", axis=1),
        _node("Reshape", ["c", "shape"], "d"),
        _node("Relu", ["d"], "action"),
    ]
    shape = numpy_helper.from_array(np.array([-1, 6], dtype=np.int64), "shape")
    model = _model(nodes, [shape], {"obs": 6}, {"action": 6})
    assert [type(layer) for layer in load_policy(model).layers] == [Activation]
    _check_against_onnxruntime(model, _obs(6))


def test_concat_of_graph_inputs_becomes_one_observation_in_concat_order() -> None:
    nodes = [_node("Concat", ["b", "a"], "x", axis=1), _node("Gemm", ["x", "W"], "action", transB=1)]
    model = _model(nodes, [_tensor("W", RNG.normal(size=(2, 5)))], {"a": 2, "b": 3}, {"action": 2})
    ir = load_policy(model)
    assert ir.info.inputs == (("b", 3), ("a", 2)) and ir.obs_dim == 5
    _check_against_onnxruntime(model, {"a": _obs(2), "b": _obs(3)})


def test_metadata_is_read_with_infinite_bounds() -> None:
    props = {
        "robo_rl.obs_names": json.dumps(["x", "v"]),
        "robo_rl.obs_units": json.dumps(["m", "m/s"]),
        "robo_rl.obs_low": json.dumps([-1.0, -math.inf]),
        "robo_rl.obs_high": json.dumps([1.0, math.inf]),
        "robo_rl.action_names": json.dumps(["force"]),
        "robo_rl.action_units": json.dumps(["N"]),
        "robo_rl.action_low": json.dumps([-2.0]),
        "robo_rl.action_high": json.dumps([2.0]),
        "robo_rl.dt": "0.02",
        "robo_rl.task": "cart",
        "robo_rl.version": "0.1.0",
        "robo_rl.git_hash": "abc",
        "robo_rl.config_hash": "def",
    }
    model = _model(
        [_node("Gemm", ["obs", "W"], "action", transB=1)],
        [_tensor("W", [[1, 2]])],
        {"obs": 2},
        {"action": 1},
        props=props,
    )
    info = load_policy(model).info
    assert info.obs_names == ("x", "v") and info.obs_units == ("m", "m/s")
    assert info.obs_low == (-1.0, -math.inf) and info.obs_high == (1.0, math.inf)
    assert info.action_names == ("force",) and info.action_low == (-2.0,) and info.action_high == (2.0,)
    assert (info.dt, info.task, info.version, info.git_hash, info.config_hash) == (0.02, "cart", "0.1.0", "abc", "def")
    assert info.inputs == (("obs", 2),) and info.output == "action"


def test_missing_metadata_gets_defaults() -> None:
    model = _model([_node("Relu", ["obs"], "action")], [], {"obs": 2}, {"action": 2})
    info = load_policy(model).info
    assert info.obs_names == ("obs_0", "obs_1") and info.action_names == ("action_0", "action_1")
    assert info.obs_low == (-math.inf,) * 2 and info.action_high == (math.inf,) * 2
    assert info.dt is None and info.task is None and info.obs_units == ("", "")


def test_metadata_of_the_wrong_length_names_the_key() -> None:
    props = {"robo_rl.obs_names": json.dumps(["only_one"])}
    model = _model([_node("Relu", ["obs"], "action")], [], {"obs": 2}, {"action": 2}, props=props)
    with pytest.raises(ValueError, match=r"robo_rl\.obs_names: expected a list of 2"):
        load_policy(model)


def test_unsupported_operator_names_op_and_node() -> None:
    nodes = [_node("Relu", ["obs"], "h"), helper.make_node("Softmax", ["h"], ["action"], name="my_softmax")]
    model = _model(nodes, [], {"obs": 3}, {"action": 3})
    with pytest.raises(UnsupportedOperatorError, match=r"Softmax node 'my_softmax': operator not supported") as info:
        load_policy(model)
    assert (info.value.op_type, info.value.node_name) == ("Softmax", "my_softmax")
    assert "Gemm" in str(info.value)  # the message lists what is supported


@pytest.mark.parametrize(
    ("nodes", "inits", "op", "reason"),
    [
        ([_node("Relu", ["obs"], "h"), _node("Tanh", ["obs"], "action")], [], "Tanh", "earlier tensor"),
        ([_node("Relu", ["obs"], "h"), _node("Add", ["h", "obs"], "action")], [], "Add", "more than one operand"),
        ([_node("Mul", ["obs", "obs"], "action")], [], "Mul", "more than one operand"),
        ([_node("Gemm", ["obs", "W"], "action", transA=1)], [_tensor("W", np.eye(3))], "Gemm", "transA=1"),
        ([_node("Sub", ["obs", "c"], "action")], [_tensor("c", [1.0, 2.0])], "Sub", "does not broadcast"),
        ([_node("Flatten", ["obs"], "action", axis=0)], [], "Flatten", "axis=1"),
    ],
)
def test_unsupported_forms_of_supported_operators(nodes: list, inits: list, op: str, reason: str) -> None:
    model = onnx.helper.make_model(
        helper.make_graph(
            nodes,
            "g",
            [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["batch", 3])],
            [helper.make_tensor_value_info("action", TensorProto.FLOAT, None)],
            inits,
        ),
        opset_imports=[helper.make_opsetid("", 18)],
    )
    with pytest.raises(UnsupportedOperatorError, match=rf"^{op} node '{nodes[-1].name}': .*{reason}"):
        load_policy(model)


def test_reshape_that_changes_the_feature_count_is_rejected() -> None:
    shape = numpy_helper.from_array(np.array([-1, 2, 3], dtype=np.int64), "shape")
    model = _model([_node("Reshape", ["obs", "shape"], "action")], [shape], {"obs": 6}, {"action": 6})
    with pytest.raises(UnsupportedOperatorError, match=r"Reshape node 'reshape_node_action': shape \[-1, 2, 3\]"):
        load_policy(model)


def test_graph_with_two_outputs_is_rejected() -> None:
    nodes = [_node("Relu", ["obs"], "a"), _node("Tanh", ["a"], "b")]
    model = _model(nodes, [], {"obs": 2}, {"a": 2, "b": 2})
    with pytest.raises(UnsupportedGraphError, match="2 outputs"):
        load_policy(model)


def test_inputs_not_joined_by_concat_are_rejected() -> None:
    nodes = [_node("Relu", ["a"], "action")]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["batch", 2]) for n in ("a", "b")],
        [helper.make_tensor_value_info("action", TensorProto.FLOAT, ["batch", 2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    with pytest.raises(UnsupportedOperatorError, match="2 inputs; they must first be joined by one Concat"):
        load_policy(model)


def test_widths_follow_the_dense_layers() -> None:
    nodes = [
        _node("Gemm", ["obs", "W1"], "h", transB=1),
        _node("Tanh", ["h"], "t"),
        _node("Gemm", ["t", "W2"], "action", transB=1),
    ]
    inits = [_tensor("W1", np.ones((7, 3))), _tensor("W2", np.ones((2, 7)))]
    ir = load_policy(_model(nodes, inits, {"obs": 3}, {"action": 2}))
    assert ir.widths == (3, 7, 7, 2) and ir.obs_dim == 3 and ir.action_dim == 2
