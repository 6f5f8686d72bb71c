"""Export the deterministic actor (normalizer + network + action clip/scale) to one `policy.onnx` file.

The file's metadata carries everything deployment needs to check that it drives the right robot: observation
names/order/units/bounds, action names/bounds/units, control period, and provenance (config hash, git hash,
robo_rl version), in the keys `robo_rl.artifact` defines. `robo_rl.real` and `robo_rl.firmware_export` read only
this file.

A camera policy (`robo_rl.modules.camera_policy.CameraPolicy`, metadata with `images`) gets one more input per
camera, named after it, uint8 `(batch, height, width, channels)`; the scaling to [0, 1] and the HWC -> CHW reorder
are inside the graph (`robo_rl.artifact.IMAGE_PREPROCESSING`). `robo_rl.export.camera` wraps this with the checks
and parity a camera policy needs.

A policy with memory (`robo_rl.modules.recurrent.RecurrentDeterministicActor`, metadata with `memory`) takes its
state as a second input `h_in` float32 `(batch, size)` and returns the next state as a second output `h_out`;
`onnx_episode_parity` checks it against torch over whole episodes, the state carried and reset as the deploy side
does.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

import robo_rl
from robo_rl.actuator import Actuator
from robo_rl.artifact import PolicyArtifact
from robo_rl.envs import SpaceSpec
from robo_rl.export.flow_metadata import flow_metadata
from robo_rl.image_spec import ImageSpec
from robo_rl.memory_spec import STATE_INPUT, STATE_OUTPUT, MemorySpec
from robo_rl.modules.camera_policy import CameraPolicy

if TYPE_CHECKING:
    import onnx

OBS_INPUT = "obs"
ACTION_OUTPUT = "action"
OPSET = 18
EXAMPLE_BATCH = 2
"""Rows of the example inputs the exporter traces. torch.export turns a dimension of size 1 into a constant where a
convolution reads it, so a camera policy traced on one row refuses a dynamic batch; two rows keep it symbolic."""


@dataclass(frozen=True)
class PolicyMetadata:
    obs_spec: SpaceSpec
    """Observation vector the policy expects, in order."""
    action_spec: SpaceSpec
    """Action vector of one step; outputs are clipped to its bounds (a chunk's every step to the same ones)."""
    dt: float
    """Control period in seconds the policy was trained at."""
    task: str
    """Registered task name the policy was trained on."""
    config_hash: str
    """`robo_rl.config.config_hash` of the training config."""
    git_hash: str
    """Commit of the robo_rl source that trained the policy."""
    task_config: str | None = None
    """The task's resolved config as canonical JSON (`TaskRecord.config_json`); None leaves it out."""
    action_chunk: int = 1
    """H, the actions the policy outputs at once (`robo_rl.chunks`): its output is `(batch, H * action_dim)`.
    `robo_rl.chunks.env.action_chunking(env)` gives a chunk env's one-step spec, dt and H."""
    actuator: Actuator | None = None
    """What the actions mean physically (a motor-level quadrotor's map onto the motor command, the env's
    `actuator` as `robo_rl.envs.task_specs` records it); None leaves `robo_rl.actuator` out."""
    images: tuple[ImageSpec, ...] = ()
    """The camera inputs of a `CameraPolicy`, in its input order (`CameraPolicy.specs`); () for a policy of the
    state vector alone. Non-empty makes the file schema 4 (`robo_rl.artifact`)."""
    memory: MemorySpec | None = None
    """The state a policy with memory carries (`RecurrentDeterministicActor.memory`); makes the file schema 5."""
    vehicle: str | None = None
    """The task's vehicle card as canonical JSON (`TaskSpecs.vehicle`, `robo_rl.vehicle`); None leaves it out."""

    def to_props(self) -> dict[str, str]:
        """ONNX metadata_props: the policy artifact (`robo_rl.artifact`) of these specs and provenance."""
        return self.artifact().to_props()

    def artifact(self) -> PolicyArtifact:
        return PolicyArtifact(
            obs=self.obs_spec,
            action=self.action_spec,
            dt=self.dt,
            task=self.task,
            config_hash=self.config_hash,
            git_hash=self.git_hash,
            version=robo_rl.__version__,
            task_config=self.task_config,
            action_chunk=self.action_chunk,
            actuator=self.actuator,
            images=self.images,
            memory=self.memory,
            vehicle=self.vehicle,
        )


def export_onnx(actor: nn.Module, metadata: PolicyMetadata, path: Path) -> Path:
    """Write `actor` `(batch, obs_dim) → (batch, action_chunk * action_dim)` as a single self-contained ONNX file.

    The batch dimension is dynamic. A flow sampler also gets `robo_rl.flow.*` metadata: its parts as chains that
    firmware export turns into C (`robo_rl.export.flow_metadata`). With `metadata.images` the actor is a
    `CameraPolicy` and takes the camera frames after the state (`export_artifact`). The model is checked with
    `onnx.checker` before it replaces `path`.
    """
    return export_artifact(actor, metadata.artifact(), path)


def export_artifact(actor: nn.Module, artifact: PolicyArtifact, path: Path) -> Path:
    """`export_onnx` for any artifact metadata (e.g. an imported policy's, `robo_rl.importers`).

    Inputs: `obs` float32 `(batch, obs_dim)`, then one uint8 `(batch, height, width, channels)` per camera of
    `artifact.images`, named after it; output `action`. All inputs share the one dynamic batch dimension.
    """
    import onnx

    actor = actor.eval().to("cpu")
    _check_cameras(actor, artifact)
    if artifact.memory is not None and artifact.images:
        raise ValueError("a policy with both cameras and memory cannot be exported yet")
    size = getattr(actor, "state_size", None)
    if artifact.memory is not None and size != artifact.memory.size:
        raise ValueError(f"the metadata's memory of size {artifact.memory.size} must be the actor's state ({size})")
    example = example_inputs(artifact)
    _check_output_width(actor, example, artifact)
    with _quiet_exporter():
        program = torch.onnx.export(
            actor,
            example,
            dynamo=True,
            input_names=list(input_names(artifact)),
            output_names=list(output_names(artifact)),
            dynamic_shapes=_batch_dimensions(artifact),
            opset_version=OPSET,
            verbose=False,
        )
    if program is None:  # only with dynamo=False, which is not used here
        raise RuntimeError("torch.onnx.export returned no program")
    model = program.model_proto
    model.producer_name = "robo_rl"
    model.producer_version = robo_rl.__version__
    onnx.helper.set_model_props(model, {**artifact.to_props(), **flow_metadata(actor)})
    return save_checked(model, path)


def warm_exporter() -> None:
    """Export a tiny network to nothing, so that the first real export of this process skips the exporter's one-off
    start-up (imports, torch.export's and the op registry's set-up: about 2 s of a 3 s export on one core). A
    training run that exports at its end calls it before its first iteration: the export after a stop signal then
    fits in the time a launcher gives before SIGTERM."""
    import onnxruntime  # noqa: F401  (the parity check's; imported here for the same reason)

    tiny = nn.Sequential(nn.Linear(2, 2), nn.Tanh()).eval()
    with _quiet_exporter():
        torch.onnx.export(
            tiny,
            (torch.zeros(EXAMPLE_BATCH, 2),),
            dynamo=True,
            dynamic_shapes=({0: torch.export.Dim("batch", min=1)},),
            opset_version=OPSET,
            verbose=False,
        )


def output_names(artifact: PolicyArtifact) -> tuple[str, ...]:
    """The graph's output names: `action`, then `h_out` for a policy with memory."""
    return (ACTION_OUTPUT, STATE_OUTPUT) if artifact.memory is not None else (ACTION_OUTPUT,)


def input_names(artifact: PolicyArtifact) -> tuple[str, ...]:
    """The graph's input names: `obs`, then each camera's name in `artifact.images` order. ValueError when a
    camera takes the name of the state input or of the output (the graph would have two values of one name)."""
    taken = [spec.name for spec in artifact.images if spec.name in (OBS_INPUT, ACTION_OUTPUT)]
    if taken:
        raise ValueError(
            f"camera {taken[0]!r} cannot be exported: '{OBS_INPUT}' and '{ACTION_OUTPUT}' name the "
            "state input and the action output; rename the camera"
        )
    if artifact.memory is not None:
        return (OBS_INPUT, STATE_INPUT)
    return (OBS_INPUT, *(spec.name for spec in artifact.images))


def example_inputs(artifact: PolicyArtifact, batch: int = EXAMPLE_BATCH) -> tuple[torch.Tensor, ...]:
    """Zero inputs of the graph's dtypes and shapes: the state `(batch, obs_dim)` float32, then the memory's
    `(batch, size)` float32 or each camera's uint8 frames `(batch, height, width, channels)`."""
    if artifact.memory is not None:
        return (torch.zeros(batch, artifact.obs.dim), torch.zeros(batch, artifact.memory.size))
    frames = (torch.zeros(batch, *spec.shape, dtype=torch.uint8) for spec in artifact.images)
    return (torch.zeros(batch, artifact.obs.dim), *frames)


def _batch_dimensions(artifact: PolicyArtifact) -> tuple[object, ...]:
    """torch.export's dynamic shapes: dimension 0 of every input is the one `batch`. It follows the forward
    signature, so a `CameraPolicy.forward(state, *frames)` has its frames as one tuple argument."""
    batch = {0: torch.export.Dim("batch", min=1)}
    if artifact.memory is not None:
        return (batch, batch)
    if not artifact.images:
        return (batch,)
    return (batch, tuple(batch for _ in artifact.images))


def _check_cameras(actor: nn.Module, artifact: PolicyArtifact) -> None:
    """ValueError unless a `CameraPolicy`'s cameras are the metadata's, in the same order (the graph's input names
    and shapes come from the metadata, the weights from the policy), and only a `CameraPolicy` has cameras."""
    cameras = actor.specs if isinstance(actor, CameraPolicy) else ()
    if cameras != artifact.images:
        raise ValueError(
            f"the policy's cameras {_describe(cameras)} are not the metadata's {_describe(artifact.images)} "
            "(export a CameraPolicy with robo_rl.export.camera.export_camera_policy)"
        )


def _describe(specs: tuple[ImageSpec, ...]) -> str:
    return "[" + ", ".join(f"{s.name} {s.height}x{s.width}x{s.channels}" for s in specs) + "]" if specs else "(none)"


def _check_output_width(actor: nn.Module, example: tuple[torch.Tensor, ...], artifact: PolicyArtifact) -> None:
    """ValueError unless the actor outputs what the metadata describes (H actions of a chunk)."""
    with torch.no_grad():
        out = actor(*example)
    if artifact.memory is not None:
        if not isinstance(out, tuple) or len(out) != 2 or out[1].shape[-1] != artifact.memory.size:
            raise ValueError(
                f"a policy with memory of size {artifact.memory.size} must return (action, next state of that size)"
            )
        out = out[0]
    width = out.shape[-1]
    if width != artifact.output_dim:
        chunk = f"{artifact.action_chunk} × " if artifact.action_chunk > 1 else ""
        raise ValueError(
            f"the actor outputs {width} values, its metadata describes {chunk}{artifact.action.dim} actions"
            + ("" if chunk else " (a chunked policy needs action_chunk and one step's action spec)")
        )


def save_checked(model: onnx.ModelProto, path: Path) -> Path:
    """Check `model` with `onnx.checker` (full) and write it to `path` through a temporary file (a crash leaves
    the previous file whole)."""
    import onnx

    onnx.checker.check_model(model, full_check=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    onnx.save_model(model, str(tmp), save_as_external_data=False)
    tmp.replace(path)
    return path


@contextlib.contextmanager
def _quiet_exporter() -> Iterator[None]:
    """Silence the exporter's progress chatter and its notes about torchvision ops we never use."""
    logger = logging.getLogger("torch.onnx")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)


def read_metadata(path: Path) -> dict[str, str]:
    """The `robo_rl.*` metadata_props of an exported policy."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    return {p.key: p.value for p in model.metadata_props}


def onnx_parity(actor: nn.Module, path: Path, obs: torch.Tensor) -> float:
    """Max absolute difference between torch `actor` and onnxruntime on `obs` `(batch, obs_dim)`."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    with torch.no_grad():
        expected = actor.eval().to("cpu")(obs.cpu()).numpy()
    got = session.run([ACTION_OUTPUT], {OBS_INPUT: obs.cpu().numpy().astype(np.float32)})[0]
    return float(np.max(np.abs(expected - got)))


def onnx_episode_parity(actor: nn.Module, path: Path, obs: torch.Tensor, starts: torch.Tensor) -> float:
    """Max absolute difference in actions and states between torch `actor` `(obs, h) -> (action, h)` and
    onnxruntime over episodes: obs `(T, batch, obs_dim)`, the state reset to zeros where `starts` `(T, batch)` is
    true and otherwise carried from the previous step's output (each side carries its own)."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    actor = actor.eval().to("cpu")
    size = int(session.get_inputs()[1].shape[1])
    h_torch = torch.zeros(obs.shape[1], size)
    h_onnx = np.zeros((obs.shape[1], size), dtype=np.float32)
    worst = 0.0
    for t in range(obs.shape[0]):
        reset = starts[t].cpu().numpy()
        h_torch = torch.where(starts[t].cpu().unsqueeze(-1), torch.zeros_like(h_torch), h_torch)
        h_onnx = np.where(reset[:, None], np.float32(0.0), h_onnx).astype(np.float32)
        with torch.no_grad():
            action, h_torch = actor(obs[t].cpu(), h_torch)
        feeds = {OBS_INPUT: obs[t].cpu().numpy().astype(np.float32), STATE_INPUT: h_onnx}
        got, h_onnx = session.run([ACTION_OUTPUT, STATE_OUTPUT], feeds)
        worst = max(worst, float(np.max(np.abs(action.numpy() - got))), float(np.max(np.abs(h_torch.numpy() - h_onnx))))
    return worst
