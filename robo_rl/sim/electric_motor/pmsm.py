"""The permanent-magnet synchronous motor in the rotor (dq) frame, fed by a two-level inverter, batched in torch.

Electrical model (GEM's `PermanentMagnetSynchronousMotor.electrical_ode`, the textbook dq equations):

    l_d di_d/dt = u_d - r_s i_d + w_el l_q i_q
    l_q di_q/dt = u_q - r_s i_q - w_el (l_d i_d + psi_p)
    deps/dt = w_el = p w,     T = 3/2 p (psi_p + (l_d - l_q) i_d) i_q

Inverter (switching-averaged over one control period, GEM's `ContB6BridgeConverter` of three two-quadrant legs):
the normalized dq command (1 = u_dc/2) is turned into phase duties at the angle advanced by half a period
(`DqToAbcActionProcessor`), each leg's duty clipped to [-1, 1]; each leg loses sign(i_phase) * dead_time/period of
u_dc to the interlocking time (clipped to the rail); the phase voltages are turned back to dq at the period's start
angle and held there for the period. The transforms are amplitude invariant (GEM's `t_23`, `t_32`, `q`).

Mechanics: constant speed (a dynamometer holds it, GEM's `ConstantSpeedLoad`), or inertia with polynomial friction
(`LoadParams`, GEM's `PolynomialStaticLoad` including its linear region around zero speed). One RK4 step per control
period integrates currents, speed and angle together (w_el * period <= 0.13 rad at 4000 rpm and 10 kHz).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from robo_rl.sim.electric_motor.params import LoadParams, PmsmParams

SQRT3_2 = math.sqrt(3) / 2
FRICTION_DECAY_S = 1e-3
"""GEM's PolynomialStaticLoad.tau_decay: below |w| = a/J * this, the Coulomb term is linear in w (J/this * w)."""


class PmsmState(NamedTuple):
    """Per-env motor state, each `(N,)`: currents in A, electrical angle in rad, mechanical speed in rad/s."""

    i_d: torch.Tensor
    i_q: torch.Tensor
    eps: torch.Tensor
    omega: torch.Tensor


def dq_to_abc(d: torch.Tensor, q: torch.Tensor, angle: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Inverse Park then inverse Clarke (amplitude invariant): dq at electrical `angle` → phases a, b, c."""
    cos, sin = torch.cos(angle), torch.sin(angle)
    alpha, beta = cos * d - sin * q, sin * d + cos * q
    return alpha, -0.5 * alpha + SQRT3_2 * beta, -0.5 * alpha - SQRT3_2 * beta


def abc_to_dq(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, angle: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Clarke then Park (amplitude invariant): phases a, b, c → dq at electrical `angle`."""
    alpha = (2 * a - b - c) / 3
    beta = (b - c) / math.sqrt(3)
    cos, sin = torch.cos(angle), torch.sin(angle)
    return cos * alpha + sin * beta, -sin * alpha + cos * beta


def inverter_dq(
    command: torch.Tensor, state: PmsmState, params: PmsmParams, period: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """The dq voltages in V the inverter applies over one period for normalized dq commands `(N, 2)` (1 = u_dc/2)."""
    omega_el = params.pole_pairs * state.omega
    advanced = state.eps + 0.5 * period * omega_el
    duties = dq_to_abc(command[:, 0], command[:, 1], advanced)
    currents = dq_to_abc(state.i_d, state.i_q, state.eps)
    lost = params.dead_time / period
    legs = [
        ((0.5 * (duty.clamp(-1.0, 1.0) + 1.0) - torch.sign(current) * lost).clamp(0.0, 1.0) - 0.5) * params.u_dc
        for duty, current in zip(duties, currents, strict=True)
    ]
    u_d, u_q = abc_to_dq(legs[0], legs[1], legs[2], state.eps)
    return u_d, u_q


def load_torque(omega: torch.Tensor, load: LoadParams, j_total: float) -> torch.Tensor:
    """GEM's PolynomialStaticLoad torque in N m at mechanical speed `omega` (rad/s)."""
    linear_below = load.a / j_total * FRICTION_DECAY_S
    coulomb = torch.where(omega.abs() > linear_below, torch.sign(omega) * load.a, j_total / FRICTION_DECAY_S * omega)
    return torch.sign(omega) * load.c * omega.square() + load.b * omega + coulomb


def _derivative(
    state: PmsmState, u_d: torch.Tensor, u_q: torch.Tensor, params: PmsmParams, load: LoadParams | None
) -> PmsmState:
    p = params
    omega_el = p.pole_pairs * state.omega
    di_d = (u_d - p.r_s * state.i_d + omega_el * p.l_q * state.i_q) / p.l_d
    di_q = (u_q - p.r_s * state.i_q - omega_el * (p.l_d * state.i_d + p.psi_p)) / p.l_q
    if load is None:
        domega = torch.zeros_like(state.omega)
    else:
        j_total = p.j_rotor + load.j_load
        torque = 1.5 * p.pole_pairs * (p.psi_p + (p.l_d - p.l_q) * state.i_d) * state.i_q
        domega = (torque - load_torque(state.omega, load, j_total)) / j_total
    return PmsmState(di_d, di_q, omega_el, domega)


def _axpy(state: PmsmState, rate: PmsmState, h: float) -> PmsmState:
    return PmsmState(*(x + h * dx for x, dx in zip(state, rate, strict=True)))


def pmsm_step(
    state: PmsmState,
    u_d: torch.Tensor,
    u_q: torch.Tensor,
    params: PmsmParams,
    period: float,
    load: LoadParams | None = None,
) -> PmsmState:
    """The state after `period` s with dq voltages `u_d`, `u_q` (V) held: one RK4 step. `load` None: constant speed.
    The angle is wrapped to [-pi, pi)."""
    k1 = _derivative(state, u_d, u_q, params, load)
    k2 = _derivative(_axpy(state, k1, period / 2), u_d, u_q, params, load)
    k3 = _derivative(_axpy(state, k2, period / 2), u_d, u_q, params, load)
    k4 = _derivative(_axpy(state, k3, period), u_d, u_q, params, load)
    rate = PmsmState(*((a + 2 * b + 2 * c + d) / 6 for a, b, c, d in zip(k1, k2, k3, k4, strict=True)))
    new = _axpy(state, rate, period)
    return new._replace(eps=torch.remainder(new.eps + math.pi, 2 * math.pi) - math.pi)


def torque(state: PmsmState, params: PmsmParams) -> torch.Tensor:
    """Air-gap torque in N m `(N,)`."""
    return 1.5 * params.pole_pairs * (params.psi_p + (params.l_d - params.l_q) * state.i_d) * state.i_q
