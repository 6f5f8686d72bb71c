"""The policy artifact: what a `policy.onnx` says about itself in its `robo_rl.*` metadata_props.

One definition of the keys, their encoding (strings; lists as JSON) and the schema version. The ONNX exporter
writes it (`robo_rl.export.onnx`), the deploy runtime reads it strictly (`robo_rl.real.runtime`: every key must be
there), and the firmware export reads it leniently (`robo_rl.firmware_export.onnx_reader`: files from SB3 or Isaac
Lab lack it and get unnamed, unbounded vectors). Standard library only, so the torch-free deploy side can import it.

A file written with a newer schema than this module reads is refused with `NewerSchemaError`, which says to
upgrade robo_rl; files without `robo_rl.schema` were written before the key existed and are schema 1.

Schema 2 adds action chunks: a policy whose output `(batch, H * action_dim)` holds H consecutive actions, step i's
in entries `[i * action_dim, (i + 1) * action_dim)`. `robo_rl.action_chunk` records H; the `action_*` keys still
describe ONE step (so a robot profile matches a chunked policy as it matches an unchunked one). Only chunked files
are written as schema 2: a robo_rl that reads schema 1 refuses them instead of misreading the wide output as one
action, and every unchunked file stays schema 1.

Schema 3 adds the actuator model (`robo_rl.actuator`, `robo_rl.actuator.MotorActuator` as JSON): what a motor-level
quadrotor policy's action means physically (the normalized motor command it maps onto, linearly). Files that state
one are written as schema 3, whatever else they hold: a robo_rl without the key would ignore it and read the
actions with its own older meaning (a thrust fraction, sent as its square root by the Crazyflie export), so it
must refuse them instead. Files without an actuator keep the oldest schema that holds them (1, or 2 when chunked).
An RC car policy states its drive command under the same key (`robo_rl.actuator.DriveActuator`, kind
"drive_command": a speed setpoint or throttle); a robo_rl that knows only the motor model refuses it (unknown
fields), as it should: it could not check the robot's command against it.

Schema 4 adds camera inputs (`robo_rl.images`: a JSON list of `robo_rl.image_spec.ImageSpec` dicts, in the order of
the graph's image inputs, each input named after its camera). The graph takes each camera's frames as the camera
sends them, uint8 `(batch, height, width, channels)` at the spec's size, and scales to [0, 1] and reorders to CHW
inside itself; resizing and cropping a robot's frames to the spec's size happens before the graph, on the deploy
side (`robo_rl.image_preprocessing` states this, and a reader refuses any other statement). A robo_rl that reads
schema 3 refuses such files: it would feed them the state vector alone.

Schema 5 adds memory (`robo_rl.memory`: a `robo_rl.memory_spec.MemorySpec` as JSON): a policy that carries a state
from step to step takes it as a second float input `h_in` `(batch, size)` after `obs` (and before any camera) and
returns the next one as a second output `h_out` after `action`; the spec states the size, the reset value and when
to reset. A robo_rl that reads schema 4 refuses such files: it would run them without their state.

The vehicle card (`robo_rl.vehicle`, a JSON object) is documentation a deployer needs and the graph does not hold:
the frames and conventions, the training vehicle (for a quadrotor: mass, inertia, rotor positions and spin
directions in the action order, the rotor and motor model), what each observation entry is where it is not a plain
measurement (an integral's update, clamp and reset rule; the action history's order and reset value) and the ranges
the training randomized. Its `kind` names the vehicle family, whose task writes the rest (the quadrotor tasks:
`robo_rl.sim.quadrotor.vehicle_card`); where it lists `observation` groups, their `names` in order are the
observation's, which this module checks. It changes nothing a reader does with the file: a robo_rl without the key
runs the policy exactly as one with it, so the key is optional and raises no schema (`vehicle_card_json` writes it,
`PolicyArtifact.vehicle_card` reads it).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from robo_rl.actuator import ACTUATOR_KEY, Actuator, ActuatorError, DriveActuator, actuator_from_json
from robo_rl.image_spec import ImageSpec, check_camera_names
from robo_rl.memory_spec import MemorySpec
from robo_rl.spaces import SpaceSpec

PREFIX = "robo_rl."
SCHEMA_VERSION = 5
"""The newest schema this module reads (and writes, for policies with camera inputs)."""
CHUNK_SCHEMA = 2
"""The first schema with action chunks (`robo_rl.action_chunk`)."""
ACTUATOR_SCHEMA = 3
"""The first schema with the actuator model (`robo_rl.actuator`)."""
IMAGES_SCHEMA = 4
"""The first schema with camera inputs (`robo_rl.images`)."""
MEMORY_SCHEMA = 5
"""The first schema with memory (`robo_rl.memory`)."""
ACTUATOR_BOUND_TOLERANCE = 1e-6
"""Largest difference accepted between the actuator's action bounds and each action's (absolute and relative)."""
SCHEMA_KEY = PREFIX + "schema"
ACTION_CHUNK_KEY = PREFIX + "action_chunk"
IMAGES_KEY = PREFIX + "images"
MEMORY_KEY = PREFIX + "memory"
VEHICLE_KEY = PREFIX + "vehicle"
"""The vehicle card (JSON object, see the module docstring); optional at every schema."""
IMAGE_PREPROCESSING_KEY = PREFIX + "image_preprocessing"
IMAGE_PREPROCESSING = "in graph: uint8 HWC -> float CHW / 255; before graph: resize and crop to the spec's size"
"""What a camera policy's graph does to its image inputs, and what the deploy side must do before it."""


class ArtifactError(ValueError):
    """The metadata is missing a key or holds a malformed value; the message names the key."""


class NewerSchemaError(ArtifactError):
    """The file was written by a newer robo_rl whose schema this one cannot read."""


@dataclass(frozen=True)
class PolicyArtifact:
    """The self-description of an exported policy."""

    obs: SpaceSpec
    """Observation vector the policy expects."""
    action: SpaceSpec
    """Action vector of one step; outputs are clipped to its bounds (every step of a chunk to the same ones)."""
    dt: float | None
    """Control period in seconds the policy was trained at (None: a foreign file that does not say)."""
    task: str | None
    """Registered task name the policy was trained on."""
    config_hash: str | None = None
    """`robo_rl.config.config_hash` of the training config."""
    git_hash: str | None = None
    """Commit of the robo_rl source that trained the policy."""
    version: str | None = None
    """robo_rl version that exported the file."""
    task_config: str | None = None
    """The task's resolved config at training time, as canonical JSON (`robo_rl.task_record`); optional (files
    exported before it was recorded lack it)."""
    action_chunk: int = 1
    """H, the actions the policy outputs at once (1: one action per evaluation); step i's action is entries
    `[i * action.dim, (i + 1) * action.dim)` of the output, meant for `dt * i` seconds after the observation."""
    actuator: Actuator | None = None
    """What the actions mean physically (`robo_rl.actuator`): the map onto the normalized motor command of a
    motor-level quadrotor policy, or an RC car's drive command (speed setpoint or throttle); None: the file does
    not say (any other policy, or one exported before the key)."""
    images: tuple[ImageSpec, ...] = ()
    """The camera inputs, in the order of the graph's image inputs (each named after its camera); () for a policy
    that observes the state vector only."""
    memory: MemorySpec | None = None
    """The state the policy carries between steps (`h_in` -> `h_out`, its size and reset rule); None for a policy
    without memory."""
    vehicle: str | None = None
    """The vehicle card as canonical JSON (`vehicle_card_json`): frames, the training vehicle, each observation
    entry's definition, the trained parameter ranges; None: the task states none (or the file predates the key)."""

    def __post_init__(self) -> None:
        check_camera_names(self.images)
        if self.vehicle is not None:
            _check_vehicle_card(self.vehicle, self.obs)
        if isinstance(self.action_chunk, bool) or not isinstance(self.action_chunk, int) or self.action_chunk < 1:
            raise ArtifactError(f"action_chunk: must be an integer >= 1, got {self.action_chunk!r}")
        if self.actuator is not None:
            _check_actuator_bounds(self.actuator, self.action)

    @property
    def schema(self) -> int:
        """The oldest schema that holds this artifact, which `to_props` writes: 1, 2 for a chunked policy, 3 for
        one that states its actuator, 4 for one with cameras, 5 for one with memory."""
        if self.memory is not None:
            return MEMORY_SCHEMA
        if self.images:
            return IMAGES_SCHEMA
        if self.actuator is not None:
            return ACTUATOR_SCHEMA
        return CHUNK_SCHEMA if self.action_chunk > 1 else 1

    @property
    def vehicle_card(self) -> dict[str, Any] | None:
        """The vehicle card as a JSON object (a fresh dict), or None without one."""
        return None if self.vehicle is None else json.loads(self.vehicle)

    @property
    def output_dim(self) -> int:
        """Width of the policy's output: `action_chunk * action.dim`."""
        return self.action_chunk * self.action.dim

    def to_props(self) -> dict[str, str]:
        """ONNX metadata_props: flat string key/values, lists as JSON (non-finite bounds as `Infinity`)."""
        props = {SCHEMA_KEY: str(self.schema)}
        if self.action_chunk > 1:
            props[ACTION_CHUNK_KEY] = str(self.action_chunk)
        if self.actuator is not None:
            props[ACTUATOR_KEY] = self.actuator.to_json()
        if self.memory is not None:
            props[MEMORY_KEY] = self.memory.to_json()
        if self.images:
            props[IMAGES_KEY] = json.dumps([spec.to_dict() for spec in self.images])
            props[IMAGE_PREPROCESSING_KEY] = IMAGE_PREPROCESSING
        optional = {"version": self.version, "task": self.task, "config_hash": self.config_hash}
        optional["git_hash"] = self.git_hash
        optional["task_config"] = self.task_config
        optional["vehicle"] = self.vehicle
        props.update({PREFIX + key: value for key, value in optional.items() if value is not None})
        if self.dt is not None:
            props[PREFIX + "dt"] = repr(self.dt)
        for role, spec in (("obs", self.obs), ("action", self.action)):
            for field in ("names", "units", "low", "high"):
                props[f"{PREFIX}{role}_{field}"] = json.dumps(list(getattr(spec, field)))
        return props

    @classmethod
    def from_props(cls, props: Mapping[str, str]) -> PolicyArtifact:
        """A robo_rl policy's metadata, every key required; ArtifactError naming the first bad key."""
        provenance = _provenance(props, unknown_version="unknown")
        obs, action = _strict_spec(props, "obs"), _strict_spec(props, "action")
        return cls(obs, action, dt=_number(props, "dt"), task=_required(props, "task"), **provenance)

    @classmethod
    def from_foreign(cls, props: Mapping[str, str], obs_dim: int, output_dim: int) -> PolicyArtifact:
        """Any policy file's metadata, whoever wrote it: what is missing gets a default (`SpaceSpec.unnamed`,
        no dt/task/provenance, no chunk); what is there must be well formed and fit the graph's widths
        (`output_dim`: the output's width, H actions of a chunked policy)."""
        provenance = _provenance(props, unknown_version=None)
        chunk = provenance["action_chunk"]
        if output_dim % chunk:
            raise ArtifactError(f"metadata {ACTION_CHUNK_KEY}: {chunk} does not divide the output width {output_dim}")
        obs, action = _lenient_spec(props, "obs", obs_dim), _lenient_spec(props, "action", output_dim // chunk)
        dt = _number(props, "dt") if PREFIX + "dt" in props else None
        return cls(obs, action, dt=dt, task=props.get(PREFIX + "task"), **provenance)


def _provenance(props: Mapping[str, str], unknown_version: str | None) -> dict[str, Any]:
    """The schema (checked first: a newer one is refused before anything else is read), the chunk, the actuator
    and who wrote the file."""
    schema = _schema(props)
    return {
        "action_chunk": _action_chunk(props, schema),
        "actuator": _actuator(props, schema),
        "images": _images(props, schema),
        "memory": _memory(props, schema),
        "config_hash": props.get(PREFIX + "config_hash"),
        "git_hash": props.get(PREFIX + "git_hash"),
        "version": props.get(PREFIX + "version", unknown_version),
        "task_config": props.get(PREFIX + "task_config"),
        "vehicle": props.get(VEHICLE_KEY),
    }


def _schema(props: Mapping[str, str]) -> int:
    text = props.get(SCHEMA_KEY, "1")
    try:
        schema = int(text)
    except ValueError:
        raise ArtifactError(f"metadata {SCHEMA_KEY!r} is not an integer: {text[:40]!r}") from None
    if schema > SCHEMA_VERSION:
        raise NewerSchemaError(
            f"written by a newer robo_rl (policy schema {schema}; this robo_rl reads up to {SCHEMA_VERSION}): "
            "upgrade robo_rl to deploy it"
        )
    return schema


def _action_chunk(props: Mapping[str, str], schema: int) -> int:
    """H of `robo_rl.action_chunk` (1 without it); a chunk in a file that claims an older schema is malformed."""
    text = props.get(ACTION_CHUNK_KEY)
    if text is None:
        return 1
    try:
        chunk = int(text)
    except ValueError:
        raise ArtifactError(f"metadata {ACTION_CHUNK_KEY!r} is not an integer: {text[:40]!r}") from None
    if chunk < 1:
        raise ArtifactError(f"metadata {ACTION_CHUNK_KEY!r} must be >= 1, got {chunk}")
    if chunk > 1 and schema < CHUNK_SCHEMA:
        raise ArtifactError(
            f"metadata {ACTION_CHUNK_KEY!r} needs {SCHEMA_KEY} >= {CHUNK_SCHEMA}, the file says {schema}"
        )
    return chunk


def _images(props: Mapping[str, str], schema: int) -> tuple[ImageSpec, ...]:
    """The camera inputs of `robo_rl.images` (() without it); malformed JSON or specs, an unknown preprocessing
    statement, or the key in a file that claims an older schema are ArtifactError naming the key."""
    text = props.get(IMAGES_KEY)
    if text is None:
        return ()
    if schema < IMAGES_SCHEMA:
        raise ArtifactError(f"metadata {IMAGES_KEY!r} needs {SCHEMA_KEY} >= {IMAGES_SCHEMA}, the file says {schema}")
    preprocessing = props.get(IMAGE_PREPROCESSING_KEY)
    if preprocessing != IMAGE_PREPROCESSING:
        raise ArtifactError(
            f"metadata {IMAGE_PREPROCESSING_KEY!r} must be {IMAGE_PREPROCESSING!r}, got {preprocessing!r}"
        )
    try:
        raw = json.loads(text)
        if not isinstance(raw, list) or not raw:
            raise ValueError("expected a non-empty JSON list")
        specs = tuple(ImageSpec.from_dict(item) for item in raw)
        check_camera_names(specs)
    except ValueError as error:
        raise ArtifactError(f"metadata {IMAGES_KEY!r}: {error}") from None
    return specs


def _memory(props: Mapping[str, str], schema: int) -> MemorySpec | None:
    """The memory of `robo_rl.memory` (None without it); malformed JSON or fields, or the key in a file that claims
    an older schema, are ArtifactError naming the key."""
    text = props.get(MEMORY_KEY)
    if text is None:
        return None
    if schema < MEMORY_SCHEMA:
        raise ArtifactError(f"metadata {MEMORY_KEY!r} needs {SCHEMA_KEY} >= {MEMORY_SCHEMA}, the file says {schema}")
    try:
        return MemorySpec.from_dict(json.loads(text))
    except ValueError as error:
        raise ArtifactError(f"metadata {MEMORY_KEY!r}: {error}") from None


def _actuator(props: Mapping[str, str], schema: int) -> Actuator | None:
    """The actuator model of `robo_rl.actuator` (None without it); malformed JSON or fields, or the key in a file
    that claims an older schema, are ArtifactError naming the key."""
    text = props.get(ACTUATOR_KEY)
    if text is None:
        return None
    if schema < ACTUATOR_SCHEMA:
        raise ArtifactError(
            f"metadata {ACTUATOR_KEY!r} needs {SCHEMA_KEY} >= {ACTUATOR_SCHEMA}, the file says {schema}"
        )
    try:
        return actuator_from_json(text)
    except ActuatorError as err:
        message = str(err).removeprefix(f"{ACTUATOR_KEY}: ").removeprefix(ACTUATOR_KEY).lstrip(": ")
        raise ArtifactError(f"metadata {ACTUATOR_KEY!r}: {message}") from None


def vehicle_card_json(card: Mapping[str, Any]) -> str:
    """A vehicle card as the canonical JSON `robo_rl.vehicle` holds (sorted keys, no spaces); ArtifactError when it
    is not a JSON object with a `kind`, or holds non-finite numbers."""
    try:
        text = json.dumps(card, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ArtifactError(f"metadata {VEHICLE_KEY!r}: not plain finite JSON ({error})") from None
    _parse_vehicle_card(text)
    return text


def _parse_vehicle_card(text: str) -> dict[str, Any]:
    try:
        card = json.loads(text)
    except json.JSONDecodeError as error:
        raise ArtifactError(f"metadata {VEHICLE_KEY!r} is not JSON: {error}") from None
    if not isinstance(card, dict):
        raise ArtifactError(f"metadata {VEHICLE_KEY!r} must be a JSON object")
    kind = card.get("kind")
    if not isinstance(kind, str) or not kind:
        raise ArtifactError(f"metadata {VEHICLE_KEY!r} needs a 'kind' (the vehicle family), got {kind!r}")
    return card


def _check_vehicle_card(text: str, obs: SpaceSpec) -> None:
    """ArtifactError unless `text` is a vehicle card whose observation groups, if it lists them, name the
    observation's entries in order (a card of another observation would define the wrong entries)."""
    groups = _parse_vehicle_card(text).get("observation")
    if groups is None:
        return
    if not isinstance(groups, list) or not all(
        isinstance(g, dict) and isinstance(g.get("names"), list) for g in groups
    ):
        raise ArtifactError(f"metadata {VEHICLE_KEY!r}: 'observation' must be a list of groups with 'names'")
    names = tuple(name for group in groups for name in group["names"])
    if names != obs.names:
        raise ArtifactError(
            f"metadata {VEHICLE_KEY!r}: its observation groups name {len(names)} entries {list(names)[:4]}..., "
            f"not the policy's {obs.dim} observations {list(obs.names)[:4]}..."
        )


def _check_actuator_bounds(actuator: Actuator, action: SpaceSpec) -> None:
    """ArtifactError unless every action's bounds are the actuator's: its map covers each action's whole range (a
    drive actuator: unless it names one of the actions)."""
    if isinstance(actuator, DriveActuator):
        if actuator.action not in action.names:
            raise ArtifactError(f"metadata {ACTUATOR_KEY!r}: no action named {actuator.action!r}")
        return

    def close(a: float, b: float) -> bool:
        tol = ACTUATOR_BOUND_TOLERANCE
        return math.isclose(a, b, rel_tol=tol, abs_tol=tol)

    bounds = (actuator.action_low, actuator.action_high)
    differ = [
        f"{name} [{low:g}, {high:g}]"
        for name, low, high in zip(action.names, action.low, action.high, strict=True)
        if not (close(low, bounds[0]) and close(high, bounds[1]))
    ]
    if differ:
        raise ArtifactError(
            f"metadata {ACTUATOR_KEY!r}: its action range [{bounds[0]:g}, {bounds[1]:g}] is not that of the "
            f"action(s) {', '.join(differ)}"
        )


def _required(props: Mapping[str, str], key: str) -> str:
    full = PREFIX + key
    if full not in props:
        raise ArtifactError(f"missing metadata {full!r} (not exported by robo_rl.export.onnx?)")
    return props[full]


def _number(props: Mapping[str, str], key: str) -> float:
    text = _required(props, key)
    try:
        return float(text)
    except ValueError:
        raise ArtifactError(f"metadata '{PREFIX}{key}' is not a number") from None


def _strict_spec(props: Mapping[str, str], role: str) -> SpaceSpec:
    def values(field: str, kind: type) -> tuple:
        key = f"{role}_{field}"
        try:
            return tuple(kind(v) for v in json.loads(_required(props, key)))
        except (ValueError, TypeError):
            raise ArtifactError(f"metadata '{PREFIX}{key}' is not a JSON list of {kind.__name__}") from None

    fields = values("names", str), values("low", float), values("high", float), values("units", str)
    try:
        return SpaceSpec(*fields)
    except ValueError as err:
        raise ArtifactError(f"metadata {PREFIX}{role}_*: {err}") from None


def _lenient_spec(props: Mapping[str, str], role: str, size: int) -> SpaceSpec:
    default = SpaceSpec.unnamed(role, size)

    def values(field: str, kind: type) -> tuple:
        key = f"{PREFIX}{role}_{field}"
        if key not in props:
            return getattr(default, field)
        try:
            loaded = json.loads(props[key])
        except json.JSONDecodeError as err:
            raise ArtifactError(f"metadata {key}: not JSON ({err})") from None
        if not isinstance(loaded, list) or len(loaded) != size:
            raise ArtifactError(f"metadata {key}: expected a list of {size} entries, got {props[key][:80]}")
        try:
            return tuple(kind(v) for v in loaded)
        except (ValueError, TypeError):
            raise ArtifactError(f"metadata {key}: not a list of {kind.__name__}") from None

    fields = values("names", str), values("low", float), values("high", float), values("units", str)
    try:
        return SpaceSpec(*fields)
    except ValueError as err:
        raise ArtifactError(f"metadata {PREFIX}{role}_*: {err}") from None
