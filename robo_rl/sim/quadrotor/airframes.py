"""Whole airframes drawn per env at every reset, from Crazyflie-class (25 g) to x500-class (2.5 kg) quadrotors.

`AirframeDistribution` is the distribution (each factor's range and the published models it comes from are in its
field docstrings); `HoverConfig.airframes` turns it on. An airframe is ten independent U(0, 1) draws mapped onto:

- mass m, log-uniform;
- arm length a = arm_coefficient m^arm_exponent times a log-uniform spread (bigger craft have longer arms);
- roll inertia Ixx = c m a^2 with c log-uniform (rotors and battery spread over the arms), pitch inertia Iyy =
  Ixx times a log-uniform asymmetry, yaw inertia Izz = r (Ixx + Iyy) / 2 with r in [1.4, 2]: a flat body has
  Izz <= Ixx + Iyy (perpendicular axis theorem), and r >= 1.4 keeps Izz above both;
- thrust curve k ((1 - b) u + b u^2) of the normalized motor command u with 4 k = thrust-to-weight x weight
  (`randomization.thrust_curves`), b the quadratic share;
- motor rise time constant (log-uniform), fall time constant = rise x a log-uniform ratio >= 1;
- yaw torque per thrust k_q = a x a log-uniform factor: k_q / k_t is the propeller's C_Q / C_T times its diameter,
  and the diameter grows with the arm;
- the action latency in whole control steps, U{min, ..., max} (the `randomization.LATENCY` row's draw).

Expressed through the existing per-env machinery, exactly: the rows of `randomization.EPISODE_NAMES` (scales
relative to the nominal frame `HoverConfig.frame`, thrust-to-weight, quadratic share, latency), so the torch step
and the numba step (`fused`) integrate a drawn airframe with the same equations as any randomized frame. The
arm length cannot be a per-env row there (the rotor layout is a constant of the equations), so it is folded in:
the roll and pitch torques of rotor thrusts T_i are a / a0 times the nominal frame's (arm a0), and Euler's
equations `I dw/dt = tau_xy(a) + tau_z - w x (I w)` divided by s = a / a0 read
`(I / s) dw/dt = tau_xy(a0) + tau_z / s - w x ((I / s) w)`: the same motion with every moment of inertia and
the yaw torque per thrust divided by s. So the inertia scale rows hold I / (s I0) and the torque row
k_q / (s k_q0); tests/sim/quadrotor/test_airframes.py flies both forms side by side.

The critic sees the drawn airframe (privileged observation): after the 18 rows come `FEATURE_NAMES`, the logarithm
of each physical factor mapped linearly onto [-1, 1] over the distribution's envelope (`envelope`), and the
airframe's hover command (normalized motor command, thrust scale and battery included). The functions
`airframe`, `episode_rows`, `feature` and `hover_command` use only arithmetic, `**` and `log`, on floats (the numba
kernel, with `math.log`) or `(N,)` tensors (the torch step), like `equations`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from torch import log

from robo_rl.sim.quadrotor.params import QuadrotorParams

Range = tuple[float, float]
Scalar = Any
"""A float (numba) or a `(N,)` tensor (torch)."""
AIRFRAME_UNIFORMS = 10
"""U(0, 1) draws per airframe: mass, arm spread, inertia coefficient, pitch asymmetry, yaw ratio, thrust-to-weight,
quadratic share, rise time constant, fall/rise ratio, torque factor (the latency takes the episode's own draw)."""
FACTOR_NAMES = (
    "mass",
    "arm_length",
    "inertia_x",
    "inertia_y",
    "inertia_z",
    "motor_rise_time_constant",
    "motor_fall_time_constant",
    "torque_to_thrust",
)
"""The physical factors whose logarithms the privileged observation holds, normalized (`FEATURE_NAMES`)."""
FEATURE_NAMES = (*(f"airframe_log_{name}" for name in FACTOR_NAMES), "airframe_hover_command")
"""Rows appended to the episode parameters (`randomization.EPISODE_NAMES`) when airframes are drawn."""
HOVER_FEATURE = len(FEATURE_NAMES) - 1
"""Index of the hover command within `FEATURE_NAMES`."""
AIRFRAME_ROWS = (0, 1, 2, 3, 5, 6, 7, 8, 9)
"""The `randomization.EPISODE_NAMES` rows an airframe sets, in the order of `episode_rows` (not the thrust scale,
row 4, which `RandomizationConfig.thrust_coefficient` may still draw on top)."""

# Layout of the constants `airframe` and `episode_rows` take (`AirframeDistribution.constants`).
(MASS_LOW, MASS_RATIO, ARM_COEFFICIENT, ARM_EXPONENT, ARM_SPREAD, INERTIA_LOW, INERTIA_RATIO, ASYMMETRY, YAW_LOW,
 YAW_HIGH, TW_LOW, TW_HIGH, SHARE_LOW, SHARE_HIGH, RISE_LOW, RISE_RATIO, FALL_LOW, FALL_RATIO, TORQUE_LOW,
 TORQUE_RATIO, NOMINAL_MASS, NOMINAL_ARM, NOMINAL_INERTIA_X, NOMINAL_INERTIA_Y, NOMINAL_INERTIA_Z, NOMINAL_TORQUE,
 NOMINAL_RISE, NOMINAL_FALL, LOG_BOUNDS) = range(29)  # fmt: skip
NUM_CONSTANTS = LOG_BOUNDS + 2 * len(FACTOR_NAMES)
"""Constants of one distribution and nominal frame; LOG_BOUNDS holds (log low, log span) per `FACTOR_NAMES`."""


@dataclass(frozen=True)
class AirframeDistribution:
    """The airframes drawn per env at reset (see the module docstring for how each is built). Sources:

    - RAPTOR (Eschmann, Albani, Loianno 2025, "RAPTOR: A Foundation Policy for Quadrotor Control"): its
      pre-training sampler's ranges as published with its parameter files (github.com/rl-tools/raptor,
      choreo/parameters/*.json, "domain_randomization"): thrust-to-weight 1.5-5, mass 0.02-5 kg, size from the
      cube root of mass with a 10 % deviation, rotor time constants rising 0.03-0.10 s and falling 0.03-0.30 s,
      torque constant 0.005-0.05 m; and its identified models in the same folder (race.json 0.78 kg,
      x500.json 2.0 kg, fs.json 3.35 kg, flightmare.json 0.73 kg).
    - Learning to Fly in Seconds (Eschmann et al. 2024), L2F 2.0.18's identified Crazyflie 2.1 (frame
      `crazyflie_2_1`), and Förster 2015, "System Identification of the Crazyflie 2.0 Nano Quadrocopter" (torque
      per thrust 0.006 m; frame `crazyflie_2_1_bare_2023`).
    - PX4's Gazebo x500 model (frame `px4_x500`) and ETH ASL's rotors_simulator AscTec Hummingbird (frame
      `asctec_hummingbird`), whose motors share rotors' time constants 0.0125 s up and 0.025 s down.
    """

    mass: Range = (0.025, 2.5)
    """(low, high) mass in kg, log-uniform (each decade equally likely): a bare Crazyflie is 27 g (Bitcraze), the
    PX4 x500 2.06 kg; the range spans 25-50 g to 0.3-2.5 kg craft. RAPTOR draws 0.02-5 kg."""
    arm_coefficient: float = 0.18
    """Arm length in m of a 1 kg airframe before its spread: a = arm_coefficient (m / 1 kg)^arm_exponent."""
    arm_exponent: float = 0.43
    """Exponent of the arm's growth with mass. A least-squares fit through nine published frames (Crazyflie 2.1 of
    L2F and of 2023, PX4 x500, the 250 mm frame, Hummingbird, RAPTOR's race, x500, fs and flightmare models) gives
    0.177 m and 0.430; RAPTOR's cube root (1/3) with +-10 % would put the x500's 0.246 m arm 1.5x off its curve."""
    arm_spread: float = 1.35
    """The arm is the curve's value times a log-uniform factor in [1 / spread, spread]: the nine frames lie at
    0.77 (RAPTOR's race quad, short arms) to 1.10 (Hummingbird) of the fitted curve."""
    inertia_coefficient: Range = (0.08, 0.4)
    """(low, high) of c in Ixx = c m a^2, log-uniform. Published frames: 0.09 (Crazyflie 2023), 0.14 (RAPTOR race),
    0.17 (x500, gz and RAPTOR), 0.20 (Crazyflie 2.1, L2F), 0.22 (RAPTOR fs), 0.36-0.38 (Hummingbird,
    flightmare). Four point-mass motors at the arm's end alone give 0.5 x their mass share."""
    inertia_asymmetry: float = 1.3
    """Iyy / Ixx is log-uniform in [1 / asymmetry, asymmetry]: 1.02 for the Crazyflie 2.1 (L2F), 0.78 for
    RAPTOR's race quad (a long body), 0.97 for RAPTOR's fs, 1 for symmetric models."""
    yaw_inertia_ratio: Range = (1.4, 2.0)
    """(low, high) of Izz / ((Ixx + Iyy) / 2), uniform: 1.55 (Crazyflie 2023) to 1.88 (RAPTOR race); 2 is the
    flat-body limit Izz = Ixx + Iyy."""
    thrust_to_weight: Range = (1.4, 5.0)
    """(low, high) total thrust at full command / weight, uniform. RAPTOR: 1.5-5; the low end is 1.4
    so that the identified Crazyflie 2.1 (1.47, L2F) lies inside. 5-inch racing quads reach 8-12 (frame
    `racing_250mm`: 8.2, RAPTOR's flightmare model 12): widen this range to train on them."""
    thrust_curve_quadratic: Range = (0.5, 1.0)
    """(low, high) quadratic share b of the thrust curve, uniform: 0.87 for the Crazyflie 2.1 (L2F's PWM curve),
    0.66 for RAPTOR's fs, 0.51 for flightmare's, 1 for models whose command is the rotor speed (gz, rotors)."""
    motor_rise_time_constant: Range = (0.012, 0.1)
    """(low, high) motor time constant in s while spinning up, log-uniform: 0.0125 (rotors_simulator and PX4 gz
    models), 0.033 (RAPTOR race, Agilicious' default), 0.055 (Crazyflie 2.1, L2F), 0.065 (RAPTOR fs); RAPTOR draws
    0.03-0.10. No published trend with size: the Crazyflie's brushed motors are slower than a racing quad's."""
    motor_fall_ratio: Range = (1.0, 4.5)
    """(low, high) of fall time constant / rise time constant, log-uniform: 1 for most models, 2 for the gz and
    rotors models, 4.5 for the Crazyflie 2.1 (L2F: props spin down slower than up). RAPTOR draws the fall
    0.03-0.30 s."""
    torque_per_arm: Range = (0.04, 0.16)
    """(low, high) of (yaw torque per thrust) / arm length, log-uniform. Published: 0.047 (RAPTOR fs), 0.048 (RAPTOR
    race), 0.065 (x500 gz), 0.094 (Hummingbird, flightmare), 0.108 (250 mm), 0.118 (Crazyflie 2.1 L2F), 0.151
    (Förster's Crazyflie 2.0). RAPTOR draws the torque per thrust 0.005-0.05 m regardless of size."""
    action_latency: Range = (0.0, 0.02)
    """(low, high) latency in s between the policy's action and the motors, drawn as whole control steps
    U{round(low / dt), ..., round(high / dt)}: 0-2 steps at 100 Hz. An assumption, not an identification: the
    Crazyflie runs the policy inside its 500 Hz stabilizer loop (L2F's deployment, under one step), a PX4
    offboard link adds one or two MAVLink messages."""

    def __post_init__(self) -> None:
        ranges = {
            "mass": self.mass,
            "inertia_coefficient": self.inertia_coefficient,
            "yaw_inertia_ratio": self.yaw_inertia_ratio,
            "thrust_to_weight": self.thrust_to_weight,
            "motor_rise_time_constant": self.motor_rise_time_constant,
            "motor_fall_ratio": self.motor_fall_ratio,
            "torque_per_arm": self.torque_per_arm,
        }
        bad = [name for name, (low, high) in ranges.items() if not 0 < low <= high < math.inf]
        low, high = self.thrust_curve_quadratic
        bad += [] if 0 <= low <= high <= 1 else ["thrust_curve_quadratic"]
        low, high = self.action_latency
        bad += [] if 0 <= low <= high < math.inf else ["action_latency"]
        bad += [name for name in ("arm_coefficient", "arm_spread", "inertia_asymmetry") if not getattr(self, name) > 0]
        bad += [] if self.arm_spread >= 1 and self.inertia_asymmetry >= 1 else ["arm_spread/inertia_asymmetry < 1"]
        bad += [] if self.thrust_to_weight[0] > 1 else ["thrust_to_weight (must exceed 1 to hover)"]
        bad += [] if self.motor_fall_ratio[0] >= 1 else ["motor_fall_ratio (fall must not be faster than rise)"]
        if bad:
            raise ValueError(f"AirframeDistribution: need positive (low, high) ranges with low <= high: {bad}")
        low, high = self.yaw_inertia_ratio
        asymmetry = self.inertia_asymmetry
        if not (2 * asymmetry / (1 + asymmetry) < low and high <= 2.0):
            raise ValueError(
                "AirframeDistribution.yaw_inertia_ratio must lie within (2 r / (1 + r), 2] for r = inertia_asymmetry "
                f"(Izz above Ixx and Iyy, at most the flat-body limit Ixx + Iyy), got {self.yaw_inertia_ratio}"
            )

    def latency_steps(self, dt: float) -> tuple[int, int]:
        """(fewest, most) whole control steps of latency at control period `dt` s."""
        return round(self.action_latency[0] / dt), round(self.action_latency[1] / dt)

    def arm_range(self, mass: float) -> Range:
        """(low, high) arm length in m of an airframe of `mass` kg."""
        centre = self.arm_coefficient * mass**self.arm_exponent
        return centre / self.arm_spread, centre * self.arm_spread

    def envelope(self) -> dict[str, Range]:
        """(low, high) of each `FACTOR_NAMES` factor over the whole distribution (the features' [-1, 1])."""
        (m_low, m_high), (c_low, c_high), r = self.mass, self.inertia_coefficient, self.inertia_asymmetry
        arm_low, arm_high = self.arm_range(m_low)[0], self.arm_range(m_high)[1]
        ix = (c_low * m_low * arm_low**2, c_high * m_high * arm_high**2)  # m a^2 grows with m (exponent 1 + 2p > 0)
        iz = (self.yaw_inertia_ratio[0] * ix[0] * (1 + 1 / r) / 2, self.yaw_inertia_ratio[1] * ix[1] * (1 + r) / 2)
        rise = self.motor_rise_time_constant
        fall = (rise[0] * self.motor_fall_ratio[0], rise[1] * self.motor_fall_ratio[1])
        torque = (arm_low * self.torque_per_arm[0], arm_high * self.torque_per_arm[1])
        return dict(zip(FACTOR_NAMES, (self.mass, (arm_low, arm_high), ix, (ix[0] / r, ix[1] * r), iz, rise, fall,
                                       torque), strict=True))  # fmt: skip

    def scale_ranges(self, nominal: QuadrotorParams) -> dict[int, Range]:
        """(low, high) of the episode rows an airframe sets (`AIRFRAME_ROWS`), by row: the scales relative to
        `nominal` with the arm folded in, thrust-to-weight and quadratic share."""
        (m_low, m_high), (c_low, c_high), r = self.mass, self.inertia_coefficient, self.inertia_asymmetry
        a0, (ix0, iy0, iz0) = nominal.arm_length, nominal.inertia
        # Ixx / a = c m a grows with m; the folded scale is (Ixx / a) a0 / Ixx0.
        low = c_low * m_low * self.arm_range(m_low)[0] * a0
        high = c_high * m_high * self.arm_range(m_high)[1] * a0
        yaw = (self.yaw_inertia_ratio[0] * (1 + 1 / r) / 2, self.yaw_inertia_ratio[1] * (1 + r) / 2)
        rise, fall = self.motor_rise_time_constant, self.motor_fall_ratio
        return {
            0: (m_low / nominal.mass, m_high / nominal.mass),
            1: (low / ix0, high / ix0),
            2: (low / (r * iy0), high * r / iy0),
            3: (low * yaw[0] / iz0, high * yaw[1] / iz0),
            5: (
                self.torque_per_arm[0] * a0 / nominal.torque_to_thrust,
                self.torque_per_arm[1] * a0 / nominal.torque_to_thrust,
            ),
            6: (rise[0] / nominal.motor_rise_time_constant, rise[1] / nominal.motor_rise_time_constant),
            7: (
                rise[0] * fall[0] / nominal.motor_fall_time_constant,
                rise[1] * fall[1] / nominal.motor_fall_time_constant,
            ),
            8: self.thrust_to_weight,
            9: self.thrust_curve_quadratic,
        }

    def nominal_features(self, nominal: QuadrotorParams) -> tuple[float, ...]:
        """`FEATURE_NAMES` values of the frame `nominal` itself (outside [-1, 1] where it lies outside)."""
        values = (nominal.mass, nominal.arm_length, *nominal.inertia, nominal.motor_rise_time_constant,
                  nominal.motor_fall_time_constant, nominal.torque_to_thrust)  # fmt: skip
        bounds = self.envelope().values()
        logs = [2 * _log_position(v, low, high) - 1 for v, (low, high) in zip(values, bounds, strict=True)]
        return (*logs, nominal.hover_command)

    def constants(self, nominal: QuadrotorParams) -> tuple[float, ...]:
        """The constants (`NUM_CONSTANTS` floats, layout above) of this distribution relative to frame `nominal`."""
        values = [
            self.mass[0], self.mass[1] / self.mass[0], self.arm_coefficient, self.arm_exponent, self.arm_spread,
            self.inertia_coefficient[0], self.inertia_coefficient[1] / self.inertia_coefficient[0],
            self.inertia_asymmetry, *self.yaw_inertia_ratio, *self.thrust_to_weight, *self.thrust_curve_quadratic,
            self.motor_rise_time_constant[0], self.motor_rise_time_constant[1] / self.motor_rise_time_constant[0],
            self.motor_fall_ratio[0], self.motor_fall_ratio[1] / self.motor_fall_ratio[0], self.torque_per_arm[0],
            self.torque_per_arm[1] / self.torque_per_arm[0], nominal.mass, nominal.arm_length, *nominal.inertia,
            nominal.torque_to_thrust, nominal.motor_rise_time_constant, nominal.motor_fall_time_constant,
        ]  # fmt: skip
        for low, high in self.envelope().values():
            values += [math.log(low), math.log(high) - math.log(low)]
        return tuple(float(v) for v in values)

    def coordinates(self, frame: QuadrotorParams) -> dict[str, float]:
        """Where `frame` lies in this distribution: per factor the U(0, 1) draw that gives its value (the latency
        excepted), in [0, 1] inside the range and outside it beyond. `thrust_offset_share` is the frame's c0 /
        max thrust, which the distribution holds at 0."""
        c0, c1, c2 = frame.thrust_curve
        m, a, (ix, iy, iz) = frame.mass, frame.arm_length, frame.inertia
        arm_centre = self.arm_coefficient * m**self.arm_exponent
        top = frame.max_command
        return {
            "mass": _log_position(m, *self.mass),
            "arm_length": _log_position(a, arm_centre / self.arm_spread, arm_centre * self.arm_spread),
            "inertia_coefficient": _log_position(ix / (m * a * a), *self.inertia_coefficient),
            "inertia_asymmetry": _log_position(iy / ix, 1 / self.inertia_asymmetry, self.inertia_asymmetry),
            "yaw_inertia_ratio": _position(iz / ((ix + iy) / 2), *self.yaw_inertia_ratio),
            "thrust_to_weight": _position(frame.thrust_to_weight, *self.thrust_to_weight),
            "thrust_curve_quadratic": _position(c2 * top / (c1 + c2 * top), *self.thrust_curve_quadratic),
            "motor_rise_time_constant": _log_position(frame.motor_rise_time_constant, *self.motor_rise_time_constant),
            "motor_fall_ratio": _log_position(
                frame.motor_fall_time_constant / frame.motor_rise_time_constant, *self.motor_fall_ratio
            ),
            "torque_per_arm": _log_position(frame.torque_to_thrust / a, *self.torque_per_arm),
            "thrust_offset_share": c0 / frame.max_rotor_thrust,
        }

    def frame(self, uniforms: tuple[float, ...], gravity: float = 9.81) -> QuadrotorParams:
        """The airframe the U(0, 1) draws `uniforms` (`AIRFRAME_UNIFORMS` floats, the order of `airframe`) give,
        as a frame of its own (true arm length; thrust curve over commands 0..1)."""
        if len(uniforms) != AIRFRAME_UNIFORMS or not all(0.0 <= u <= 1.0 for u in uniforms):
            raise ValueError(f"AirframeDistribution.frame needs {AIRFRAME_UNIFORMS} draws in [0, 1], got {uniforms}")
        mass, arm, ix, iy, iz, ratio, share, rise, fall, torque = airframe(uniforms, self.constants(_UNIT_FRAME))
        k = ratio * mass * gravity / 4
        return QuadrotorParams(
            name="airframe", mass=mass, arm_length=arm, inertia=(ix, iy, iz), thrust_curve=(0.0, k * (1 - share),
            k * share), torque_to_thrust=torque, motor_rise_time_constant=rise, motor_fall_time_constant=fall,
            gravity=gravity, source="robo_rl.sim.quadrotor.airframes.AirframeDistribution",
        )  # fmt: skip


def _position(value: float, low: float, high: float) -> float:
    return (value - low) / (high - low) if high > low else (0.5 if value == low else math.inf)


def _log_position(value: float, low: float, high: float) -> float:
    return _position(math.log(value), math.log(low), math.log(high))


_UNIT_FRAME = QuadrotorParams(
    name="unit", mass=1.0, arm_length=1.0, inertia=(1.0, 1.0, 1.0), thrust_curve=(0.0, 0.0, 100.0),
    torque_to_thrust=1.0, motor_rise_time_constant=1.0, motor_fall_time_constant=1.0,
)  # fmt: skip
"""A frame of unit values: `constants` relative to it hold the physical values (`AirframeDistribution.frame`)."""


def airframe(u: Any, d: Any) -> tuple[Scalar, ...]:
    """(mass kg, arm m, Ixx, Iyy, Izz kg m^2, thrust-to-weight, quadratic share, rise s, fall s, torque per thrust
    m) of the U(0, 1) draws `u` (`AIRFRAME_UNIFORMS`, indexable) under constants `d` (`NUM_CONSTANTS`)."""
    mass = d[MASS_LOW] * d[MASS_RATIO] ** u[0]
    arm = d[ARM_COEFFICIENT] * mass ** d[ARM_EXPONENT] * d[ARM_SPREAD] ** (2.0 * u[1] - 1.0)
    inertia_x = d[INERTIA_LOW] * d[INERTIA_RATIO] ** u[2] * mass * arm * arm
    inertia_y = inertia_x * d[ASYMMETRY] ** (2.0 * u[3] - 1.0)
    inertia_z = (d[YAW_LOW] + (d[YAW_HIGH] - d[YAW_LOW]) * u[4]) * (0.5 * (inertia_x + inertia_y))
    ratio = d[TW_LOW] + (d[TW_HIGH] - d[TW_LOW]) * u[5]
    share = d[SHARE_LOW] + (d[SHARE_HIGH] - d[SHARE_LOW]) * u[6]
    rise = d[RISE_LOW] * d[RISE_RATIO] ** u[7]
    fall = rise * (d[FALL_LOW] * d[FALL_RATIO] ** u[8])
    torque = arm * (d[TORQUE_LOW] * d[TORQUE_RATIO] ** u[9])
    return mass, arm, inertia_x, inertia_y, inertia_z, ratio, share, rise, fall, torque


def feature(value: Scalar, d: Any, factor: int) -> Scalar:
    """log(value) mapped linearly from the envelope of factor `factor` (index in `FACTOR_NAMES`) onto [-1, 1]."""
    low, span = d[LOG_BOUNDS + 2 * factor], d[LOG_BOUNDS + 2 * factor + 1]
    return 2.0 * (log(value) - low) / span - 1.0


def episode_rows(u: Any, d: Any) -> tuple[Scalar, ...]:
    """The airframe of draws `u` as episode rows: (mass, inertia x, y, z, torque per thrust, rise, fall) scales
    relative to the nominal frame, the inertia and torque with the arm folded in (module docstring), then
    thrust-to-weight, quadratic share and the 8 log features (`FEATURE_NAMES` but the hover command)."""
    mass, arm, ix, iy, iz, ratio, share, rise, fall, torque = airframe(u, d)
    arm_scale = arm / d[NOMINAL_ARM]
    return (
        mass / d[NOMINAL_MASS],
        ix / (arm_scale * d[NOMINAL_INERTIA_X]), iy / (arm_scale * d[NOMINAL_INERTIA_Y]),
        iz / (arm_scale * d[NOMINAL_INERTIA_Z]), torque / (arm_scale * d[NOMINAL_TORQUE]),
        rise / d[NOMINAL_RISE], fall / d[NOMINAL_FALL], ratio, share,
        feature(mass, d, 0), feature(arm, d, 1), feature(ix, d, 2), feature(iy, d, 3), feature(iz, d, 4),
        feature(rise, d, 5), feature(fall, d, 6), feature(torque, d, 7),
    )  # fmt: skip


def hover_command(thrust_to_weight: Scalar, share: Scalar) -> Scalar:
    """Motor command u at which a curve `k ((1 - b) u + b u^2)` with 4 k = thrust_to_weight x weight carries the
    weight: the positive root of b u^2 + (1 - b) u = 1 / thrust_to_weight, written without dividing by b."""
    linear = 1.0 - share
    return (2.0 / thrust_to_weight) / (linear + (linear * linear + 4.0 * share / thrust_to_weight) ** 0.5)
