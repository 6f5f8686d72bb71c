"""The RC car race seen through a forward camera (task rc_car/race_pixels): `RCCarRace` plus frames of its track.

The car is still simulated in torch (`RCCarRace`, its torch step: the numba step restarts finished cars inside its
kernel, where no final pose can be read out); after each step every car's pose (x, y, yaw) is drawn by MuJoCo in
the textured track scene of `robo_rl.sim.rc_car.track_scene`, from the "front" camera on the car's nose. The
observation dict holds the race's state vector under "state" (look-ahead points, velocities, offsets: a policy
may learn to rely on the camera instead; `RaceConfig.camera_state` keeps only some of it, e.g. the speed, and makes
the whole vector privileged) and the frames under "front", `image_size` pixels square.
"""

from __future__ import annotations

from dataclasses import replace

import mujoco
import numpy as np
import torch

from robo_rl.sim.camera_task import CameraTask, Frames
from robo_rl.sim.mujoco.cameras import BatchedCameras
from robo_rl.sim.rc_car.expert import RaceDriver
from robo_rl.sim.rc_car.race import RCCarRace
from robo_rl.sim.rc_car.race_config import RACE_CAMERAS, RaceConfig
from robo_rl.sim.rc_car.track_scene import pose_car, track_model

RACE_PIXELS = RaceConfig(cameras=RACE_CAMERAS)
"""The default config of rc_car/race_pixels: the forward camera at 64 x 64."""


class RCCarRacePixels(CameraTask):
    """`num_envs` RC cars racing, observed through the forward camera (a `robo_rl.envs.CameraEnv`); the state
    task, with its API (`state`, `set_state`, `projection`, ...), is `task`."""

    task: RCCarRace

    def __init__(
        self,
        num_envs: int,
        device: str | torch.device = "cpu",
        config: RaceConfig = RACE_PIXELS,
        seed: int | None = None,
    ) -> None:
        """`config.backend` "auto" steps the torch backend here; "numba" is refused (module docstring)."""
        if not config.cameras:
            raise ValueError("RCCarRacePixels needs config.cameras=('front',) (use RCCarRace without cameras)")
        if config.backend == "numba":
            raise ValueError("RCCarRacePixels steps the torch backend: the numba step hides the final poses")
        self.config = config
        task = RCCarRace(num_envs, device, replace(config, cameras=(), camera_state=(), backend="torch"), seed)
        size = config.image_size
        model = track_model(task.track, task.params, max_frame=size)
        self.cameras = BatchedCameras(model, config.cameras, size, size)
        super().__init__(task, self.cameras.image_specs, config.camera_state)
        self._final_pose = np.zeros((num_envs, 3))
        task.episode_end_hook = self._keep_final_poses

    def _frames(self) -> Frames:
        return self._render(self._poses(), np.arange(self.num_envs))

    def _keep_final_poses(self) -> None:
        self._final_pose = self._poses()

    def _final_frames(self, done: np.ndarray) -> Frames:
        return self._render(self._final_pose, done)

    def _poses(self) -> np.ndarray:
        """`(num_envs, 3)` x, y (m) and yaw (rad) of every car now, as float64 numpy."""
        return self.task.state[:, :3].double().cpu().numpy()

    def _render(self, poses: np.ndarray, index: np.ndarray) -> Frames:
        def pose(data: mujoco.MjData, env: int) -> None:
            pose_car(data, *(float(v) for v in poses[env]))

        return self.cameras.render(pose, index)

    def _close_cameras(self) -> None:
        self.cameras.close()


def race_driver(env: RCCarRacePixels) -> RaceDriver:
    """The race's scripted driver (`robo_rl.sim.rc_car.expert`) for the camera env: it drives `env.task` from its
    true state, as it does without cameras."""
    return RaceDriver(env.task)
