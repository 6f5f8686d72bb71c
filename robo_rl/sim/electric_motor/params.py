"""Motor, inverter and load parameters of the electric-motor tasks, in SI units.

The defaults are gym-electric-motor's (GEM, PyPI `gym-electric-motor` 3.0.3), so that GEM can judge our simulator
and our policies with the same machine:

- PMSM: `gym_electric_motor/physical_systems/electric_motors/permanent_magnet_synchronous_motor.py`,
  `_default_motor_parameter` (GEM takes them from Brosch, Hanke, Wallscheid, Boecker, DOI 10.1109/TPEL.2020.3006779,
  and Hanke, Wallscheid, Boecker, DOI 10.1109/IEMDC.2019.8785122): r_s 18 mOhm, l_d 0.37 mH, l_q 1.2 mH, psi_p 66 mWb,
  3 pole pairs, 0.03883 kg m^2; limits i 400 A, omega 4000 rpm; nominal i 240 A, omega 3000 rpm.
- DC link: `envs/gym_pmsm/cont_cc_pmsm_env.py`, IdealVoltageSupply u_nominal 300 V; the inverter is GEM's ContB6Bridge
  (three two-quadrant legs, switching-averaged over one control period, `physical_systems/converters.py`).
- Permanently excited DC motor: `electric_motors/dc_permanently_excited_motor.py`: r_a 16 mOhm, l_a 19 uH,
  psi_e 0.165 Wb, 0.025 kg m^2; limits i 210 A, u 60 V, omega 400 rad/s; nominal i 97 A, omega 300 rad/s.
- Load: `mechanical_loads/polynomial_static_load.py`: T_L = sign(w) c w^2 + b w + sign(w) a, inertia j_load.

The dead time (interlocking time) is not in GEM's defaults (0 s there); 1 us is a common IGBT inverter's, and GEM
models it the same way when given (`interlocking_time`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


def _check_positive(owner: object, names: tuple[str, ...]) -> None:
    bad = [name for name in names if not getattr(owner, name) > 0]
    if bad:
        raise ValueError(f"{type(owner).__name__}: these must be positive: {bad}")


@dataclass(frozen=True)
class PmsmParams:
    """A permanent-magnet synchronous motor and its two-level inverter (GEM's defaults; module docstring)."""

    r_s: float = 18e-3
    """Stator resistance in Ohm."""
    l_d: float = 0.37e-3
    """Direct-axis inductance in H."""
    l_q: float = 1.2e-3
    """Quadrature-axis inductance in H."""
    psi_p: float = 66e-3
    """Permanent-magnet flux linkage in Wb."""
    pole_pairs: int = 3
    """Pole pairs p: electrical speed = p * mechanical speed."""
    j_rotor: float = 0.03883
    """Rotor inertia in kg m^2."""
    u_dc: float = 300.0
    """DC-link voltage in V; a phase reaches at most +-u_dc/2, so |u_dq| <= u_dc/2 without overmodulation."""
    i_limit: float = 400.0
    """Current limit in A (peak phase current = |i_dq|): beyond it the drive trips (the episode terminates)."""
    i_nominal: float = 240.0
    """Nominal current in A: references stay within |i_dq| <= i_nominal."""
    omega_limit: float = 4000 * math.pi / 30
    """Mechanical speed limit in rad/s (4000 rpm)."""
    omega_nominal: float = 3000 * math.pi / 30
    """Nominal mechanical speed in rad/s (3000 rpm)."""
    dead_time: float = 1e-6
    """Interlocking (dead) time of each inverter leg in s: a leg loses sign(i) * dead_time/period * u_dc."""

    def __post_init__(self) -> None:
        _check_positive(self, ("r_s", "l_d", "l_q", "psi_p", "pole_pairs", "j_rotor", "u_dc", "i_limit", "i_nominal"))
        _check_positive(self, ("omega_limit", "omega_nominal"))
        if self.dead_time < 0:
            raise ValueError("PmsmParams: dead_time must be >= 0")
        if self.i_nominal > self.i_limit:
            raise ValueError("PmsmParams: i_nominal must not exceed i_limit")

    @property
    def u_max(self) -> float:
        """Largest dq voltage magnitude the inverter applies in V (a phase at +-u_dc/2)."""
        return self.u_dc / 2

    def torque(self, i_d: float, i_q: float) -> float:
        """Air-gap torque in N m: 3/2 p (psi_p + (l_d - l_q) i_d) i_q."""
        return 1.5 * self.pole_pairs * (self.psi_p + (self.l_d - self.l_q) * i_d) * i_q


@dataclass(frozen=True)
class DcMotorParams:
    """A permanently excited DC motor on a four-quadrant converter (GEM's defaults; module docstring)."""

    r_a: float = 16e-3
    """Armature resistance in Ohm."""
    l_a: float = 19e-6
    """Armature inductance in H."""
    psi_e: float = 0.165
    """Excitation flux linkage in Wb (torque = psi_e * i, back-EMF = psi_e * omega)."""
    j_rotor: float = 0.025
    """Rotor inertia in kg m^2."""
    u_dc: float = 60.0
    """Supply voltage in V: the converter applies -u_dc..u_dc."""
    i_limit: float = 210.0
    """Current limit in A."""
    i_nominal: float = 97.0
    """Nominal current in A."""
    omega_limit: float = 400.0
    """Speed limit in rad/s."""
    dead_time: float = 1e-6
    """Interlocking time of the converter's legs in s."""

    def __post_init__(self) -> None:
        _check_positive(self, ("r_a", "l_a", "psi_e", "j_rotor", "u_dc", "i_limit", "i_nominal", "omega_limit"))
        if self.dead_time < 0:
            raise ValueError("DcMotorParams: dead_time must be >= 0")


@dataclass(frozen=True)
class LoadParams:
    """A mechanical load on the shaft: inertia and friction T_L(w) = sign(w) c w^2 + b w + sign(w) a (GEM's
    PolynomialStaticLoad). The defaults: a fan-like load, 0.5 N m of Coulomb friction, viscous 0.01 N m s/rad and
    quadratic 1e-4 N m s^2/rad^2 (about 13 N m at 3000 rpm), inertia 0.01 kg m^2."""

    a: float = 0.5
    """Coulomb friction in N m."""
    b: float = 0.01
    """Viscous friction in N m s/rad."""
    c: float = 1e-4
    """Quadratic (fan) load in N m s^2/rad^2."""
    j_load: float = 0.01
    """Load inertia in kg m^2 (adds to the rotor's)."""

    def __post_init__(self) -> None:
        bad = [name for name in ("a", "b", "c") if getattr(self, name) < 0]
        if bad or not self.j_load > 0:
            raise ValueError(f"LoadParams: a, b, c must be >= 0 and j_load > 0 (got {self})")
