"""What the ground vehicles' rigs share (`CarRig`, `ArmRig`): the task's simulator behind the profile's topics
(`SimLink`), a vehicle whose own controller holds it while the node's safe command goes out (the car's ESC at speed 0,
joint_trajectory_controller at the measured pose), and no position or tilt excursion measured (the command's jump is
their measure: a car's excursion after a hand-back is its braking, an arm's its tracking)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from robo_rl.real.handover import VehicleLink
from robo_rl.real.profile import RobotProfile, source_input
from robo_rl.sim.robot_link import SimLink


class GroundRig:
    """The shared part of a ground vehicle's rig; a subclass adds `command` (its rules)."""

    def __init__(self, profile: RobotProfile, params: Sequence[str] = (), seed: int = 0) -> None:
        self.profile = profile
        self.sim = SimLink(profile, params, seed)
        self.violations: list[str] = []
        self.now = 0.0
        self.held = True
        """The last command was the safe one: the vehicle's own controller holds it."""
        self._executed = np.asarray(profile.safe_action, dtype=np.float64)

    @property
    def link(self) -> VehicleLink | None:
        return None

    def inputs(self) -> dict[str, dict[str, float]]:
        grouped: dict[str, dict[str, float]] = {spec.name: {} for spec in self.profile.inputs if not spec.derive}
        for source, value in self.sim.fields().items():
            grouped[source_input(source)][source] = value
        return grouped

    def advance(self) -> None:
        self.now += self.profile.dt
        self.sim.wait_until(self.now)

    def in_charge(self) -> str:
        return "vehicle" if self.held else "policy"

    def executed(self) -> np.ndarray:
        return self._executed

    def pose(self) -> tuple[np.ndarray, float]:
        return np.zeros(3), 0.0

    def motors_off_in_the_air(self) -> bool:
        return False
