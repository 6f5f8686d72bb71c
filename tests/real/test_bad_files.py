"""The deploy core's files, bad: a robot profile, a policy.onnx or a ROS parameter file that is truncated, empty,
random, of another kind or of the wrong shape fails with one error line that names the file (the nodes print it
and exit 2, see real/ros/spin.py), never with a library's exception.

Truncations of YAML files cut inside a key (a cut at a line end leaves a shorter valid file); of ONNX files
anywhere.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import onnx
import pytest

import robo_rl
from robo_rl.real.profile import ProfileError, load_profile
from robo_rl.real.ros.params_file import ParamsFileError, check_params_file, params_files
from robo_rl.real.runtime import PolicyFileError, PolicyRuntime, ProfileMismatchError

REPO = Path(robo_rl.__file__).resolve().parents[1]
PROFILE = REPO / "robo_rl" / "real" / "profiles" / "rc_car.yaml"
PARAMS = REPO / "launch" / "params" / "rc_car.yaml"
OTHER_FILES = {
    "config": REPO / "robo_rl" / "configs" / "pendulum_ppo.yaml",
    "launch": REPO / "launch" / "sim_rc_car.launch.yaml",
    "track": REPO / "robo_rl" / "sim" / "rc_car" / "tracks" / "oval.csv",
    "profile": PROFILE,
    "params": PARAMS,
}
YAML_KEY = re.compile(rb"^[ -]*['\"]?([A-Za-z_/*][\w/*.]*)['\"]?:", re.MULTILINE)


def yaml_cuts(data: bytes) -> dict[str, bytes]:
    """The file cut one byte into 8 keys spread over it."""
    starts = [match.start(1) for match in YAML_KEY.finditer(data)]
    picks = sorted({starts[round(i * (len(starts) - 1) / 7)] for i in range(8)})
    return {f"cut-in-key-{i}": data[: at + 1] for i, at in enumerate(picks)}


def binary_cuts(data: bytes) -> dict[str, bytes]:
    return {f"cut-{percent}%": data[: max(1, len(data) * percent // 100)] for percent in (0, 5, 25, 50, 75, 95)}


def generic(kind: str, good: bytes, others: dict[str, bytes]) -> dict[str, bytes]:
    """Empty, random and other kinds' files; truncations are added per kind."""
    corpus = {"empty": b"", "whitespace": b"  \n\n"}
    for size in (16, 1000, len(good)):
        corpus[f"random-{size}"] = random.Random(f"{kind}{size}").randbytes(size)
    corpus |= {f"is-{other}": data for other, data in others.items() if other != kind}
    return corpus


def _others(onnx_file: Path) -> dict[str, bytes]:
    return {kind: path.read_bytes() for kind, path in OTHER_FILES.items()} | {"onnx": onnx_file.read_bytes()}


def _one_line_naming(err: BaseException, name: str) -> None:
    assert "\n" not in str(err) and name in str(err), str(err)


def _assert_all_refused(
    corpus: dict[str, bytes], path: Path, load: Callable[[Path], object], error: type[Exception], named: str
) -> None:
    """Each corpus file, written to `path`, makes `load(path)` raise `error`: one line containing `named`."""
    for label, data in corpus.items():
        path.write_bytes(data)
        try:
            load(path)
        except error as err:
            assert "\n" not in str(err) and named in str(err), f"{label}: {err}"
            continue
        except Exception as err:
            pytest.fail(f"{label}: {type(err).__name__} instead of {error.__name__}: {err}")
        pytest.fail(f"{label}: loaded without error")


# ------------------------------------------------------------------------------------------------ robot profiles

PROFILE_EDITS = {
    "a-list": b"- name: rc_car\n",
    "a-scalar": b"rc_car\n",
    "comments-only": b"# nothing\n",
    "unknown-key": PROFILE.read_bytes() + b"\nspeed: 3\n",
    "wrong-type": PROFILE.read_bytes().replace(b"dt: 0.02", b"dt: fast"),
    "observations-scalar": PROFILE.read_bytes().replace(b"observations:\n", b"observations: 3\nx:\n"),
}


def test_bad_profiles_are_one_line_profile_errors(policy_file: Callable[[str], Path], tmp_path: Path) -> None:
    good = PROFILE.read_bytes()
    corpus = generic("profile", good, _others(policy_file("rc_car"))) | yaml_cuts(good) | PROFILE_EDITS
    _assert_all_refused(corpus, tmp_path / "robot.yaml", load_profile, ProfileError, "robot.yaml")


# ------------------------------------------------------------------------------------------------ policy files


def _edited(source: Path, edit: Callable[[onnx.ModelProto], None]) -> bytes:
    model = onnx.load(str(source))
    edit(model)
    return model.SerializeToString()


def _set_props(**changes: str) -> Callable[[onnx.ModelProto], None]:
    def edit(model: onnx.ModelProto) -> None:
        props = {p.key: p.value for p in model.metadata_props} | {f"robo_rl.{k}": v for k, v in changes.items()}
        del model.metadata_props[:]
        onnx.helper.set_model_props(model, props)

    return edit


def _drop_last_obs_name(model: onnx.ModelProto) -> None:
    names = next(p for p in model.metadata_props if p.key == "robo_rl.obs_names")
    names.value = str(names.value.rsplit(",", 1)[0] + "]")


def _rename_output(model: onnx.ModelProto) -> None:
    old = model.graph.output[0].name
    model.graph.output[0].name = "y"
    for node in model.graph.node:
        node.output[:] = ["y" if name == old else name for name in node.output]


def test_bad_policy_files_are_one_line_policy_errors(policy_file: Callable[[str], Path], tmp_path: Path) -> None:
    source = policy_file("rc_car")
    good = source.read_bytes()
    corpus = generic("onnx", good, _others(source)) | binary_cuts(good)
    corpus |= {
        "dt-not-a-number": _edited(source, _set_props(dt="fast")),
        "obs-names-not-json": _edited(source, _set_props(obs_names="[a, b")),
        "obs-names-one-short": _edited(source, _drop_last_obs_name),
        "output-renamed": _edited(source, _rename_output),
    }
    path = tmp_path / "policy.onnx"
    _assert_all_refused(corpus, path, lambda p: PolicyRuntime(p, load_profile("rc_car")), PolicyFileError, str(path))


def test_a_policy_for_another_profile_names_the_file(policy_file: Callable[[str], Path]) -> None:
    with pytest.raises(ProfileMismatchError) as info:
        PolicyRuntime(policy_file("quadrotor_crazyflie"), load_profile("rc_car"))
    _one_line_naming(info.value, "quadrotor_crazyflie.onnx")


def test_a_graph_narrower_than_its_metadata_is_refused(policy_file: Callable[[str], Path], tmp_path: Path) -> None:
    source = onnx.load(str(policy_file("rc_car")))
    obs_dim = len(load_profile("rc_car").obs_names)
    path = tmp_path / "narrow.onnx"
    action_dim = len(load_profile("rc_car").action_names)
    onnx.save_model(_gemm_policy(obs_dim - 1, action_dim, source.metadata_props), str(path))
    with pytest.raises(PolicyFileError, match=rf"input 'obs' has shape \['batch', {obs_dim - 1}\], its metadata names"):
        PolicyRuntime(path)


def _gemm_policy(obs_dim: int, action_dim: int, props: Sequence[onnx.StringStringEntryProto]) -> onnx.ModelProto:
    """A valid graph `obs (batch, obs_dim)` → `action (batch, action_dim)` carrying the metadata `props`."""
    helper = onnx.helper
    weight = onnx.numpy_helper.from_array(np.zeros((action_dim, obs_dim), np.float32), "w")
    node = helper.make_node("Gemm", ["obs", "w"], ["action"], transB=1)
    inputs = [helper.make_tensor_value_info("obs", onnx.TensorProto.FLOAT, ["batch", obs_dim])]
    outputs = [helper.make_tensor_value_info("action", onnx.TensorProto.FLOAT, ["batch", action_dim])]
    graph = helper.make_graph([node], "policy", inputs, outputs, [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    model.metadata_props.extend(props)
    return model


# ------------------------------------------------------------------------------------------------ parameter files

PARAMS_EDITS = {
    "a-list": b"- ros__parameters: {}\n",
    "a-scalar": b"ros__parameters\n",
    "comments-only": b"# nothing\n",
    "section-scalar": b"/**: 5\n",
    "parameters-list": b"/**:\n  ros__parameters: [1, 2]\n",
    "value-before-parameters": b"/**:\n  x: 1\n  ros__parameters: {a: 1}\n",
}


def test_bad_parameter_files_are_one_line_errors(policy_file: Callable[[str], Path], tmp_path: Path) -> None:
    good = PARAMS.read_bytes()
    others = {kind: data for kind, data in _others(policy_file("rc_car")).items() if kind != "params"}
    corpus = generic("params", good, others) | yaml_cuts(good) | PARAMS_EDITS
    path = tmp_path / "params.yaml"
    _assert_all_refused(corpus, path, check_params_file, ParamsFileError, str(path))


@pytest.mark.parametrize("path", sorted((REPO / "launch" / "params").glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_parameter_files_pass(path: Path) -> None:
    check_params_file(path)


def test_nested_namespaces_and_empty_sections_pass(tmp_path: Path) -> None:
    path = tmp_path / "params.yaml"
    path.write_text("/cf1:\n  policy_node:\n    ros__parameters: {a: [1, 2], b: {c: x}}\n/**:\n  ros__parameters:\n")
    check_params_file(path)


def test_params_files_are_read_from_the_ros_arguments() -> None:
    argv = ["node", "--params-file", "not_ros.yaml", "--ros-args", "-p", "a:=1", "--params-file", "a.yaml"]
    argv += ["-r", "x:=y", "--params-file", "b.yaml", "--", "--params-file", "c.yaml"]
    assert params_files(argv) == [Path("a.yaml"), Path("b.yaml")]


def test_random_profiles_never_raise_anything_else(tmp_path: Path) -> None:
    path = tmp_path / "fuzz.yaml"
    generator = np.random.default_rng(0)
    for _ in range(50):
        path.write_bytes(generator.integers(0, 256, int(generator.integers(1, 200)), dtype=np.uint8).tobytes())
        with pytest.raises(ProfileError) as info:
            load_profile(path)
        _one_line_naming(info.value, "fuzz.yaml")
