"""The `double_integrator/pixels` task: the cart of `double_integrator`, whose position is seen only by a camera.

The smallest camera task (`robo_rl.envs.CameraEnv`), for testing learning from pixels in seconds and without GL:
the state vector holds the velocity alone, and a tiny grey frame drawn in torch shows the rail from above, the cart
a bright blob at its position (a Gaussian across columns, so sub-pixel positions change the frame) and the target a
dim mark at the origin. A policy that brings the cart to rest must read its position from the pixels. Dynamics,
reward, time limit and success are `DoubleIntegrator`'s, unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from robo_rl.envs import INFO_FINAL_OBS, INFO_FINAL_PRIVILEGED_OBS, INFO_PRIVILEGED_OBS, ImageObs, ImageStepResult
from robo_rl.image_spec import STATE_KEY, CameraIntrinsics, ImageSpec
from robo_rl.sim.double_integrator import DoubleIntegrator, DoubleIntegratorConfig
from robo_rl.spaces import SpaceSpec

CAMERA = "rail"
"""The camera's name (the observation dict's key of its frames)."""
TARGET_LEVEL = 96
"""Grey level of the target mark (the cart's blob peaks at 255)."""


@dataclass(frozen=True)
class PixelDoubleIntegratorConfig:
    cart: DoubleIntegratorConfig = field(default_factory=DoubleIntegratorConfig)
    """The cart's task: dynamics, reward, time limit, success."""
    image_size: int = 24
    """Side of the square grey frame in pixels."""
    view_range: float = 1.5
    """The frame spans positions -view_range..+view_range m across its width; beyond, the cart is at the edge."""
    blob_sigma: float = 1.0
    """Width (standard deviation) of the cart's blob in pixels."""
    privileged_position: bool = False
    """Give the critic the cart's position as a privileged observation (the simulator knows it, the policy does not
    see it): for an asymmetric actor-critic (`sac.encoder.trained_by=actor`). The policy still reads the position
    from the frames alone."""

    def __post_init__(self) -> None:
        if self.image_size < 8:
            raise ValueError(f"image_size must be at least 8 pixels, got {self.image_size}")
        if self.view_range <= 0 or self.blob_sigma <= 0:
            raise ValueError("view_range and blob_sigma must be positive")


class PixelDoubleIntegrator:
    """`num_envs` carts seen by a camera: obs `{"state": [v], "rail": (N, S, S, 1) uint8}`, action `[force]` in N."""

    def __init__(
        self,
        num_envs: int,
        device: str | torch.device = "cpu",
        config: PixelDoubleIntegratorConfig = PixelDoubleIntegratorConfig(),
        seed: int | None = None,
    ) -> None:
        self.config = config
        self.cart = DoubleIntegrator(num_envs, device, config.cart, seed)
        self.num_envs, self.device, self.dt = num_envs, self.cart.device, self.cart.dt
        self.max_episode_steps = self.cart.max_episode_steps
        self.action_spec = self.cart.action_spec
        velocity = self.cart.obs_spec
        self.obs_spec = SpaceSpec(names=("v",), low=velocity.low[1:], high=velocity.high[1:], units=("m/s",))
        self.privileged_obs_spec: SpaceSpec | None = None
        if config.privileged_position:
            position = self.cart.obs_spec
            self.privileged_obs_spec = SpaceSpec(
                names=("x",), low=position.low[:1], high=position.high[:1], units=("m",)
            )
        self.privileged_obs: torch.Tensor | None = None
        size = config.image_size
        intrinsics = CameraIntrinsics.from_fovy(60.0, size, size)
        self.image_specs = (ImageSpec(CAMERA, size, size, 1, intrinsics),)
        self._columns = torch.arange(size, dtype=torch.float32, device=self.device)

    def reset(self, seed: int | None = None) -> ImageObs:
        cart_obs = self.cart.reset(seed)
        if self.privileged_obs_spec is not None:
            self.privileged_obs = cart_obs[:, :1].clone()
        return self._observe(cart_obs)

    def step(self, action: torch.Tensor) -> ImageStepResult:
        obs, reward, terminated, truncated, cart_info = self.cart.step(action)
        final = cart_info[INFO_FINAL_OBS]
        info: dict[str, Any] = {**cart_info, INFO_FINAL_OBS: self._observe(final)}
        if self.privileged_obs_spec is not None:
            self.privileged_obs = obs[:, :1].clone()
            info[INFO_PRIVILEGED_OBS], info[INFO_FINAL_PRIVILEGED_OBS] = self.privileged_obs, final[:, :1].clone()
        return self._observe(obs), reward, terminated, truncated, info

    def _observe(self, cart_obs: torch.Tensor) -> ImageObs:
        """The cart's `[x, v]` as the camera env's observation: `[v]` and the frame showing x."""
        return {STATE_KEY: cart_obs[:, 1:].clone(), CAMERA: self.draw(cart_obs[:, 0])}

    def draw(self, position: torch.Tensor) -> torch.Tensor:
        """Frames `(N, S, S, 1)` uint8 of carts at `position` `(N,)` m: the blob across the middle third of the rows,
        the target mark in the top rows at the centre."""
        c, size = self.config, self.config.image_size
        centre = (position.float().clamp(-c.view_range, c.view_range) / c.view_range + 1) * (size - 1) / 2
        profile = torch.exp(-0.5 * ((self._columns[None] - centre[:, None]) / c.blob_sigma) ** 2)  # (N, S)
        frames = torch.zeros(self.num_envs, size, size, device=self.device)
        rows = slice(size // 3, 2 * size // 3)
        frames[:, rows, :] = 255.0 * profile[:, None, :]
        middle = (size - 1) // 2
        frames[:, : size // 6, middle : middle + 2 - size % 2] = float(TARGET_LEVEL)
        return frames.round().to(torch.uint8).unsqueeze(-1)

    def state_dict(self) -> dict[str, Any]:
        """The cart's state (episodes, steps, random stream): frames are drawn from it."""
        return self.cart.state_dict()

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.cart.load_state_dict(state_dict)
