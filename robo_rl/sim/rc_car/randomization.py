"""Domain randomization of the RC car: per-env friction, mass and action latency drawn at every reset.

The draws of one env for one episode are the `EPISODE_NAMES` values, which the critic also observes
(privileged observation): the friction coefficient mu itself, the mass scale relative to the nominal car, and
the action latency in control steps.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from robo_rl.envs import SpaceSpec

EPISODE_NAMES = ("friction", "mass_scale", "action_latency")
"""Rows of the component-major episode parameters `(3, num_envs)`."""
FRICTION, MASS_SCALE, LATENCY = range(3)


@dataclass(frozen=True)
class RandomizationConfig:
    """What to randomize per env at each reset; every default is off. Half-ranges r give U(1 - r, 1 + r) scales."""

    friction: float = 0.0
    """Relative half-range of the tire-road friction coefficient mu (peak tire forces and traction limit)."""
    mass: float = 0.0
    """Relative half-range of the mass (the yaw inertia scales with it)."""
    max_action_latency: int | None = None
    """Actions take effect after L control steps, L ~ U{min_action_latency, ..., max_action_latency} per env;
    None keeps the car's own latency (`CarParams.latency` rounded to control steps) for every env."""
    min_action_latency: int = 0
    """Smallest drawn latency in control steps (used with max_action_latency); equal to it for a fixed latency."""

    def __post_init__(self) -> None:
        bad = [name for name in ("friction", "mass") if not 0.0 <= getattr(self, name) < 1.0]
        if bad:
            raise ValueError(f"RandomizationConfig: relative half-ranges must lie in [0, 1), got {bad}")
        if not isinstance(self.min_action_latency, int) or self.min_action_latency < 0:
            raise ValueError(
                f"RandomizationConfig.min_action_latency must be an int >= 0, got {self.min_action_latency}"
            )
        latency = self.max_action_latency
        if latency is not None and (not isinstance(latency, int) or latency < self.min_action_latency):
            raise ValueError(
                f"RandomizationConfig.max_action_latency must be None or an int >= min_action_latency "
                f"({self.min_action_latency}), got {latency}"
            )

    @property
    def randomizes_dynamics(self) -> bool:
        return self.friction > 0 or self.mass > 0

    @property
    def randomizes_latency(self) -> bool:
        return self.max_action_latency is not None and self.max_action_latency > self.min_action_latency


class EpisodeSampler:
    """Draws episode parameters `(3, n)` (rows `EPISODE_NAMES`) from U(0, 1) samples."""

    def __init__(
        self,
        config: RandomizationConfig,
        nominal_friction: float,
        nominal_latency: int,
        device: torch.device,
        dtype: torch.dtype,
    ) -> None:
        low_latency = nominal_latency if config.max_action_latency is None else config.min_action_latency
        high_latency = nominal_latency if config.max_action_latency is None else config.max_action_latency
        self.max_latency = high_latency
        low = (nominal_friction * (1 - config.friction), 1 - config.mass, float(low_latency))
        # Latency: low + floor(U * levels), levels = high - low + 1 (clamped to high for U = 1).
        width = (2 * config.friction * nominal_friction, 2 * config.mass, float(high_latency - low_latency + 1))
        self._low = torch.tensor(low, device=device, dtype=dtype).unsqueeze(-1)
        self._width = torch.tensor(width, device=device, dtype=dtype).unsqueeze(-1)
        nominal = (nominal_friction, 1.0, float(low_latency))
        self._nominal = torch.tensor(nominal, device=device, dtype=dtype).unsqueeze(-1)
        self.spec = SpaceSpec(
            names=EPISODE_NAMES,
            low=(low[0], low[1], float(low_latency)),
            high=(low[0] + width[0], low[1] + width[1], float(high_latency)),
            units=("1", "1", "steps"),
        )

    def nominal(self, n: int) -> torch.Tensor:
        """`(3, n)` parameters of the nominal car (the smallest latency of the range)."""
        return self._nominal.expand(-1, n).clone()

    def from_uniform(self, uniform: torch.Tensor) -> torch.Tensor:
        """`(3, n)` parameters from U(0, 1) samples `(3, n)`."""
        values = torch.addcmul(self._low, uniform, self._width)
        values[LATENCY].floor_().clamp_(max=float(self.max_latency))
        return values
