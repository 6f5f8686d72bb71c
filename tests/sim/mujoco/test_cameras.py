"""Batched camera frames (`robo_rl.sim.mujoco.cameras`): determinism, and intrinsics that project where MuJoCo draws."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from robo_rl.image_spec import CameraIntrinsics
from robo_rl.sim.mujoco.cameras import BatchedCameras, camera_spec

# A dark floor, a camera looking down at the origin, rolled (its x axis tilted), and a small self-lit red ball
# (a mocap body) to find.
MARKER_SCENE = """
<mujoco>
  <visual><headlight ambient="0.2 0.2 0.2" diffuse="0.2 0.2 0.2"/></visual>
  <asset><material name="glow" rgba="1 0 0 1" emission="1"/></asset>
  <worldbody>
    <geom type="plane" size="3 3 0.1" rgba="0.2 0.2 0.2 1"/>
    <camera name="eye" pos="0.3 -1.2 0.9" xyaxes="0.9831 0.1081 -0.1475 0.0698 0.5235 0.8492" fovy="50"/>
    <body name="marker" mocap="true" pos="0 0 0.2">
      <geom type="sphere" size="0.03" material="glow" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
</mujoco>
"""
HEIGHT, WIDTH = 48, 64


def _marker_at(points: np.ndarray) -> tuple[BatchedCameras, np.ndarray]:
    model = mujoco.MjModel.from_xml_string(MARKER_SCENE)
    cameras = BatchedCameras(model, ("eye",), HEIGHT, WIDTH)

    def pose(data: mujoco.MjData, env: int) -> None:
        data.mocap_pos[0] = points[env]

    return cameras, cameras.render(pose, np.arange(len(points)))["eye"]


def _project(intrinsics: CameraIntrinsics, position: np.ndarray, rotation: np.ndarray, point: np.ndarray) -> np.ndarray:
    """Pixel (column, row) of world `point` seen by a camera at `position` with axes `rotation` (columns: its x, y, z
    in the world; it looks along -z, y up), pixel centres at half-integers."""
    x, y, z = rotation.T @ (point - position)
    return np.array([intrinsics.cx + intrinsics.fx * x / -z, intrinsics.cy - intrinsics.fy * y / -z])


def test_intrinsics_project_a_marker_where_mujoco_draws_it() -> None:
    points = np.array([[0.0, 0.0, 0.2], [0.25, 0.1, 0.05], [-0.2, 0.3, 0.3]])
    cameras, frames = _marker_at(points)
    spec = cameras.image_specs[0]
    assert spec.intrinsics == CameraIntrinsics.from_fovy(50.0, HEIGHT, WIDTH)
    data = mujoco.MjData(cameras.model)
    mujoco.mj_kinematics(cameras.model, data)
    mujoco.mj_camlight(cameras.model, data)
    position, rotation = data.cam_xpos[0].copy(), data.cam_xmat[0].reshape(3, 3).copy()
    for frame, point in zip(frames, points, strict=True):
        red = (frame[..., 0] > 90) & (frame[..., 1] < 40)
        assert 1 <= red.sum() < 60, "the marker is a small blob"
        rows, columns = np.nonzero(red)
        seen = np.array([columns.mean() + 0.5, rows.mean() + 0.5])
        predicted = _project(spec.intrinsics, position, rotation, point)
        assert 2 < predicted[0] < WIDTH - 2 and 2 < predicted[1] < HEIGHT - 2
        assert np.linalg.norm(seen - predicted) < 1.0, (seen, predicted)


def test_same_state_gives_the_same_bytes_and_another_state_another_frame() -> None:
    points = np.array([[0.0, 0.0, 0.2], [0.0, 0.0, 0.2], [0.1, 0.0, 0.2]])
    cameras, first = _marker_at(points)
    again = cameras.render(lambda data, env: data.mocap_pos.__setitem__(0, points[env]), [2, 1, 0])["eye"]
    assert first.dtype == np.uint8 and first.shape == (3, HEIGHT, WIDTH, 3)
    assert np.array_equal(first[0], first[1])
    assert np.array_equal(again[::-1], first)  # a later call, in another order, draws the same bytes
    assert not np.array_equal(first[0], first[2])
    cameras.close()


def test_unknown_camera_is_refused_with_the_model_s_cameras() -> None:
    model = mujoco.MjModel.from_xml_string(MARKER_SCENE)
    with pytest.raises(ValueError, match="'eye'"):
        camera_spec(model, "nose", 32, 32)
