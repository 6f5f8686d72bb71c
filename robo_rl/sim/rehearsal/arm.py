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
from robo_rl.real.profile import RobotProfile
from robo_rl.sim.rehearsal.ground import GroundRig
from robo_rl.sim.rehearsal.jtc import NS, Controller, jtc_accepts, one_point_trajectory


class ArmRig(GroundRig):
    """See the module docstring; `skew`: the controller's clock minus the node's, s."""

    def __init__(self, profile: RobotProfile, params: Sequence[str] = (), seed: int = 0, skew: float = 1.0) -> None:
        super().__init__(profile, params, seed)
        self.skew = skew
        self.joints = tuple(self.sim.spec.joint_names)

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
