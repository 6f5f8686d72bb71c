"""Batched offscreen camera frames: the images of `N` envs from named MJCF cameras, as uint8 `(N, H, W, 3)` arrays.

A camera env (`robo_rl.envs.CameraEnv`) renders every env's state at every step, so the renderer is built for that loop
rather than for one pretty frame (`rendering.FrameRenderer`): one `mujoco.Renderer` of the requested size, made on the
first frame (envs that never render need no GL) and reused for every env and camera; one scratch `MjData` into which
each env's state is posed (`mj_kinematics` + `mj_camlight`: poses only, no collision or dynamics); frames written
straight into the batch array. Shadows, reflections, skybox and haze are off and sites are hidden: shadows cost most of
the time of a small frame on a software GL (llvmpipe, the wrist camera at 64 x 64, load average 5.6: 10 frames/s with
these effects, 320 without), and markers that only exist in simulation would be a cue no real camera gives.

Frames are deterministic: the same state gives the same bytes (one renderer, fixed scene options, no time- or
frame-dependent effects), which the tests check.

Each camera's `ImageSpec` carries pinhole intrinsics from the camera's vertical field of view (`cam_fovy`): MuJoCo
renders a centred pinhole with square pixels, so `CameraIntrinsics.from_fovy` is exact
(tests/sim/mujoco/test_cameras.py projects a marker with them and finds MuJoCo's drawing of it within a pixel).

Measured (bench/camera_fps.py, EGL on Mesa llvmpipe, 2-core CPU shared with other jobs, load average 4.0-5.4): the arm's
wrist camera 290-380 frames/s at 64 x 64 and 240-250 at 128 x 128, its side camera 260-310 and 160-230, the car's front
camera 420-570 and 370-410, at 1, 8 and 32 envs alike: frames are drawn one after another, so the rate does not grow
with the batch (in a profile one render call took 0.9 ms at 64 x 64, the pose and scene update a few microseconds; a
tiled atlas, all envs drawn into one buffer and read back at once, was no faster). A camera env steps 150-160
env-steps/s (peg, both cameras at 64 x 64) and 280-320 (car), against 2.4-2.7k and 1.8-6.3k without cameras: the frames
are the cost. On a GPU, MJX/Madrona-style batch rendering would be the way past this.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import mujoco
import numpy as np

from robo_rl.image_spec import CameraIntrinsics, ImageSpec

Poser = Callable[[mujoco.MjData, int], None]
"""Writes env `i`'s positions (qpos, mocap poses) into the scratch `MjData`; the renderer computes the poses."""

_OFF = (
    mujoco.mjtRndFlag.mjRND_SHADOW,
    mujoco.mjtRndFlag.mjRND_REFLECTION,
    mujoco.mjtRndFlag.mjRND_SKYBOX,
    mujoco.mjtRndFlag.mjRND_HAZE,
    mujoco.mjtRndFlag.mjRND_FOG,
)
"""Scene effects turned off for observation frames (cost, and nothing a policy should learn from)."""


def camera_spec(model: mujoco.MjModel, camera: str, height: int, width: int) -> ImageSpec:
    """The `ImageSpec` of MJCF camera `camera` rendered at `height` x `width`: RGB, intrinsics from its `fovy`."""
    camera_id = camera_index(model, camera)
    intrinsics = CameraIntrinsics.from_fovy(float(model.cam_fovy[camera_id]), height, width)
    return ImageSpec(camera, height, width, 3, intrinsics)


def camera_index(model: mujoco.MjModel, camera: str) -> int:
    """The id of camera `camera` in `model`; ValueError naming the model's cameras if it has none of that name."""
    camera_id = int(mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, camera))
    if camera_id < 0:
        names = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_CAMERA, i) for i in range(model.ncam)]
        raise ValueError(f"model has no camera named {camera!r}; its cameras: {names}")
    return camera_id


class BatchedCameras:
    """Frames of many envs from the cameras `cameras` of `model`, at `height` x `width` (module docstring).

    Attributes:
        image_specs: one `ImageSpec` per camera, in the order of `cameras`.
        data: the scratch `MjData` each env is posed into (the `Poser` writes it).
    """

    def __init__(self, model: mujoco.MjModel, cameras: Sequence[str], height: int, width: int) -> None:
        """`model`'s offscreen buffer is enlarged to fit the frames if it is smaller (it only bounds frame size)."""
        if not cameras:
            raise ValueError("BatchedCameras needs at least one camera")
        self.model, self.height, self.width = model, height, width
        self.image_specs = tuple(camera_spec(model, name, height, width) for name in cameras)
        self._camera_ids = tuple(camera_index(model, name) for name in cameras)
        model.vis.global_.offwidth = max(int(model.vis.global_.offwidth), width)
        model.vis.global_.offheight = max(int(model.vis.global_.offheight), height)
        self.data = mujoco.MjData(model)
        self._option = _observation_option()
        self._renderer: mujoco.Renderer | None = None

    @property
    def names(self) -> tuple[str, ...]:
        """The cameras' names, in order."""
        return tuple(spec.name for spec in self.image_specs)

    def render(self, pose: Poser, index: Sequence[int] | np.ndarray) -> dict[str, np.ndarray]:
        """`{camera: (len(index), height, width, 3) uint8}`: frames of envs `index`, each posed by `pose`."""
        index = np.asarray(index, dtype=np.int64).reshape(-1)
        frames = {name: np.empty((index.size, self.height, self.width, 3), np.uint8) for name in self.names}
        renderer = self._gl()
        for row, env in enumerate(index):
            pose(self.data, int(env))
            mujoco.mj_kinematics(self.model, self.data)
            mujoco.mj_camlight(self.model, self.data)
            for name, camera_id in zip(self.names, self._camera_ids, strict=True):
                renderer.update_scene(self.data, camera=camera_id, scene_option=self._option)
                renderer.render(out=frames[name][row])
        return frames

    def close(self) -> None:
        """Free the GL context, if one was made (a later `render` makes a new one)."""
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None

    def _gl(self) -> mujoco.Renderer:
        """The renderer, made on first use with the observation scene flags."""
        if self._renderer is None:
            self._renderer = mujoco.Renderer(self.model, height=self.height, width=self.width)
            for flag in _OFF:
                self._renderer.scene.flags[flag] = False
        return self._renderer


def _observation_option() -> mujoco.MjvOption:
    """Visual options of observation frames: the model's defaults with every site group hidden."""
    option = mujoco.MjvOption()
    option.sitegroup[:] = 0
    return option
