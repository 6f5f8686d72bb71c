"""What a task's cost measures: the constrained quantity of a constrained MDP (safe RL), declared by the task.

A task with a constraint has a `cost_spec` attribute and reports `info["cost"]` (`robo_rl.envs.INFO_COST`) at every
step: `(num_envs,)` float >= 0 in the spec's unit per step. An episode's cost is the sum; a constrained algorithm
(PPO-Lagrangian, SAC-Lagrangian) keeps its expected value under a budget from its own config, so that one task serves
any budget. Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CostSpec:
    """A task's cost: its name, the unit of one step's cost, and what it measures."""

    name: str
    """Short name, e.g. "speed_near_edge"."""
    unit: str
    """Unit of one step's cost, e.g. "m/s" (an excess speed) or "1" (an indicator: 1 where the limit is broken)."""
    about: str
    """One line: when a step costs, and how much."""

    def __post_init__(self) -> None:
        if not self.name or not self.unit:
            raise ValueError(f"CostSpec needs a name and a unit, got {self!r}")

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "unit": self.unit, "about": self.about}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CostSpec:
        return cls(str(data["name"]), str(data["unit"]), str(data.get("about", "")))


def speed_near_edge(limit: float, distance: float) -> CostSpec:
    """The car's constraint (rc_car/race in simulation, `robo_rl.robot.costs` on the car): forward speed above
    `limit` m/s within `distance` m of the track's edge."""
    return CostSpec("speed_near_edge", "m/s", f"forward speed above {limit:g} m/s within {distance:g} m of the edge")


def tilt_above(limit: float) -> CostSpec:
    """The drone's constraint (quadrotor/hover): the tilt of the body z axis from world up above `limit` rad."""
    return CostSpec("tilt", "rad", f"tilt of the body z axis from world up above {limit:g} rad")


def cost_spec_of(env: Any) -> CostSpec | None:
    """The cost an env declares (its `cost_spec` attribute), or None for a task without a constraint."""
    spec = getattr(env, "cost_spec", None)
    if spec is not None and not isinstance(spec, CostSpec):
        raise TypeError(f"env.cost_spec must be a CostSpec, got {type(spec).__name__}")
    return spec
