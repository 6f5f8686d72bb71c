"""Domain randomization: per-env physical parameters, action latency and disturbances drawn at every reset.

The draws of one env for one episode are the `EPISODE_NAMES` values, which the critic also observes
(privileged observation): parameter scales relative to the nominal frame, the action latency in control steps,
and the constant disturbance of that episode expressed as the accelerations it causes on the nominal frame.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import torch

import robo_rl.sim.quadrotor.airframes as airframe_math
from robo_rl.envs import SpaceSpec
from robo_rl.sim.quadrotor.airframes import AIRFRAME_ROWS, AIRFRAME_UNIFORMS, FEATURE_NAMES, AirframeDistribution
from robo_rl.sim.quadrotor.dynamics import PARAM_SCALE_NAMES
from robo_rl.sim.quadrotor.params import QuadrotorParams

EPISODE_NAMES = (
    *(f"{name}_scale" for name in PARAM_SCALE_NAMES),
    "thrust_to_weight",
    "thrust_curve_quadratic_share",
    "battery_thrust_scale",
    "action_latency",
    "disturbance_acceleration_x",
    "disturbance_acceleration_y",
    "disturbance_acceleration_z",
    "disturbance_angular_acceleration_x",
    "disturbance_angular_acceleration_y",
    "disturbance_angular_acceleration_z",
)
"""Rows of the component-major episode parameters `(18, num_envs)`."""
SCALES = slice(0, 8)
THRUST_SCALE = 4
THRUST_TO_WEIGHT = 8
QUADRATIC_SHARE = 9
BATTERY = 10
LATENCY = 11
DISTURBANCE_ACCELERATION = slice(12, 15)
DISTURBANCE_ANGULAR_ACCELERATION = slice(15, 18)
Range = tuple[float, float]


@dataclass(frozen=True)
class RandomizationConfig:
    """What to randomize per env at each reset; every default is off. Half-ranges r give U(1 - r, 1 + r) scales;
    the `(low, high)` fields, where set, replace them with ranges of their own (asymmetric, or absolute)."""

    mass: float = 0.0
    """Relative half-range of the mass."""
    inertia: float = 0.0
    """Relative half-range of each principal moment of inertia (drawn independently per axis)."""
    inertia_scale: Range | None = None
    """(low, high) scale of each principal moment of inertia relative to the frame's, drawn independently per axis
    (e.g. (0.8, 3.0)); replaces `inertia`."""
    thrust_coefficient: float = 0.0
    """Relative half-range of the whole rotor thrust curve (every coefficient scaled alike)."""
    thrust_to_weight: Range | None = None
    """(low, high) thrust-to-weight ratio: each env's thrust curve is rebuilt as `k ((1 - b) u + b u^2)` with
    `4 k` = the drawn ratio times the env's (randomized) weight and b from `thrust_curve_quadratic`, so both the
    maximum thrust and the hover command vary (replaces the frame's curve; `thrust_coefficient` scales it on top)."""
    thrust_curve_quadratic: Range = (0.5, 1.0)
    """(low, high) share b of the quadratic term in a curve drawn by `thrust_to_weight` (0: thrust linear in the
    command, 1: quadratic). With thrust-to-weight 1.4-2.3 and b 0.5-1, the hover command spans 0.56-0.85."""
    battery_sag: float = 0.0
    """Thrust scaled by U(1 - s, 1) per episode: a battery between full and sagged by s (fraction)."""
    torque_coefficient: float = 0.0
    """Relative half-range of the yaw torque per thrust (torque_to_thrust)."""
    motor_time_constant: float = 0.0
    """Relative half-range of the motor rise and fall time constants (drawn independently)."""
    motor_rise_time_constant: Range | None = None
    """(low, high) motor rise time constant in s; replaces `motor_time_constant` for the rise."""
    motor_fall_time_constant: Range | None = None
    """(low, high) motor fall time constant in s; replaces `motor_time_constant` for the fall."""
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
        bad += [] if 0.0 <= self.battery_sag < 1.0 else ["battery_sag"]
        if bad:
            raise ValueError(f"RandomizationConfig: relative half-ranges must lie in [0, 1), got {bad}")
        ranges = ("inertia_scale", "thrust_to_weight", "motor_rise_time_constant", "motor_fall_time_constant")
        bad = [name for name in ranges if not _valid_range(getattr(self, name), positive=True)]
        bad += [] if _valid_range(self.thrust_curve_quadratic, positive=False, top=1.0) else ["thrust_curve_quadratic"]
        if bad:
            raise ValueError(
                f"RandomizationConfig: need (low, high) with 0 < low <= high (shares within [0, 1]): {bad}"
            )
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

    def scale_ranges(self, nominal: QuadrotorParams) -> tuple[Range, ...]:
        """(low, high) scale of each row of `PARAM_SCALE_NAMES` relative to the frame `nominal`."""

        def half(r: float) -> Range:
            return (1.0 - r, 1.0 + r)

        def absolute(limits: Range | None, value: float) -> Range:
            return half(self.motor_time_constant) if limits is None else (limits[0] / value, limits[1] / value)

        inertia = half(self.inertia) if self.inertia_scale is None else self.inertia_scale
        return (
            half(self.mass), inertia, inertia, inertia, half(self.thrust_coefficient), half(self.torque_coefficient),
            absolute(self.motor_rise_time_constant, nominal.motor_rise_time_constant),
            absolute(self.motor_fall_time_constant, nominal.motor_fall_time_constant),
        )  # fmt: skip

    @property
    def randomizes_dynamics(self) -> bool:
        half_ranges = (self.mass, self.inertia, self.thrust_coefficient, self.torque_coefficient)
        ranges = (self.inertia_scale, self.thrust_to_weight, self.motor_rise_time_constant)
        changed = any(r > 0 for r in (*half_ranges, self.motor_time_constant, self.battery_sag))
        return changed or any(r is not None for r in (*ranges, self.motor_fall_time_constant))

    @property
    def has_disturbance(self) -> bool:
        return self.disturbance_force > 0 or self.disturbance_torque > 0

    @property
    def observation_noise(self) -> tuple[float, float, float]:
        """Noise standard deviations (position m, velocity m/s, angular velocity rad/s)."""
        return (self.position_noise, self.velocity_noise, self.angular_velocity_noise)

    @property
    def only_thrust_scale(self) -> bool:
        """Whether nothing but the thrust curve's scale (`thrust_coefficient`) is drawn per episode, or nothing at
        all (what the numba hover step supports)."""
        return not dataclasses.replace(self, thrust_coefficient=0.0).enabled

    @property
    def enabled(self) -> bool:
        """Whether anything is drawn per episode (observation noise is drawn per step instead)."""
        return self.randomizes_dynamics or self.has_disturbance or self.max_action_latency > 0


def _valid_range(value: Range | None, positive: bool, top: float = math.inf) -> bool:
    if value is None:
        return True
    low, high = value
    return (low > 0 if positive else low >= 0) and low <= high <= top


class EpisodeSampler:
    """Draws episode parameters `(18, n)` (rows `EPISODE_NAMES`) from a generator, with one random call.

    With `airframes` (and the control period `dt` its latency needs) the parameters are `(18 + 9, n)`: each
    column a whole airframe (`robo_rl.sim.quadrotor.airframes`: rows `AIRFRAME_ROWS` and the latency from it,
    then its `FEATURE_NAMES`), the thrust scale, battery and disturbances still from `config`."""

    def __init__(
        self,
        config: RandomizationConfig,
        nominal: QuadrotorParams,
        device: torch.device,
        dtype: torch.dtype,
        airframes: AirframeDistribution | None = None,
        dt: float = 0.01,
    ) -> None:
        acceleration = config.disturbance_force * nominal.gravity  # force / nominal mass
        angular = [config.disturbance_torque / moment for moment in nominal.inertia]
        min_latency, max_latency = config.min_action_latency, config.max_action_latency
        if airframes is not None:
            min_latency, max_latency = airframes.latency_steps(dt)
        _, c1, c2 = nominal.thrust_curve
        share = c2 / (c1 + c2) if c1 + c2 > 0 else 1.0
        ratio = nominal.thrust_to_weight
        ranges = [
            *config.scale_ranges(nominal),
            (ratio, ratio) if config.thrust_to_weight is None else config.thrust_to_weight,
            (share, share) if config.thrust_to_weight is None else config.thrust_curve_quadratic,
            (1.0 - config.battery_sag, 1.0),
            (float(min_latency), float(max_latency + 1)),
            *([(-acceleration, acceleration)] * 3),
            *[(-a, a) for a in angular],
        ]
        nominal_values = [1.0] * 8 + [ratio, share, 1.0] + [0.0] * 7
        # value = low + (high - low) * U(0, 1); the latency row is floored to an integer number of steps.
        self._width = _column([high - low for low, high in ranges], device, dtype)
        self._offset = _column([low for low, _ in ranges], device, dtype)
        self._max_latency = float(max_latency)
        self.max_latency = max_latency
        """Most control steps of latency a draw can hold."""
        self.rebuilds_thrust_curve = config.thrust_to_weight is not None or airframes is not None
        spec_ranges = [*ranges[:LATENCY], (float(min_latency), self._max_latency), *ranges[LATENCY + 1 :]]
        self.airframes = airframes
        self.airframe_constants: tuple[float, ...] = ()
        """`airframes.NUM_CONSTANTS` floats of the airframe distribution relative to the nominal frame, or ()."""
        names: tuple[str, ...] = EPISODE_NAMES
        if airframes is not None:
            self.airframe_constants = airframes.constants(nominal)
            for row, limits in airframes.scale_ranges(nominal).items():
                spec_ranges[row] = limits
            spec_ranges += [(-1.0, 1.0)] * (len(FEATURE_NAMES) - 1) + [(0.0, 1.0)]
            nominal_values += list(airframes.nominal_features(nominal))
            names = (*EPISODE_NAMES, *FEATURE_NAMES)
        self._nominal = _column(nominal_values, device, dtype)
        self.names = names
        """Names of the rows of the drawn parameters."""
        self.num_uniforms = len(EPISODE_NAMES) + (AIRFRAME_UNIFORMS if airframes is not None else 0)
        """U(0, 1) rows one draw takes (`draw`)."""
        self.spec = self._spec(spec_ranges, names)

    def nominal(self, n: int) -> torch.Tensor:
        """`(18, n)` parameters of the nominal frame: scales 1, no latency, no disturbance (with airframes, then
        the nominal frame's features)."""
        return self._nominal.expand(-1, n).clone()

    def sample(self, n: int, generator: torch.Generator, fraction: float | torch.Tensor = 1.0) -> torch.Tensor:
        """`(rows, n)` freshly drawn parameters (rows `names`); `fraction` < 1 shrinks every range of `config`
        toward the nominal values (scales toward 1, disturbances and latency toward 0) for a curriculum. The
        airframes' factors are not shrunk (their latency is)."""
        return self.from_uniform(self.draw(n, generator), fraction)

    def draw(self, n: int, generator: torch.Generator) -> torch.Tensor:
        """`(num_uniforms, n)` U(0, 1) samples, the only random call of `sample`."""
        width = self._width
        return torch.rand(self.num_uniforms, n, generator=generator, device=width.device, dtype=width.dtype)

    def from_uniform(self, uniform: torch.Tensor, fraction: float | torch.Tensor = 1.0) -> torch.Tensor:
        """`(rows, n)` parameters from U(0, 1) samples `(num_uniforms, n)` (no random call: traceable by
        torch.compile); `fraction` (a float or a 0-d tensor) as in `sample`. With airframes, rows 18.. of
        `uniform` are the airframe's draws (`airframes.airframe`)."""
        values = torch.addcmul(self._offset[: len(EPISODE_NAMES)], uniform[: len(EPISODE_NAMES)], self._width)
        if isinstance(fraction, torch.Tensor) or fraction < 1.0:
            values = torch.lerp(self._nominal[: len(EPISODE_NAMES)], values, fraction)
        values[LATENCY].floor_().clamp_(max=self._max_latency)
        if self.airframes is None:
            return values
        rows = airframe_math.episode_rows(uniform[len(EPISODE_NAMES) :], self.airframe_constants)
        values[list(AIRFRAME_ROWS)] = torch.stack(rows[: len(AIRFRAME_ROWS)])
        ratio = values[THRUST_TO_WEIGHT] * values[THRUST_SCALE] * values[BATTERY]
        hover = airframe_math.hover_command(ratio, values[QUADRATIC_SHARE])
        return torch.cat((values, torch.stack((*rows[len(AIRFRAME_ROWS) :], hover))))

    @staticmethod
    def _spec(ranges: list[Range], names: tuple[str, ...]) -> SpaceSpec:
        units: tuple[str, ...] = ("1",) * 8 + ("1", "1", "1", "steps") + ("m/s^2",) * 3 + ("rad/s^2",) * 3
        units += ("1",) * (len(names) - len(units))
        return SpaceSpec(names=names, low=tuple(r[0] for r in ranges), high=tuple(r[1] for r in ranges), units=units)


def thrust_curves(episode: torch.Tensor, mass: torch.Tensor, gravity: float) -> torch.Tensor:
    """`(3, N)` thrust curves `k ((1 - b) u + b u^2)` from the drawn thrust-to-weight ratios and quadratic shares of
    `episode` `(18+, N)` and the envs' masses `(N,)` in kg: `4 k` = ratio x weight."""
    k = episode[THRUST_TO_WEIGHT] * mass * (gravity / 4.0)
    share = episode[QUADRATIC_SHARE]
    return torch.stack((torch.zeros_like(k), k * (1.0 - share), k * share))


def _column(values: list[float], device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    return torch.tensor(values, device=device, dtype=dtype).unsqueeze(-1)
