"""Frame conventions: ROS (REP 103/105: ENU world, FLU body) ↔ PX4 (NED world, FRD body).

robo_rl's simulators and policies use the ROS conventions: world x east, y north, z up (ENU); body x forward,
y left, z up (FLU). PX4 uses world x north, y east, z down (NED) and body x forward, y right, z down (FRD). Every
conversion is its own inverse:
- world vectors (positions, velocities): (x, y, z)_NED = (y, x, −z)_ENU;
- body vectors (angular rates, body velocities, thrust): (x, y, z)_FRD = (x, −y, −z)_FLU;
- attitudes, quaternions (w, x, y, z) from body to world: q_ENU←FLU = q_ENU←NED ⊗ q_NED←FRD ⊗ q_FRD←FLU, where
  q_ENU←NED is a half turn about (1, 1, 0)/√2 and q_FRD←FLU a half turn about x.
Pure numpy, no ROS.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

Vector = Sequence[float] | np.ndarray
"""Three (or, for quaternions, four) numbers."""

FLU_TO_FRD_SIGN = {"x": 1.0, "y": -1.0, "z": -1.0}
"""The sign each body axis takes from FLU to FRD (and back)."""

_HALF = math.sqrt(0.5)
Q_ENU_NED = np.array([0.0, _HALF, _HALF, 0.0])
"""(w, x, y, z) of the rotation taking NED coordinates to ENU: a half turn about (1, 1, 0)/√2."""
Q_FRD_FLU = np.array([0.0, 1.0, 0.0, 0.0])
"""(w, x, y, z) of the rotation taking FLU coordinates to FRD: a half turn about x."""


def enu_to_ned(vector: Vector) -> np.ndarray:
    """A world-frame vector (position, velocity) from ENU to NED; `ned_to_enu` is the same map."""
    x, y, z = (float(v) for v in vector)
    return np.array([y, x, -z])


ned_to_enu = enu_to_ned


def flu_to_frd(vector: Vector) -> np.ndarray:
    """A body-frame vector (angular rate, body velocity, thrust) from FLU to FRD; `frd_to_flu` is the same map."""
    x, y, z = (float(v) for v in vector)
    return np.array([x, -y, -z])


frd_to_flu = flu_to_frd


def quat_multiply(a: Vector, b: Vector) -> np.ndarray:
    """Hamilton product a ⊗ b of (w, x, y, z) quaternions."""
    aw, ax, ay, az = (float(v) for v in a)
    bw, bx, by, bz = (float(v) for v in b)
    return np.array(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ]
    )


def ned_frd_to_enu_flu(q_ned_frd: Vector) -> np.ndarray:
    """A PX4 attitude (FRD body → NED world, w x y z) as the ROS one (FLU body → ENU world), w ≥ 0."""
    return _positive(quat_multiply(quat_multiply(Q_ENU_NED, q_ned_frd), Q_FRD_FLU))


def enu_flu_to_ned_frd(q_enu_flu: Vector) -> np.ndarray:
    """A ROS attitude (FLU body → ENU world, w x y z) as the PX4 one (FRD body → NED world), w ≥ 0."""
    return _positive(quat_multiply(quat_multiply(Q_ENU_NED, q_enu_flu), Q_FRD_FLU))


def _positive(q: np.ndarray) -> np.ndarray:
    """q and −q are the same rotation: the one with w ≥ 0 (for comparisons and stable output)."""
    return -q if q[0] < 0 else q
