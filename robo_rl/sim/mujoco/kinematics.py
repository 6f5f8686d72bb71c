"""Batched forward kinematics of a site on a serial chain of hinge and slide joints, in numpy.

`mujoco.rollout` returns states, not body poses, and calling `mj_kinematics` per env would be a Python loop;
so tasks that need, e.g., an end-effector position compute it from `qpos` for all envs at once here, with the
chain's geometry read from the `MjModel` (the tests check it against `mj_kinematics`).
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

_HINGE = int(mujoco.mjtJoint.mjJNT_HINGE)
_SLIDE = int(mujoco.mjtJoint.mjJNT_SLIDE)


@dataclass(frozen=True)
class _Joint:
    qpos_index: int
    hinge: bool
    axis: np.ndarray
    """`(3,)` unit axis in the body frame."""
    anchor: np.ndarray | None
    """`(3,)` joint position in the body frame in m; None at the body origin."""
    cross: np.ndarray
    """`(3, 3)` matrix K with K v = axis x v (Rodrigues' formula)."""
    cross_squared: np.ndarray
    """`(3, 3)` K @ K."""


@dataclass(frozen=True)
class _Body:
    offset: np.ndarray
    """`(3,)` body position in its parent's frame, m."""
    rotation: np.ndarray | None
    """`(3, 3)` body orientation in its parent's frame; None when aligned with the parent."""
    joints: tuple[_Joint, ...]


class SiteKinematics:
    """World position of site `site` as a function of `qpos`, for every env at once.

    Supports chains of hinge and slide joints below the world body (no free or ball joints, no mocap bodies).
    """

    def __init__(self, model: mujoco.MjModel, site: str) -> None:
        site_id = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, site)
        if site_id < 0:
            raise ValueError(f"model has no site named {site!r}")
        chain = []
        body = int(model.site_bodyid[site_id])
        while body != 0:
            chain.append(_read_body(model, body))
            body = int(model.body_parentid[body])
        self._chain = tuple(reversed(chain))
        self._site = model.site_pos[site_id].copy()

    def __call__(self, qpos: np.ndarray) -> np.ndarray:
        """Site positions `(N, 3)` in m in the world frame for joint positions `qpos` `(N, nq)`."""
        n = qpos.shape[0]
        position = np.zeros((n, 3))
        rotation = np.broadcast_to(np.eye(3), (n, 3, 3))
        for body in self._chain:
            position = position + _apply(rotation, body.offset)
            if body.rotation is not None:
                rotation = _compose(rotation, body.rotation)
            for joint in body.joints:
                q = qpos[:, joint.qpos_index]
                if not joint.hinge:
                    position = position + _apply(rotation, joint.axis) * q[:, None]
                elif joint.anchor is None:
                    rotation = _rotate_about(rotation, joint, q)
                else:
                    # Rotate about the axis through the joint anchor: the anchor stays where it is.
                    anchor = position + _apply(rotation, joint.anchor)
                    rotation = _rotate_about(rotation, joint, q)
                    position = anchor - _apply(rotation, joint.anchor)
        return position + _apply(rotation, self._site)


def _read_body(model: mujoco.MjModel, body: int) -> _Body:
    name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, body)
    if model.body_mocapid[body] >= 0:
        raise ValueError(f"SiteKinematics: body {name!r} is a mocap body")
    flat_rotation = np.empty(9)
    mujoco.mju_quat2Mat(flat_rotation, model.body_quat[body])
    joints = []
    start = int(model.body_jntadr[body])
    for joint in range(start, start + int(model.body_jntnum[body])):
        kind = int(model.jnt_type[joint])
        if kind not in (_HINGE, _SLIDE):
            raise ValueError(f"SiteKinematics supports hinge and slide joints only; body {name!r} has another")
        x, y, z = model.jnt_axis[joint]
        cross = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
        anchor = model.jnt_pos[joint].copy()
        joints.append(
            _Joint(
                qpos_index=int(model.jnt_qposadr[joint]),
                hinge=kind == _HINGE,
                axis=model.jnt_axis[joint].copy(),
                anchor=anchor if anchor.any() else None,
                cross=cross,
                cross_squared=cross @ cross,
            )
        )
    rotation = flat_rotation.reshape(3, 3)
    aligned = np.array_equal(rotation, np.eye(3))
    return _Body(model.body_pos[body].copy(), None if aligned else rotation, tuple(joints))


# Products of a batch `(N, 3, 3)` with one fixed matrix or vector as single 2-D matmuls (numpy's stacked matmul
# of 3 x 3 matrices is several times slower).


def _apply(rotation: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """`rotation @ vector` for rotations `(N, 3, 3)` and one vector `(3,)`: `(N, 3)`."""
    return (rotation.reshape(-1, 3) @ vector).reshape(-1, 3)


def _compose(rotation: np.ndarray, fixed: np.ndarray) -> np.ndarray:
    """`rotation @ fixed` for rotations `(N, 3, 3)` and one matrix `(3, 3)`: `(N, 3, 3)`."""
    return (rotation.reshape(-1, 3) @ fixed).reshape(-1, 3, 3)


def _rotate_about(rotation: np.ndarray, joint: _Joint, angle: np.ndarray) -> np.ndarray:
    """`rotation @ R(axis, angle)` `(N, 3, 3)` for a hinge turned by `angle` `(N,)` rad, by Rodrigues' formula
    R = I + sin K + (1 - cos) K^2 with K the axis' cross-product matrix."""
    sin = np.sin(angle)[:, None, None]
    one_minus_cos = (1 - np.cos(angle))[:, None, None]
    return rotation + sin * _compose(rotation, joint.cross) + one_minus_cos * _compose(rotation, joint.cross_squared)
