"""Peg insertion seen through cameras (task mujoco/peg_insert_pixels): `PegInsert` plus its wrist and side cameras.

The observation dict holds the state vector of `PegInsert` under "state" (joint angles and velocities, and the peg
tip relative to the noisy hole estimate: a policy may still use the estimate, and learn from the images where the
hole really is; with `PegInsertConfig.observe_hole_estimate=False` the joints alone, so that only the frames show
the hole, and `privileged_hole` gives the critic the tip relative to the true hole) and one frame per camera of
`PegInsertConfig.cameras`, `image_size` pixels square: "wrist" (on the hand, 6 cm off the peg's axis, looking along
the peg past its tip: the peg at the bottom of the frame, the block's top with the hole ahead) and "side" (fixed
0.4 m from the nominal hole, looking at the block and the space above it). Frames come from
`robo_rl.sim.mujoco.cameras.BatchedCameras`; see its measured speed.
"""

from __future__ import annotations

from dataclasses import replace

import mujoco
import numpy as np
import torch

from robo_rl.sim.camera_task import CameraTask, Frames
from robo_rl.sim.mujoco.cameras import BatchedCameras
from robo_rl.sim.mujoco.peg_expert import PegSearchExpert
from robo_rl.sim.mujoco.peg_insert import PEG_CAMERAS, PegInsert, PegInsertConfig

PEG_PIXELS = PegInsertConfig(cameras=PEG_CAMERAS)
"""The default config of mujoco/peg_insert_pixels: both cameras at 64 x 64."""


class PegInsertPixels(CameraTask):
    """`num_envs` peg insertions observed through `config.cameras` (a `robo_rl.envs.CameraEnv`); the state task,
    with its API (`hole_pose`, `set_hole`, ...), is `task`."""

    task: PegInsert

    def __init__(
        self,
        num_envs: int,
        device: str | torch.device = "cpu",
        config: PegInsertConfig = PEG_PIXELS,
        seed: int | None = None,
    ) -> None:
        if not config.cameras:
            raise ValueError("PegInsertPixels needs at least one camera in config.cameras (use PegInsert without)")
        self.config = config
        task = PegInsert(num_envs, device, replace(config, cameras=()), seed)
        self.cameras = BatchedCameras(task.model, config.cameras, config.image_size, config.image_size)
        super().__init__(task, self.cameras.image_specs)
        self._last: tuple[np.ndarray, Frames] | None = None
        task.episode_end_hook = self._keep_last_frames

    def _pose(self, data: mujoco.MjData, env: int) -> None:
        engine = self.task.engine
        data.qpos[:] = engine.qpos[env]
        data.mocap_pos[:] = engine.mocap_pos[env]
        data.mocap_quat[:] = engine.mocap_quat[env]

    def _frames(self) -> Frames:
        return self.cameras.render(self._pose, np.arange(self.num_envs))

    def _keep_last_frames(self, done: np.ndarray) -> None:
        self._last = (done.copy(), self.cameras.render(self._pose, done))

    def _final_frames(self, done: np.ndarray) -> Frames:
        last, self._last = self._last, None  # kept by the hook in this step, used once
        if last is None or not np.array_equal(last[0], done):
            raise RuntimeError("the peg task did not report the episodes that ended in this step")
        return last[1]

    def _close_cameras(self) -> None:
        self.cameras.close()


def peg_search_expert(env: PegInsertPixels) -> PegSearchExpert:
    """The peg task's scripted operator (`robo_rl.sim.mujoco.peg_expert`) for the camera env: it reads the true state
    of `env.task`, as it does without cameras."""
    return PegSearchExpert(env.task)
