"""Reference positions the quadrotor flies to: a fixed point (hover) or a figure eight (tracking).

A reference maps the episode time `(num_envs,)` in s and a per-env phase `(num_envs,)` in rad, drawn at reset,
to the reference position and velocity, component-major `(3, num_envs)`, in the world frame (m, m/s).
"""

from __future__ import annotations

import math
from typing import Protocol

import torch


class Reference(Protocol):
    """A reference trajectory shared by all envs, shifted per env by a phase."""

    moving: bool
    """Whether the reference moves; the policy then also observes the reference velocity."""

    def phase(self, uniform: torch.Tensor) -> torch.Tensor:
        """Per-env phase in rad `(num_envs,)` from U(0, 1) samples `(num_envs,)`."""
        ...

    def __call__(self, time: torch.Tensor, phase: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Reference (position m, velocity m/s), each `(3, num_envs)`, at `time` s for envs with `phase`."""
        ...


class FixedPoint:
    """A point at rest: the hover target."""

    moving = False

    def __init__(self, position: tuple[float, float, float], device: torch.device, dtype: torch.dtype) -> None:
        self._position = torch.tensor(position, device=device, dtype=dtype).unsqueeze(-1)
        self._velocity = torch.zeros_like(self._position)

    def phase(self, uniform: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(uniform)

    def __call__(self, time: torch.Tensor, phase: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        n = time.shape[0]
        return self._position.expand(3, n), self._velocity.expand(3, n)


class FigureEight:
    """Lissajous figure eight at a fixed height: x = A sin(theta), y = (A / 2) sin(2 theta), z = height, with
    theta = 2 pi t / period + phase."""

    moving = True

    def __init__(
        self,
        amplitude: float,
        period: float,
        height: float,
        random_phase: bool,
        device: torch.device,
        dtype: torch.dtype,
    ) -> None:
        """`amplitude` in m, `period` in s (one full figure), `height` in m; a random phase is U(0, 2 pi)."""
        self._angular_rate = 2 * math.pi / period
        self._random_phase = random_phase
        # position = sin((theta, 2 theta)) * position_scale (+ height); velocity = cos(...) * velocity_scale.
        self._position_scale = torch.tensor([[amplitude], [amplitude / 2]], device=device, dtype=dtype)
        self._harmonics = torch.tensor([[1.0], [2.0]], device=device, dtype=dtype)
        self._velocity_scale = self._position_scale * self._harmonics * self._angular_rate
        self._height = torch.tensor([[height]], device=device, dtype=dtype)

    def phase(self, uniform: torch.Tensor) -> torch.Tensor:
        return uniform * (2 * math.pi) if self._random_phase else torch.zeros_like(uniform)

    def __call__(self, time: torch.Tensor, phase: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        theta = torch.add(phase, time, alpha=self._angular_rate).unsqueeze(0)
        angles = theta * self._harmonics
        position = torch.cat((angles.sin().mul_(self._position_scale), self._height.expand(1, theta.shape[1])))
        velocity = torch.cat((angles.cos().mul_(self._velocity_scale), torch.zeros_like(theta)))
        return position, velocity
