"""Camera policies to ONNX: export a `CameraPolicy` with one named input per camera, feed it, check its parity.

The graph (`robo_rl.export.onnx.export_artifact`) takes `obs` float32 `(batch, obs_dim)` and each camera's frames
as the camera sends them, uint8 `(batch, height, width, channels)`, under the camera's name. onnxruntime matches
inputs by name, so a caller that mixes two cameras up is caught only where their shapes differ; `camera_feeds`
checks every input against the artifact by name, dtype and shape before anything runs, and says which camera is
wrong and how.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from robo_rl.artifact import PolicyArtifact
from robo_rl.export.onnx import ACTION_OUTPUT, OBS_INPUT, PolicyMetadata, export_onnx, read_metadata
from robo_rl.image_spec import STATE_KEY, ImageSpec
from robo_rl.modules.camera_policy import CameraPolicy


def export_camera_policy(policy: CameraPolicy, metadata: PolicyMetadata, path: Path) -> Path:
    """Write `policy` (state + frames -> env action, clipped and scaled by its actor) to `path` as schema-4
    `policy.onnx`: the cameras in `metadata.images` are the policy's own (`policy.specs`), so a caller need not
    repeat them; metadata that names other cameras is refused (ValueError), since the file would then describe
    inputs its weights were not trained on."""
    if metadata.images and metadata.images != policy.specs:
        names = [spec.name for spec in metadata.images]
        raise ValueError(f"metadata.images {names} are not the policy's cameras {[s.name for s in policy.specs]}")
    return export_onnx(policy, replace(metadata, images=policy.specs), path)


def camera_feeds(
    artifact: PolicyArtifact, state: np.ndarray, frames: Mapping[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """The onnxruntime input dict of a camera policy: `state` `(batch, obs_dim)` as float32 under `obs`, each
    camera's uint8 frames under its name. ValueError, naming the input, for a missing or unknown camera, a
    frame that is not uint8, or a shape other than `(batch, height, width, channels)` of its spec."""
    state = np.asarray(state)
    if state.ndim != 2 or state.shape[1] != artifact.obs.dim:
        raise ValueError(f"input '{OBS_INPUT}': expected (batch, {artifact.obs.dim}), got {state.shape}")
    expected = {spec.name for spec in artifact.images}
    if set(frames) != expected:
        missing, unknown = sorted(expected - set(frames)), sorted(set(frames) - expected)
        raise ValueError(f"camera inputs: missing {missing}, unknown {unknown} (the policy takes {_names(artifact)})")
    feeds = {OBS_INPUT: state.astype(np.float32, copy=False)}
    for spec in artifact.images:
        feeds[spec.name] = _checked_frames(spec, np.asarray(frames[spec.name]), batch=state.shape[0])
    return feeds


def _checked_frames(spec: ImageSpec, frames: np.ndarray, batch: int) -> np.ndarray:
    """`frames` unchanged if they are `spec`'s uint8 `(batch, H, W, C)`; ValueError naming the camera otherwise.
    Frames are not cast: a float frame in [0, 1] cast to uint8 would be black, so it is refused instead."""
    shape = (batch, *spec.shape)
    if frames.dtype != np.uint8:
        raise ValueError(f"camera '{spec.name}': expected uint8 frames, got {frames.dtype}")
    if frames.shape != shape:
        raise ValueError(f"camera '{spec.name}': expected (batch, height, width, channels) {shape}, got {frames.shape}")
    return frames


def _names(artifact: PolicyArtifact) -> list[str]:
    return [spec.name for spec in artifact.images]


def sample_camera_inputs(
    specs: tuple[ImageSpec, ...], obs_dim: int, batch: int, seed: int = 0
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Random inputs of a camera policy: a standard normal state `(batch, obs_dim)` and uniform uint8 frames per
    camera over the whole 0..255 range (the graph's /255 and the convolutions see every byte value)."""
    generator = torch.Generator().manual_seed(seed)
    state = torch.randn(batch, obs_dim, generator=generator)
    frames = {
        spec.name: torch.randint(0, 256, (batch, *spec.shape), generator=generator, dtype=torch.uint8) for spec in specs
    }
    return state, frames


def camera_parity(policy: CameraPolicy, path: Path, state: torch.Tensor, frames: Mapping[str, torch.Tensor]) -> float:
    """Max absolute difference between torch `policy` and onnxruntime running the file at `path` on `state`
    `(batch, obs_dim)` and `frames` (camera name -> uint8 `(batch, H, W, C)`); the inputs are fed by the names
    the file's metadata lists (`camera_feeds`)."""
    import onnxruntime as ort

    artifact = PolicyArtifact.from_props(read_metadata(path))
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    with torch.no_grad():
        expected = policy.eval().to("cpu").act({STATE_KEY: state, **frames}).numpy()
    arrays = {name: frame.cpu().numpy() for name, frame in frames.items()}
    got = session.run([ACTION_OUTPUT], camera_feeds(artifact, state.cpu().numpy(), arrays))[0]
    return float(np.max(np.abs(expected - got)))
