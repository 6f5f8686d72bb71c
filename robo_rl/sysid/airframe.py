"""What system identification takes from the base frame, and the quadrotor model it fits.

The model is robo_rl's quadrotor (`robo_rl.sim.quadrotor`, restated here so that identification needs no simulator):
rotor i, at (x_i, y_i) in the FLU body frame, turns its command u_i* in [0, 1] into a motor state u_i that moves
toward it at first order, du_i/dt = (u_i* - u_i) / tau (tau = the rise constant while u_i* >= u_i, the fall constant
otherwise), and pushes thrust T_i = c0 + c1 u_i + c2 u_i^2 (N) along body z. Then

    m dv/dt = R (0, 0, sum T_i) - m g z - drag * v         (world frame, z up)
    J dw/dt = tau - w x J w,  tau = (sum y_i T_i, sum -x_i T_i, sum -s_i k T_i)   (body frame)

with s_i = +1 for a ccw rotor and k = torque_to_thrust.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

ROTOR_SIGNS_XY = ((1.0, -1.0), (-1.0, -1.0), (-1.0, 1.0), (1.0, 1.0))
"""Signs of rotor i's (x, y) offset, rotors 0 front-right, 1 back-right, 2 back-left, 3 front-left: the same as
robo_rl.sim.quadrotor.params.ROTOR_SIGNS_XY (a test holds them equal)."""
SPIN_SIGN = {"ccw": 1.0, "cw": -1.0}


@dataclass(frozen=True)
class Airframe:
    """The parts of a frame that identification keeps (SI units): what it fits is measured against these."""

    mass: float
    """kg. Motion alone only tells thrust / mass: the fitted thrust curve is in N for this mass."""
    gravity: float
    """m/s^2."""
    rotor_xy: np.ndarray
    """(4, 2) rotor positions in the body frame, m."""
    spin: np.ndarray
    """(4,) +1 for a ccw rotor, -1 for a cw one."""
    torque_to_thrust: float
    """m: a rotor's yaw reaction torque per N of its thrust."""
    linear_drag: np.ndarray
    """(3,) N/(m/s), world frame."""
    inertia: np.ndarray
    """(3,) kg m^2: the base's, a starting point for the gyroscopic terms."""

    @classmethod
    def from_fields(cls, fields: Mapping[str, Any]) -> Airframe:
        """From a frame file's fields (`robo_rl.sim.quadrotor.params.QuadrotorParams` as a mapping)."""
        offset = float(fields["arm_length"]) / math.sqrt(2.0)
        return cls(
            mass=float(fields["mass"]),
            gravity=float(fields.get("gravity", 9.81)),
            rotor_xy=np.array([(sx * offset, sy * offset) for sx, sy in ROTOR_SIGNS_XY]),
            spin=np.array([SPIN_SIGN[s] for s in fields.get("rotor_spin", ("ccw", "cw", "ccw", "cw"))]),
            torque_to_thrust=float(fields["torque_to_thrust"]),
            linear_drag=np.asarray(fields.get("linear_drag", (0.0, 0.0, 0.0)), dtype=np.float64),
            inertia=np.asarray(fields["inertia"], dtype=np.float64),
        )

    @property
    def torque_map(self) -> np.ndarray:
        """(3, 4): body torque (N m) per N of each rotor's thrust."""
        x, y = self.rotor_xy[:, 0], self.rotor_xy[:, 1]
        return np.stack([y, -x, -self.spin * self.torque_to_thrust])


def quaternion_matrices(quaternion: np.ndarray) -> np.ndarray:
    """(N, 3, 3) body-to-world rotations of (N, 4) unit quaternions w, x, y, z."""
    q = quaternion / np.linalg.norm(quaternion, axis=1, keepdims=True)
    w, x, y, z = q.T
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], axis=-1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], axis=-1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], axis=-1),
        ],
        axis=1,
    )
