"""The arm's stand-in: its MuJoCo task behind the profile's topics (`SimLink`), with joint_trajectory_controller's
acceptance rule (`robo_rl.sim.rehearsal.jtc`) between the node and the arm, on a controller clock `skew` s ahead of
the node's.

The arm's own controller is joint_trajectory_controller holding the last pose it was sent: while the node's safe
command goes out (the measured pose held, `safe_command: hold_measured`) the controller holds the arm. A rule of
the arm is broken by every JointTrajectory the controller would drop (wrong joints, a stamp that ends in its past)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from robo_rl.real.command import command_actions, stamped_now
from robo_rl.real.handover import VehicleLink
from robo_rl.real.profile import RobotProfile, source_input
from robo_rl.sim.rehearsal.jtc import NS, Controller, jtc_accepts, one_point_trajectory
from robo_rl.sim.robot_link import SimLink


class ArmRig:
    """See the module docstring; `skew`: the controller's clock minus the node's, s."""

    def __init__(self, profile: RobotProfile, params: Sequence[str] = (), seed: int = 0, skew: float = 1.0) -> None:
        self.profile = profile
        self.link: VehicleLink | None = None
        self.sim = SimLink(profile, params, seed)
        self.violations: list[str] = []
        self.skew = skew
        self.now = 0.0
        self.held = True
        self.joints = tuple(self.sim.spec.joint_names)
        self._executed = np.asarray(profile.safe_action, dtype=np.float64)

    def inputs(self) -> dict[str, dict[str, float]]:
        grouped: dict[str, dict[str, float]] = {spec.name: {} for spec in self.profile.inputs if not spec.derive}
        for source, value in self.sim.fields().items():
            grouped[source_input(source)][source] = value
        return grouped

    def command(self, fields: dict[str, float], fault: str) -> None:
        stamp = round(self.now * NS) if stamped_now(self.sim.spec.type) else 0
        controller = Controller(joints=self.joints, now_ns=round((self.now + self.skew) * NS))
        why = jtc_accepts(one_point_trajectory(fields, self.joints, stamp), controller)
        if why:
            self.violations.append(f"{self.now:.2f} s: joint_trajectory_controller drops the command: {why}")
            return  # dropped: the controller keeps its old reference
        self.held = bool(fault)
        self.sim.send(fields)
        actions = command_actions(self.sim.spec, fields, targets=True)
        self._executed = np.asarray([actions[name] for name in self.profile.action_names], dtype=np.float64)

    def advance(self) -> None:
        self.now += self.profile.dt
        self.sim.wait_until(self.now)

    def in_charge(self) -> str:
        return "vehicle" if self.held else "policy"

    def executed(self) -> np.ndarray:
        return self._executed

    def pose(self) -> tuple[np.ndarray, float]:
        """Not measured for the arm: the joint targets' jump (`executed`) is its measure."""
        return np.zeros(3), 0.0

    def motors_off_in_the_air(self) -> bool:
        return False
