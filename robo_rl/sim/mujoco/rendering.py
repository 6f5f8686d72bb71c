"""Offscreen frames of one env from a camera defined in the MJCF, for `RenderableEnv.render`.

The GL context (and `mujoco.Renderer`) is created on the first frame, so envs that never render need no GL. On a
headless machine MuJoCo needs `MUJOCO_GL=egl` (or `osmesa`) in the environment before `mujoco` is imported;
the command line and the tests set it, library code does not.
"""

from __future__ import annotations

import mujoco
import numpy as np

FRAME_HEIGHT = 480
"""Frame height in pixels (the bundled models declare a 640 x 480 offscreen buffer)."""
FRAME_WIDTH = 640
"""Frame width in pixels."""


class FrameRenderer:
    """Draws `MjData` snapshots of `model` from camera `camera` as `(FRAME_HEIGHT, FRAME_WIDTH, 3)` uint8 frames."""

    def __init__(self, model: mujoco.MjModel, camera: str) -> None:
        if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, camera) < 0:
            raise ValueError(f"model has no camera named {camera!r}")
        self.model, self.camera = model, camera
        self.data = mujoco.MjData(model)
        """Scratch data: load an env's state into it (e.g. with `engine.snapshot`), then call `render`."""
        self._renderer: mujoco.Renderer | None = None

    def render(self) -> np.ndarray:
        """RGB frame `(FRAME_HEIGHT, FRAME_WIDTH, 3)` uint8 of `self.data` as it is now."""
        if self._renderer is None:
            self._renderer = mujoco.Renderer(self.model, height=FRAME_HEIGHT, width=FRAME_WIDTH)
        self._renderer.update_scene(self.data, camera=self.camera)
        return self._renderer.render().copy()

    def close(self) -> None:
        """Free the GL context, if one was made."""
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
