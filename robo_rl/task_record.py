"""The task a run trained on, as resolved at training time: its registered name, its typed config after
`task.config` (as plain data), and the specs of its observations and actions.

`robo-rl train` writes it into the run directory (RUN/task.yaml). Export reads the specs from it instead of
rebuilding the simulator, writes the resolved config into the policy's metadata, and hashes it with the experiment
config: a task default changed later does not silently change what an old run or policy means. Standard library
and PyYAML only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from robo_rl.actuator import Actuator, ActuatorError, actuator_from_json
from robo_rl.cost_spec import CostSpec
from robo_rl.image_spec import ImageSpec
from robo_rl.spaces import SpaceSpec

TASK_FILE = "task.yaml"


@dataclass(frozen=True)
class TaskSpecs:
    """A task seen from outside: what a policy reads and writes, and how often."""

    obs: SpaceSpec
    action: SpaceSpec
    dt: float
    """Control period, s."""
    critic_obs_dim: int
    """The critic's input width: the observation plus the privileged part, if the task has one."""
    actuator: Actuator | None = None
    """What the actions meant physically to the simulator that trained on them (a motor-level quadrotor's map onto
    the motor command, an RC car's drive command); None: the task has none, or the run was recorded before it was.
    Export writes it into the policy (`robo_rl.actuator`), so it is recorded when training starts, not rebuilt
    from a later simulator."""
    vehicle: str | None = None
    """The task's vehicle card as canonical JSON (`robo_rl.artifact.vehicle_card_json`: frames, the vehicle, what
    each observation entry is, the randomized ranges); None: the task states none, or the run predates it. Recorded
    when training starts, for the same reason as `actuator`; export writes it as `robo_rl.vehicle`."""
    cameras: tuple[ImageSpec, ...] = ()
    """The task's cameras (name, frame size, channels, intrinsics) in observation order; () for a state-only task,
    or a run recorded before cameras were (its best.pt still holds them)."""
    cost: CostSpec | None = None
    """What the task's `info["cost"]` measures (`robo_rl.cost_spec`); None for a task without a constraint."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "obs": self.obs.to_dict(),
            "action": self.action.to_dict(),
            "dt": self.dt,
            "critic_obs_dim": self.critic_obs_dim,
        }
        if self.actuator is not None:
            out["actuator"] = self.actuator.to_json()
        if self.vehicle is not None:
            out["vehicle"] = self.vehicle
        if self.cameras:
            out["cameras"] = [camera.to_dict() for camera in self.cameras]
        if self.cost is not None:
            out["cost"] = self.cost.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TaskSpecs:
        actuator = data.get("actuator")
        try:
            model = None if actuator is None else actuator_from_json(str(actuator))
        except ActuatorError as err:
            raise ValueError(f"specs.actuator: {err}") from None
        specs = _spec(data["obs"]), _spec(data["action"]), float(data["dt"]), int(data["critic_obs_dim"])
        vehicle = data.get("vehicle")
        cameras = data.get("cameras") or []
        if not isinstance(cameras, list):
            raise ValueError(f"specs.cameras must be a list of image specs, got {type(cameras).__name__}")
        images = tuple(ImageSpec.from_dict(camera) for camera in cameras)
        cost = data.get("cost")
        vehicle_json = None if vehicle is None else str(vehicle)
        spec = None if cost is None else CostSpec.from_dict(cost)
        return cls(*specs, actuator=model, vehicle=vehicle_json, cameras=images, cost=spec)


@dataclass(frozen=True)
class TaskRecord:
    name: str
    """Registered task name."""
    config: Mapping[str, Any]
    """The task's config dataclass as `task.config` sets it, as plain data (`robo_rl.config.to_dict`)."""
    specs: TaskSpecs

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "config": dict(self.config), "specs": self.specs.to_dict()}

    @classmethod
    def from_dict(cls, data: Any) -> TaskRecord:
        """ValueError naming what is missing or malformed."""
        if not isinstance(data, Mapping):
            raise ValueError("not a mapping with name, config and specs")
        try:
            config = data["config"]
            if not isinstance(config, Mapping):
                raise TypeError("config is not a mapping")
            return cls(str(data["name"]), dict(config), TaskSpecs.from_dict(data["specs"]))
        except KeyError as err:
            raise ValueError(f"missing key {err}") from None
        except (TypeError, ValueError) as err:
            raise ValueError(str(err)) from None

    def config_json(self) -> str:
        """The resolved config as canonical JSON (sorted keys), for the policy's metadata."""
        return json.dumps(self.config, sort_keys=True, separators=(",", ":"))


def write_task_record(run_path: Path, record: TaskRecord) -> Path:
    path = run_path / TASK_FILE
    path.write_text(yaml.safe_dump(record.to_dict(), sort_keys=False))
    return path


def read_task_record(run_path: Path) -> TaskRecord | None:
    """RUN/task.yaml; None for runs made before it was written. ValueError saying what is wrong when it is bad."""
    path = run_path / TASK_FILE
    if not path.is_file():
        return None
    try:
        return TaskRecord.from_dict(yaml.safe_load(path.read_text(encoding="utf-8")))
    except (ValueError, yaml.YAMLError, UnicodeDecodeError) as err:
        raise ValueError(f"not a task record ({str(err).splitlines()[0]})") from None


def _spec(data: Mapping[str, Any]) -> SpaceSpec:
    fields = ("names", "low", "high", "units")
    names, low, high, units = (tuple(data[field]) for field in fields)
    return SpaceSpec(tuple(map(str, names)), tuple(map(float, low)), tuple(map(float, high)), tuple(map(str, units)))
