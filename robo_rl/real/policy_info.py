"""An exported policy's deployment metadata (`robo_rl.artifact`'s `robo_rl.*` keys), and the error of a file that
is not a robo_rl policy."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from robo_rl.actuator import Actuator
from robo_rl.artifact import ArtifactError, PolicyArtifact
from robo_rl.image_spec import ImageSpec
from robo_rl.memory_spec import MemorySpec


class PolicyFileError(ValueError):
    """The file is not a robo_rl policy: unreadable, or missing/malformed `robo_rl.*` metadata."""


@dataclass(frozen=True)
class PolicyInfo:
    """The deployment-relevant `robo_rl.*` metadata of an exported policy."""

    task: str
    """Task the policy was trained on."""
    dt: float
    """Control period in seconds the policy was trained at."""
    obs_names: tuple[str, ...]
    """Observation names, in input order."""
    obs_units: tuple[str, ...]
    """Observation units, in input order."""
    action_names: tuple[str, ...]
    """Action names, in output order."""
    action_units: tuple[str, ...]
    """Action units, in output order."""
    action_low: tuple[float, ...]
    """Lower action bounds the outputs are clipped to."""
    action_high: tuple[float, ...]
    """Upper action bounds the outputs are clipped to."""
    version: str
    """robo_rl version that exported the file."""
    action_chunk: int = 1
    """H, the actions the policy outputs at once (`robo_rl.chunks`); the action fields describe one of them."""
    obs_low: tuple[float, ...] = ()
    """Lower observation bounds of the training env, in input order (empty: not given)."""
    obs_high: tuple[float, ...] = ()
    """Upper observation bounds, in input order (an `integral(...)` source is clipped to +-its bound)."""
    actuator: Actuator | None = None
    """What the actions mean physically (`robo_rl.actuator`): the profile's command map must apply it."""
    images: tuple[ImageSpec, ...] = ()
    """The camera inputs (`robo_rl.images`), in graph input order; () for a state-only policy."""
    memory: MemorySpec | None = None
    """The state a policy with memory carries (`robo_rl.memory_spec`); None for a policy without memory."""

    @classmethod
    def from_props(cls, props: Mapping[str, str]) -> PolicyInfo:
        """Parse the metadata_props of an ONNX file (`robo_rl.artifact`, every key required); raises
        PolicyFileError naming the bad key, or saying the file needs a newer robo_rl."""
        try:
            artifact = PolicyArtifact.from_props(props)
        except ArtifactError as err:
            raise PolicyFileError(str(err)) from None
        assert artifact.task is not None and artifact.dt is not None  # required by the strict reading
        return cls(
            task=artifact.task,
            dt=artifact.dt,
            obs_names=artifact.obs.names,
            obs_units=artifact.obs.units,
            action_names=artifact.action.names,
            action_units=artifact.action.units,
            action_low=artifact.action.low,
            action_high=artifact.action.high,
            version=str(artifact.version),
            action_chunk=artifact.action_chunk,
            obs_low=artifact.obs.low,
            obs_high=artifact.obs.high,
            actuator=artifact.actuator,
            images=artifact.images,
            memory=artifact.memory,
        )
