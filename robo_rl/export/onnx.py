"""Export the deterministic actor (normalizer + network + action clip/scale) to one `policy.onnx` file.

The file's metadata carries everything deployment needs to check that it drives the right robot: observation
names/order/units/bounds, action names/bounds/units, control period, and provenance (config hash, git hash,
robo_rl version), in the keys `robo_rl.artifact` defines. `robo_rl.real` and `robo_rl.firmware_export` read only
this file.
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

if TYPE_CHECKING:
    import onnx

OBS_INPUT = "obs"
ACTION_OUTPUT = "action"
OPSET = 18


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
        )


def export_onnx(actor: nn.Module, metadata: PolicyMetadata, path: Path) -> Path:
    """Write `actor` `(batch, obs_dim) → (batch, action_chunk * action_dim)` as a single self-contained ONNX file.

    The batch dimension is dynamic. A flow sampler also gets `robo_rl.flow.*` metadata: its parts as chains that
    firmware export turns into C (`robo_rl.export.flow_metadata`). The model is checked with `onnx.checker`
    before it replaces `path`.
    """
    return export_artifact(actor, metadata.artifact(), path)


def export_artifact(actor: nn.Module, artifact: PolicyArtifact, path: Path) -> Path:
    """`export_onnx` for any artifact metadata (e.g. an imported policy's, `robo_rl.importers`)."""
    import onnx

    actor = actor.eval().to("cpu")
    example = torch.zeros(1, artifact.obs.dim)
    _check_output_width(actor, example, artifact)
    with _quiet_exporter():
        program = torch.onnx.export(
            actor,
            (example,),
            dynamo=True,
            input_names=[OBS_INPUT],
            output_names=[ACTION_OUTPUT],
            dynamic_shapes=({0: torch.export.Dim("batch", min=1)},),
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


def _check_output_width(actor: nn.Module, example: torch.Tensor, artifact: PolicyArtifact) -> None:
    """ValueError unless the actor outputs what the metadata describes (H actions of a chunk)."""
    with torch.no_grad():
        width = actor(example).shape[-1]
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
