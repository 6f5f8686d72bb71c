"""ONNX export of a camera policy: named inputs (state + two cameras), schema-4 metadata, onnxruntime parity at
batch 1 and more, the preprocessing inside the graph, and wrong inputs refused with a message naming them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from robo_rl.artifact import IMAGE_PREPROCESSING, IMAGE_PREPROCESSING_KEY, IMAGES_SCHEMA, PolicyArtifact
from robo_rl.envs import SpaceSpec
from robo_rl.export.camera import camera_feeds, camera_parity, export_camera_policy, sample_camera_inputs
from robo_rl.export.onnx import ACTION_OUTPUT, OBS_INPUT, PolicyMetadata, export_onnx, read_metadata
from robo_rl.image_spec import CameraIntrinsics, ImageSpec
from robo_rl.modules.camera_policy import CameraPolicy
from robo_rl.modules.image_encoder import ObservationEncoder
from robo_rl.modules.squashed_actor import SquashedGaussianActor

STATE_DIM = 5
WRIST = ImageSpec("wrist", 64, 64, 3, CameraIntrinsics.from_fovy(60.0, 64, 64))
FIXED = ImageSpec("fixed", 48, 64, 1)
CAMERAS = (WRIST, FIXED)
ACTION = SpaceSpec(("x", "grip"), (-2.0, 0.0), (2.0, 1.0), ("m/s", "1"))
TOLERANCE = 1e-5


def camera_policy(specs: tuple[ImageSpec, ...] = CAMERAS, seed: int = 0, gain: float = 1.0) -> CameraPolicy:
    """ObservationEncoder + SAC's deterministic actor on its features; `gain` scales the last layer so the tanh
    saturates and the action clip is exercised."""
    torch.manual_seed(seed)
    encoder = ObservationEncoder(STATE_DIM, specs)
    actor = SquashedGaussianActor(encoder.output_dim, ACTION.low_tensor(), ACTION.high_tensor(), hidden=(64, 64))
    with torch.no_grad():
        actor.net[-1].weight.mul_(gain)
    return CameraPolicy(encoder, actor.deterministic_actor()).eval()


def metadata(images: tuple[ImageSpec, ...] = ()) -> PolicyMetadata:
    obs = SpaceSpec.unnamed("obs", STATE_DIM)
    return PolicyMetadata(obs, ACTION, 0.05, "arm/insert", "cfg", "git", images=images)


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    policy = camera_policy(gain=200.0)
    path = export_camera_policy(policy, metadata(), tmp_path_factory.mktemp("camera") / "policy.onnx")
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return {"policy": policy, "path": path, "session": session}


def _run(session: ort.InferenceSession, state: torch.Tensor, frames: dict[str, torch.Tensor]) -> np.ndarray:
    feeds = {OBS_INPUT: state.numpy(), **{name: frame.numpy() for name, frame in frames.items()}}
    return session.run([ACTION_OUTPUT], feeds)[0]


def test_graph_has_one_named_input_per_camera_with_a_dynamic_batch(exported: dict[str, Any]) -> None:
    model = onnx.load(str(exported["path"]), load_external_data=False)
    onnx.checker.check_model(model, full_check=True)
    inputs = {value.name: value.type.tensor_type for value in model.graph.input}
    assert list(inputs) == [OBS_INPUT, "wrist", "fixed"]
    assert [o.name for o in model.graph.output] == [ACTION_OUTPUT]
    expected = {OBS_INPUT: (onnx.TensorProto.FLOAT, [STATE_DIM])}
    expected |= {spec.name: (onnx.TensorProto.UINT8, list(spec.shape)) for spec in CAMERAS}
    batch_names = set()
    for name, (dtype, rest) in expected.items():
        dims = inputs[name].shape.dim
        assert inputs[name].elem_type == dtype, name
        assert [d.dim_value for d in dims[1:]] == rest, name
        assert dims[0].dim_param and not dims[0].HasField("dim_value"), name
        batch_names.add(dims[0].dim_param)
    assert len(batch_names) == 1  # one batch dimension shared by every input


def test_metadata_states_the_cameras_and_the_preprocessing(exported: dict[str, Any]) -> None:
    props = read_metadata(exported["path"])
    artifact = PolicyArtifact.from_props(props)
    assert artifact.images == CAMERAS  # intrinsics included
    assert artifact.schema == IMAGES_SCHEMA and props["robo_rl.schema"] == str(IMAGES_SCHEMA)
    assert props[IMAGE_PREPROCESSING_KEY] == IMAGE_PREPROCESSING
    assert artifact.obs.dim == STATE_DIM and artifact.action == ACTION


@pytest.mark.parametrize("batch", [1, 9])
def test_onnxruntime_matches_torch(exported: dict[str, Any], batch: int) -> None:
    state, frames = sample_camera_inputs(CAMERAS, STATE_DIM, batch, seed=batch)
    with torch.no_grad():
        expected = exported["policy"](state, frames["wrist"], frames["fixed"]).numpy()
    got = _run(exported["session"], state, frames)
    assert got.shape == (batch, ACTION.dim)
    np.testing.assert_allclose(got, expected, rtol=0, atol=TOLERANCE)
    assert camera_parity(exported["policy"], exported["path"], state, frames) <= TOLERANCE


def test_actions_are_clipped_and_scaled_to_the_bounds(exported: dict[str, Any]) -> None:
    state, frames = sample_camera_inputs(CAMERAS, STATE_DIM, 256, seed=7)
    got = _run(exported["session"], state, frames)
    low, high = np.array(ACTION.low, np.float32), np.array(ACTION.high, np.float32)
    assert ((got >= low) & (got <= high)).all()
    assert np.isclose(got, low, atol=1e-6).any() and np.isclose(got, high, atol=1e-6).any()
    assert (np.abs(got[:, 0]) < 1.9).any()  # and the interior


def test_preprocessing_is_inside_the_graph(exported: dict[str, Any]) -> None:
    """The graph takes the camera's bytes: the same frames as float32 in [0, 1] (what a deploy side that
    normalized itself would send) are refused (onnxruntime does not say which input; `camera_feeds` does), and
    every camera's bytes change the action."""
    state, frames = sample_camera_inputs(CAMERAS, STATE_DIM, 4, seed=3)
    as_float = {name: frame.float() / 255.0 for name, frame in frames.items()}
    with pytest.raises(ort.capi.onnxruntime_pybind11_state.InvalidArgument, match=r"expected: \(tensor\(uint8\)\)"):
        _run(exported["session"], state, as_float)
    base = _run(exported["session"], state, frames)
    for name in frames:
        inverted = dict(frames, **{name: 255 - frames[name]})
        assert np.abs(_run(exported["session"], state, inverted) - base).max() > 1e-3, name


def test_onnxruntime_refuses_swapped_cameras(exported: dict[str, Any]) -> None:
    state, frames = sample_camera_inputs(CAMERAS, STATE_DIM, 1)
    swapped = {"wrist": frames["fixed"], "fixed": frames["wrist"]}
    with pytest.raises(
        ort.capi.onnxruntime_pybind11_state.InvalidArgument, match="invalid dimensions for input: wrist"
    ):
        _run(exported["session"], state, swapped)


def test_camera_feeds_name_the_wrong_input(exported: dict[str, Any]) -> None:
    artifact = PolicyArtifact.from_props(read_metadata(exported["path"]))
    state, frames = sample_camera_inputs(CAMERAS, STATE_DIM, 2)
    arrays = {name: frame.numpy() for name, frame in frames.items()}
    feeds = camera_feeds(artifact, state.numpy(), arrays)
    assert list(feeds) == [OBS_INPUT, "wrist", "fixed"]
    swapped = {"wrist": arrays["fixed"], "fixed": arrays["wrist"]}
    with pytest.raises(ValueError, match=r"camera 'wrist': expected .* \(2, 64, 64, 3\), got \(2, 48, 64, 1\)"):
        camera_feeds(artifact, state.numpy(), swapped)
    with pytest.raises(ValueError, match=r"missing \['fixed'\], unknown \['front'\]"):
        camera_feeds(artifact, state.numpy(), {"wrist": arrays["wrist"], "front": arrays["fixed"]})
    with pytest.raises(ValueError, match="camera 'fixed': expected uint8 frames, got float32"):
        camera_feeds(artifact, state.numpy(), dict(arrays, fixed=arrays["fixed"].astype(np.float32)))
    with pytest.raises(ValueError, match=r"input 'obs': expected \(batch, 5\)"):
        camera_feeds(artifact, state.numpy()[:, :3], arrays)
    with pytest.raises(ValueError, match=r"camera 'wrist': .*\(2, 64, 64, 3\), got \(1, 64, 64, 3\)"):
        camera_feeds(artifact, state.numpy(), dict(arrays, wrist=arrays["wrist"][:1]))


def test_export_refuses_cameras_the_policy_does_not_have(tmp_path: Path) -> None:
    policy = camera_policy((WRIST,))
    with pytest.raises(ValueError, match=r"metadata.images \['fixed'\] are not the policy's cameras \['wrist'\]"):
        export_camera_policy(policy, metadata((FIXED,)), tmp_path / "a.onnx")
    with pytest.raises(ValueError, match=r"the policy's cameras \[wrist 64x64x3\] are not the metadata's \(none\)"):
        export_onnx(policy, metadata(), tmp_path / "b.onnx")
    assert not list(tmp_path.iterdir())


def test_export_refuses_a_camera_named_like_the_state_input(tmp_path: Path) -> None:
    policy = camera_policy((replace(FIXED, name=OBS_INPUT),))
    with pytest.raises(ValueError, match="camera 'obs' cannot be exported"):
        export_camera_policy(policy, metadata(), tmp_path / "policy.onnx")


def test_cli_export_of_a_run_exports_a_camera_policy_with_its_cameras(tmp_path: Path) -> None:
    """`robo-rl export RUN` goes through `export_checked`: a CameraPolicy gets its cameras and a parity check on
    random frames; a vector actor keeps the state-only path (one input)."""
    from robo_rl.cli.export import CAMERA_PARITY_SAMPLES, export_checked

    path, error, samples = export_checked(camera_policy(), metadata(), tmp_path / "camera.onnx")
    assert PolicyArtifact.from_props(read_metadata(path)).images == CAMERAS
    assert error <= TOLERANCE and samples == CAMERA_PARITY_SAMPLES
    vector = torch.nn.Linear(STATE_DIM, ACTION.dim)
    path, error, _ = export_checked(vector, metadata(), tmp_path / "vector.onnx")
    assert [i.name for i in onnx.load(str(path)).graph.input] == [OBS_INPUT] and error <= TOLERANCE
