"""Headless chase-camera frames from a PyBullet client (TinyRenderer: CPU only, works in DIRECT mode)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

CAMERA_DISTANCE = 1.6
"""Distance in m from the camera to the followed point."""
CAMERA_PITCH = -30.0
"""Camera pitch in degrees (negative: looking down)."""
CAMERA_FOV = 60.0
"""Vertical field of view in degrees."""
CAMERA_NEAR, CAMERA_FAR = 0.05, 30.0
"""Clipping planes in m."""


def follow_camera_image(
    bullet: Any, client: int, target: Sequence[float], heading: float, width: int, height: int
) -> np.ndarray:
    """RGB frame `(height, width, 3)` uint8 of client `client`, seen from behind `target` (x, y, z in m) along
    `heading` (rad, counter-clockwise from the world x axis), rendered by TinyRenderer without a display."""
    # At camera yaw 0 PyBullet looks along world +y, so a yaw of heading - 90 degrees looks along the heading.
    view = bullet.computeViewMatrixFromYawPitchRoll(
        cameraTargetPosition=list(target),
        distance=CAMERA_DISTANCE,
        yaw=math.degrees(heading) - 90.0,
        pitch=CAMERA_PITCH,
        roll=0.0,
        upAxisIndex=2,
    )
    projection = bullet.computeProjectionMatrixFOV(CAMERA_FOV, width / height, CAMERA_NEAR, CAMERA_FAR)
    _, _, rgba, _, _ = bullet.getCameraImage(
        width,
        height,
        viewMatrix=view,
        projectionMatrix=projection,
        renderer=bullet.ER_TINY_RENDERER,
        flags=bullet.ER_NO_SEGMENTATION_MASK,
        physicsClientId=client,
    )
    return np.ascontiguousarray(np.asarray(rgba, dtype=np.uint8).reshape(height, width, 4)[..., :3])
