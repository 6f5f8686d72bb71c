"""Kinematics of a 4-DoF arm (base yaw, then shoulder, elbow and wrist pitch about parallel horizontal axes).

What an operator's end-effector device needs on the deploy side: where the tool tip is for measured joint angles, and
the joint steps that move it by a small displacement. The closed form is the one of robo_rl's simulated arm
(mujoco/arm_reach, mujoco/peg_insert: `robo_rl.sim.mujoco.peg_insert.peg_tip_fk`), written again here because the
deploy core imports no simulator; tests/real/test_arm_kinematics.py holds the two equal. The geometry is a parameter:
a real arm has its own lengths.

In the arm's vertical plane each link adds its length along the sum of the pitches up to it (0 horizontal, +pi/2
up); the base yaw turns that plane about the vertical through the shoulder. With the pitches summing to -pi/2 the
tool points straight down (the peg task's grip).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NEWTON_ITERATIONS = 4
"""Newton iterations of `tip_step` (each one a damped least-squares solve at the latest estimate): enough to reach a
few-millimetre displacement to well under a micrometre away from singular poses."""


@dataclass(frozen=True)
class ArmGeometry:
    """Lengths of the arm in m; the defaults are robo_rl's simulated peg arm (robo_rl.sim.mujoco.peg_insert)."""

    shoulder_height: float = 0.30
    """Height of the shoulder axis above the world origin, on the yaw axis."""
    upper_arm: float = 0.30
    """Shoulder axis to elbow axis."""
    forearm: float = 0.25
    """Elbow axis to wrist axis."""
    wrist_to_tip: float = 0.16
    """Wrist axis to the tool tip (the peg arm's hand and peg; mujoco/arm_reach's end effector is 0.10)."""

    def __post_init__(self) -> None:
        lengths = (self.upper_arm, self.forearm, self.wrist_to_tip)
        if not all(np.isfinite(v) and v > 0 for v in lengths) or not np.isfinite(self.shoulder_height):
            raise ValueError(f"ArmGeometry: link lengths must be finite and > 0, got {self}")


def tip_position(geometry: ArmGeometry, q: np.ndarray) -> np.ndarray:
    """Tool tip `(3,)` m in the world frame for joint angles `q` `(4,)` rad (yaw, shoulder, elbow, wrist)."""
    yaw, reach, rise = _planar(geometry, q)
    return np.array([reach * np.cos(yaw), reach * np.sin(yaw), geometry.shoulder_height + rise])


def tip_jacobian(geometry: ArmGeometry, q: np.ndarray) -> np.ndarray:
    """d tip / d q `(3, 4)` (m/rad) at joint angles `q` `(4,)`."""
    yaw, reach, _ = _planar(geometry, q)
    pitches = np.cumsum(np.asarray(q, dtype=np.float64)[1:])
    lengths = np.array([geometry.upper_arm, geometry.forearm, geometry.wrist_to_tip])
    # a pitch joint turns every link beyond it: the tail sums of the links' horizontal and vertical extents
    d_reach = -np.cumsum((lengths * np.sin(pitches))[::-1])[::-1]
    d_rise = np.cumsum((lengths * np.cos(pitches))[::-1])[::-1]
    jacobian = np.empty((3, 4))
    jacobian[:, 0] = (-reach * np.sin(yaw), reach * np.cos(yaw), 0.0)
    jacobian[0, 1:] = d_reach * np.cos(yaw)
    jacobian[1, 1:] = d_reach * np.sin(yaw)
    jacobian[2, 1:] = d_rise
    return jacobian


def tip_step(geometry: ArmGeometry, q: np.ndarray, displacement: np.ndarray, damping: float = 1e-3) -> np.ndarray:
    """Joint steps `(4,)` rad that move the tip by `displacement` `(3,)` m from joint angles `q` `(4,)`, keeping the
    tool's pitch (the sum of the three pitches) as it is.

    Four joints, four conditions (three tip coordinates and the tool's pitch): solved locally from the measured pose
    by damped least squares (Newton iterations on the forward kinematics), so the step is continuous in `q`, never
    switches elbow branch, and stays bounded near singular poses (stretched out, tip over the yaw axis), where it
    moves the tip only part of the way. A zero displacement is a zero step exactly.
    """
    q = np.asarray(q, dtype=np.float64).reshape(4)
    displacement = np.asarray(displacement, dtype=np.float64).reshape(3)
    step = np.zeros(4)
    if not displacement.any():
        return step
    target = tip_position(geometry, q) + displacement
    for _ in range(NEWTON_ITERATIONS):
        moved = q + step
        residual = np.append(target - tip_position(geometry, moved), -step[1:].sum())
        system = np.vstack((tip_jacobian(geometry, moved), [0.0, 1.0, 1.0, 1.0]))
        normal = system @ system.T + damping**2 * np.eye(4)
        step = step + system.T @ np.linalg.solve(normal, residual)
    return step


def _planar(geometry: ArmGeometry, q: np.ndarray) -> tuple[float, float, float]:
    """(yaw, the tip's horizontal distance from the yaw axis, its height above the shoulder) for `q` `(4,)`."""
    yaw, shoulder, elbow, wrist = (float(v) for v in np.asarray(q, dtype=np.float64).reshape(4))
    arm, forearm, hand = shoulder, shoulder + elbow, shoulder + elbow + wrist
    reach = geometry.upper_arm * np.cos(arm) + geometry.forearm * np.cos(forearm) + geometry.wrist_to_tip * np.cos(hand)
    rise = geometry.upper_arm * np.sin(arm) + geometry.forearm * np.sin(forearm) + geometry.wrist_to_tip * np.sin(hand)
    return yaw, float(reach), float(rise)
