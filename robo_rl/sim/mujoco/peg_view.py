"""The peg arm as a person at the robot sees it, for `PegSearchExpert` to correct through the robot's topics.

`PegSearchExpert` reads a `PegInsert`: joint angles, the peg tip, the hole estimate, the true hole. On the robot path
(sim_bridge or a real arm, through teleop_node's topics) those come from the robot's own fields instead: the joint
angles of joint_states (by joint name, as the nodes decode them), the state topic's peg tip minus the hole estimate,
and the true hole pose a person watching the arm sees (sim_bridge reports it on /diagnostics). The tip is the arm's
forward kinematics of the measured angles (`peg_tip_fk`, as the robot's own kinematics would give it) and the
estimate is that tip minus the observed offset, so the expert acts on exactly what the policy observes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from robo_rl.sim.mujoco.peg_insert import peg_tip_fk

JOINT_FIELDS = tuple(f"joint_states.position[{i}]" for i in range(4))
"""Profile arm_peg's fields of the yaw, shoulder, elbow and wrist angles in rad."""
OFFSET_FIELDS = tuple(f"state.peg_tip_to_hole_estimate.{axis}" for axis in "xyz")
"""Profile arm_peg's fields of the peg tip minus the hole estimate in m (world frame)."""


@dataclass(frozen=True)
class PegViewConfig:
    """The action bound the expert clips its joint steps to (profile arm_peg's ±0.05 rad, the task's)."""

    max_joint_step: float = 0.05


@dataclass
class _Joints:
    qpos: np.ndarray


class PegTopicView:
    """One arm's `PegSearchExpert` inputs from its topics' fields: `num_envs` 1 on the CPU. Call `update` with the
    latest fields and hole pose before asking the expert."""

    num_envs = 1
    device = torch.device("cpu")

    def __init__(self, config: PegViewConfig = PegViewConfig()) -> None:
        self.config = config
        self.engine = _Joints(np.zeros((1, 4)))
        self._tip = np.zeros((1, 3))
        self._offset = np.zeros((1, 3))
        self._hole = np.full((1, 4), np.nan)

    def update(self, fields: Mapping[str, float], hole: Sequence[float] | None) -> bool:
        """Take the joint angles and tip offset from `fields` and the true hole (x, y, z m, yaw rad); False (and the
        view unchanged) while any of them is missing."""
        names = (*JOINT_FIELDS, *OFFSET_FIELDS)
        if hole is None or len(hole) != 4 or any(name not in fields for name in names):
            return False
        self.engine.qpos = np.array([[fields[name] for name in JOINT_FIELDS]], dtype=np.float64)
        self._tip = peg_tip_fk(self.engine.qpos)
        self._offset = np.array([[fields[name] for name in OFFSET_FIELDS]], dtype=np.float64)
        self._hole = np.asarray(hole, dtype=np.float64).reshape(1, 4)
        return True

    def peg_tip_position(self) -> torch.Tensor:
        """`(1, 3)` float64 peg tip in m: the forward kinematics of the measured joint angles."""
        return torch.from_numpy(self._tip.copy())

    def hole_estimate(self) -> torch.Tensor:
        """`(1, 3)` float64 hole estimate in m: the tip minus the observed offset."""
        return torch.from_numpy(self._tip - self._offset)

    def hole_pose(self) -> torch.Tensor:
        """`(1, 4)` float64 true hole pose (mouth x, y, z m, yaw rad) as the person watching sees it."""
        return torch.from_numpy(self._hole.copy())
