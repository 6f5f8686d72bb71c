"""A small camera env for the ROS camera tests: rc_car/race with two cameras whose pixels are drawn in numpy.

The frames need no renderer (MuJoCo cameras are another branch's work): each pixel is a function of the env's step
count and its state, so consecutive frames differ (order is checkable) and a frame belongs to one state. Cameras:
`front` (RGB, with intrinsics) and `grey` (mono, without: an uncalibrated camera). `register()` adds it to the task
registry as `TASK`, so sim_bridge builds it by name in the scenario's own process.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from robo_rl.envs import INFO_FINAL_OBS, ImageObs, ImageStepResult
from robo_rl.image_spec import STATE_KEY, CameraIntrinsics, ImageSpec
from robo_rl.sim.rc_car.race import RaceConfig, RCCarRace

TASK = "test/camera_car"
FRONT = ImageSpec("front", 12, 16, 3, CameraIntrinsics.from_fovy(60.0, 12, 16))
GREY = ImageSpec("grey", 6, 8, 1)
DEFAULT = RaceConfig()


def draw(spec: ImageSpec, steps: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
    """`(N, H, W, C)` uint8 frames: a ramp shifted by the step count, one column carrying the first state value."""
    h, w, c = spec.shape
    ramp = torch.arange(h * w * c, dtype=torch.int64).reshape(1, h, w, c)
    frames = (ramp + 7 * steps.reshape(-1, 1, 1, 1)) % 256
    frames[:, :, 0, :] = ((state[:, :1] * 40.0).round().to(torch.int64) % 256).reshape(-1, 1, 1)
    return frames.to(torch.uint8)


class CameraCar:
    """`CameraEnv`: RCCarRace's dynamics and state vector, plus `front` and `grey` frames (module docstring)."""

    image_specs = (FRONT, GREY)

    def __init__(
        self, num_envs: int, device: str | torch.device = "cpu", config: RaceConfig = DEFAULT, seed: int | None = None
    ) -> None:
        self.inner = RCCarRace(num_envs, device=device, config=config, seed=seed)
        self.steps = torch.zeros(num_envs, dtype=torch.int64)

    def __getattr__(self, name: str) -> Any:  # num_envs, dt, specs, actuator, state: the car's
        return getattr(self.inner, name)

    def reset(self, seed: int | None = None) -> ImageObs:
        self.steps.zero_()
        return self._observe(self.inner.reset(seed))

    def step(self, action: torch.Tensor) -> ImageStepResult:
        obs, reward, terminated, truncated, info = self.inner.step(action)
        self.steps += 1
        final = self._observe(info[INFO_FINAL_OBS])
        return self._observe(obs), reward, terminated, truncated, {**info, INFO_FINAL_OBS: final}

    def _observe(self, state: torch.Tensor) -> ImageObs:
        frames = {spec.name: draw(spec, self.steps, state) for spec in self.image_specs}
        return {STATE_KEY: state, **frames}


def register() -> None:
    from robo_rl.sim.registry import register as add

    add(TASK, CameraCar, about="test: rc_car/race with drawn cameras")


def frames_of(obs: ImageObs) -> dict[str, np.ndarray]:
    """Env 0's frames of an observation, as numpy."""
    return {spec.name: obs[spec.name][0].numpy() for spec in CameraCar.image_specs}
