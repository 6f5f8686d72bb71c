"""The C export refuses image policies with one line that says why: a robo_rl camera policy (its metadata lists
the cameras), the same graph with its metadata stripped (uint8 / 4-D inputs), and a vector graph whose metadata
declares cameras; through the CLI, one line on stderr and a non-zero exit, nothing written."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from robo_rl.artifact import IMAGES_KEY
from robo_rl.cli.main import main
from robo_rl.envs import SpaceSpec
from robo_rl.export.camera import export_camera_policy
from robo_rl.export.onnx import PolicyMetadata
from robo_rl.firmware_export.policy_file import read_policy
from robo_rl.firmware_export.vector_only import ImagePolicyError
from robo_rl.image_spec import ImageSpec
from robo_rl.modules.camera_policy import CameraPolicy
from robo_rl.modules.image_encoder import ObservationEncoder
from robo_rl.modules.squashed_actor import SquashedGaussianActor

REFUSAL = "policy has camera inputs (wrist, fixed): the C export handles vector policies only"


@pytest.fixture(scope="module")
def camera_onnx(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A robo_rl camera policy (state 3, wrist 32x32 RGB, fixed 24x32 grey -> 2 actions) as exported."""
    torch.manual_seed(0)
    encoder = ObservationEncoder(3, (ImageSpec("wrist", 32, 32, 3), ImageSpec("fixed", 24, 32, 1)))
    action = SpaceSpec(("steer", "speed"), (-1.0, -1.0), (1.0, 1.0), ("1", "1"))
    low, high = action.low_tensor(), action.high_tensor()
    actor = SquashedGaussianActor(encoder.output_dim, low, high, hidden=(16,)).deterministic_actor()
    obs = SpaceSpec.unnamed("obs", 3)
    metadata = PolicyMetadata(obs, action, 0.05, "arm/insert", "cfg", "git")
    path = tmp_path_factory.mktemp("camera") / "policy.onnx"
    return export_camera_policy(CameraPolicy(encoder, actor), metadata, path)


def _without_metadata(source: Path, path: Path) -> Path:
    """`source` as a foreign file would come: the same graph, no metadata_props."""
    model = onnx.load(str(source))
    del model.metadata_props[:]
    onnx.save_model(model, str(path))
    return path


def _vector_graph(path: Path, props: dict[str, str]) -> Path:
    """A 4 -> 2 linear policy with float `(batch, 4)` input and the metadata `props`."""
    weight = numpy_helper.from_array(np.ones((4, 2), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["obs", "w"], ["action"])],
        "linear",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("action", TensorProto.FLOAT, ["batch", 2])],
        [weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    helper.set_model_props(model, props)
    onnx.save_model(model, str(path))
    return path


def test_camera_policy_is_refused_by_its_metadata(camera_onnx: Path) -> None:
    with pytest.raises(ImagePolicyError) as caught:
        read_policy(camera_onnx)
    assert str(caught.value) == f"{camera_onnx}: {REFUSAL}"


def test_foreign_image_graph_is_refused_by_its_inputs(camera_onnx: Path, tmp_path: Path) -> None:
    path = _without_metadata(camera_onnx, tmp_path / "foreign.onnx")
    with pytest.raises(ImagePolicyError) as caught:
        read_policy(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: policy has image inputs (wrist uint8 [")
    assert "fixed uint8 [" in message and "obs" not in message.split(":", 1)[1]
    assert message.endswith("): the C export handles vector policies only") and "\n" not in message


def test_vector_graph_that_declares_cameras_is_refused(tmp_path: Path) -> None:
    declared = _vector_graph(tmp_path / "declared.onnx", {IMAGES_KEY: '[{"name": "front"}]'})
    with pytest.raises(ImagePolicyError, match=r"camera inputs \(front\): the C export"):
        read_policy(declared)
    garbled = _vector_graph(tmp_path / "garbled.onnx", {IMAGES_KEY: "not json"})
    with pytest.raises(ImagePolicyError, match=r"camera inputs \(unreadable robo_rl.images\)"):
        read_policy(garbled)
    plain = _vector_graph(tmp_path / "plain.onnx", {})
    assert read_policy(plain)[1].obs_dim == 4  # the check passes vector policies through


def test_cli_prints_one_line_and_exits_non_zero(camera_onnx: Path, tmp_path: Path) -> None:
    out_dir = tmp_path / "firmware"
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["export", str(camera_onnx), "--target", "c", "--output", str(out_dir)])
    assert code != 0
    assert err.getvalue() == f"robo-rl export: error: {camera_onnx}: {REFUSAL}\n"
    assert out.getvalue() == ""
    assert not out_dir.exists()
