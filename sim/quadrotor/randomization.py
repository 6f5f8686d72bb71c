"""Domain randomization: per-env physical parameters, action latency and disturbances drawn at every reset.

The draws of one env for one episode are the `EPISODE_NAMES` values, which the critic also observes
(privileged observation): parameter scales relative to the nominal frame, the action latency in control steps,
and the constant disturbance of that episode expressed as the accelerations it causes on the nominal frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from robo_rl.envs import SpaceSpec
from robo_rl.sim.quadrotor.dynamics import PARAM_SCALE_NAMES
from robo_rl.sim.quadrotor.params import QuadrotorParams

EPISODE_NAMES = (
    *(f"{name}_scale" for name in PARAM_SCALE_NAMES),
    "action_latency",
    "disturbance_acceleration_x",
    "disturbance_acceleration_y",
    "disturbance_acceleration_z",
    "disturbance_angular_acceleration_x",
    "disturbance_angular_acceleration_y",
    "disturbance_angular_acceleration_z",
)
"""Rows of the component-major episode parameters `(14, num_envs)`."""
SCALES = slice(0, 7)
LATENCY = 7
DISTURBANCE_ACCELERATION = slice(8, 11)
DISTURBANCE_ANGULAR_ACCELERATION = slice(11, 14)


@dataclass(frozen=True)
class RandomizationConfig:
    """What to randomize per env at each reset; every default is off. Half-ranges r give U(1 - r, 1 + r) scales."""

    mass: float = 0.0
    """Relative half-range of the mass."""
    inertia: float = 0.0
    """Relative half-range of each principal moment of inertia (drawn independently per axis)."""
    thrust_coefficient: float = 0.0
    """Relative half-range of the rotor thrust coefficient."""
    torque_coefficient: float = 0.0
    """Relative half-range of the rotor torque coefficient."""
    motor_time_constant: float = 0.0
    """Relative half-range of the motor time constant."""
    max_action_latency: int = 0
    """Actions take effect after L control steps, L ~ U{min_action_latency, ..., max_action_latency} per env."""
    min_action_latency: int = 0
    """Smallest drawn latency in control steps; equal to max_action_latency for a fixed latency (e.g. 2 steps =
    20 ms at dt 0.01 s)."""
    position_noise: float = 0.0
    """Standard deviation in m of Gaussian noise added to the observed position error at every step."""
    velocity_noise: float = 0.0
    """Standard deviation in m/s of Gaussian noise added to the observed linear velocity."""
    angular_velocity_noise: float = 0.0
    """Standard deviation in rad/s of Gaussian noise added to the observed angular velocity."""
    disturbance_force: float = 0.0
    """Constant world-frame force per episode, each axis ~ U(-f, f) x the nominal weight (f is a fraction)."""
    disturbance_torque: float = 0.0
    """Constant body-frame torque per episode, each axis ~ U(-t, t), t in N m."""

    def __post_init__(self) -> None:
        relative = ("mass", "inertia", "thrust_coefficient", "torque_coefficient", "motor_time_constant")
        bad = [name for name in relative if not 0.0 <= getattr(self, name) < 1.0]
        if bad:
            raise ValueError(f"RandomizationConfig: relative half-ranges must lie in [0, 1), got {bad}")
        absolute = ("position_noise", "velocity_noise", "angular_velocity_noise")
        negative = [name for name in (*absolute, "disturbance_force", "disturbance_torque") if getattr(self, name) < 0]
        if negative:
            raise ValueError(f"RandomizationConfig: fields must be >= 0: {negative}")
        for name in ("min_action_latency", "max_action_latency"):
            latency = getattr(self, name)
            if not isinstance(latency, int) or latency < 0:
                raise ValueError(f"RandomizationConfig: {name} must be an int >= 0, got {latency}")
        if self.min_action_latency > self.max_action_latency:
            latencies = (self.min_action_latency, self.max_action_latency)
            raise ValueError(f"RandomizationConfig: min_action_latency > max_action_latency: {latencies}")

    @property
    def scale_half_ranges(self) -> tuple[float, ...]:
        """Relative half-ranges in `PARAM_SCALE_NAMES` order."""
        inertia = (self.inertia,) * 3
        return (self.mass, *inertia, self.thrust_coefficient, self.torque_coefficient, self.motor_time_constant)

    @property
    def randomizes_dynamics(self) -> bool:
        return any(r > 0 for r in self.scale_half_ranges)

    @property
    def has_disturbance(self) -> bool:
        return self.disturbance_force > 0 or self.disturbance_torque > 0

    @property
    def observation_noise(self) -> tuple[float, float, float]:
        """Noise standard deviations (position m, velocity m/s, angular velocity rad/s)."""
        return (self.position_noise, self.velocity_noise, self.angular_velocity_noise)

    @property
    def enabled(self) -> bool:
        """Whether anything is drawn per episode (observation noise is drawn per step instead)."""
        return self.randomizes_dynamics or self.has_disturbance or self.max_action_latency > 0


class EpisodeSampler:
    """Draws episode parameters `(14, n)` (rows `EPISODE_NAMES`) from a generator, with one random call."""

    def __init__(
        self, config: RandomizationConfig, nominal: QuadrotorParams, device: torch.device, dtype: torch.dtype
    ) -> None:
        scale_half = config.scale_half_ranges
        acceleration = config.disturbance_force * nominal.gravity  # force / nominal mass
        angular = [config.disturbance_torque / moment for moment in nominal.inertia]
        min_latency = config.min_action_latency
        latency_levels = float(config.max_action_latency - min_latency + 1)
        half = (*scale_half, 0.0, *([acceleration] * 3), *angular)
        # value = offset + width * U(0, 1): scales 1 +- r, latency min + floor(U * levels), disturbances +- half.
        width = [2 * h for h in half]
        width[LATENCY] = latency_levels
        offset = [1.0 - h for h in scale_half] + [float(min_latency)] + [-h for h in half[8:]]
        self._width = torch.tensor(width, device=device, dtype=dtype).unsqueeze(-1)
        self._offset = torch.tensor(offset, device=device, dtype=dtype).unsqueeze(-1)
        self._max_latency = float(config.max_action_latency)
        self._nominal = torch.tensor([1.0] * 7 + [0.0] * 7, device=device, dtype=dtype).unsqueeze(-1)
        self.spec = self._spec(half, scale_half, min_latency, config.max_action_latency)

    def nominal(self, n: int) -> torch.Tensor:
        """`(14, n)` parameters of the nominal frame: scales 1, no latency, no disturbance."""
        return self._nominal.expand(-1, n).clone()

    def sample(self, n: int, generator: torch.Generator, fraction: float | torch.Tensor = 1.0) -> torch.Tensor:
        """`(14, n)` freshly drawn parameters; `fraction` < 1 shrinks every range toward the nominal values
        (scales toward 1, disturbances and latency toward 0) for a curriculum."""
        return self.from_uniform(self.draw(n, generator), fraction)

    def draw(self, n: int, generator: torch.Generator) -> torch.Tensor:
        """`(14, n)` U(0, 1) samples, the only random call of `sample`."""
        width = self._width
        return torch.rand(len(EPISODE_NAMES), n, generator=generator, device=width.device, dtype=width.dtype)

    def from_uniform(self, uniform: torch.Tensor, fraction: float | torch.Tensor = 1.0) -> torch.Tensor:
        """`(14, n)` parameters from U(0, 1) samples `(14, n)` (no random call: traceable by torch.compile);
        `fraction` (a float or a 0-d tensor) as in `sample`."""
        values = torch.addcmul(self._offset, uniform, self._width)
        if isinstance(fraction, torch.Tensor) or fraction < 1.0:
            values = torch.lerp(self._nominal, values, fraction)
        values[LATENCY].floor_().clamp_(max=self._max_latency)
        return values

    @staticmethod
    def _spec(half: tuple[float, ...], scale_half: tuple[float, ...], min_latency: int, max_latency: int) -> SpaceSpec:
        low = (*(1 - h for h in scale_half), float(min_latency), *(-h for h in half[8:]))
        high = (*(1 + h for h in scale_half), float(max_latency), *half[8:])
        units = ("1",) * 7 + ("steps",) + ("m/s^2",) * 3 + ("rad/s^2",) * 3
        return SpaceSpec(names=EPISODE_NAMES, low=low, high=high, units=units)
