"""The classic controller a user would pick instead of RL: field-oriented PI current control, batched in torch.

The design follows gem-control (upb-lea/gem-control, the controllers published with gym-electric-motor;
`gem_controllers/pi_current_controller.py` and its stages), written here from its documented structure:

- one PI controller per axis, tuned by the symmetric optimum with design parameter a = 4 for the control period
  tau: K_p = L / (a tau) (L = l_d for d, l_q for q) in V/A, K_i = K_p / (a^2 tau) in V/(A s);
- the PI output clipped to the voltage limit per axis, and the integrator (sum of error * tau) frozen on an axis whose
  PI output was clipped (conditional integration, its anti-windup);
- EMF feed-forward (decoupling): u_d += -w_el l_q i_q, u_q += w_el (l_d i_d + psi_p);
- the result clipped per axis to +-u_dc/2 (gem-control's AbsoluteClippingStage for current control); `clip="circle"`
  scales it onto the voltage circle instead (its SquaredClippingStage), the stronger variant near the voltage limit.

Speed control above it: a PI on speed error giving the torque, tuned by the symmetric optimum over the speed loop's
period (`SpeedPi`), the same conditional integration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

from robo_rl.sim.electric_motor.params import PmsmParams

SYMMETRIC_OPTIMUM_A = 4.0
"""gem-control's default design parameter a of the symmetric optimum."""


@dataclass(frozen=True)
class PiGains:
    """Per-axis gains (d, q): proportional in V/A, integral in V/(A s)."""

    kp_d: float
    kp_q: float
    ki_d: float
    ki_q: float

    @classmethod
    def symmetric_optimum(cls, params: PmsmParams, period: float, a: float = SYMMETRIC_OPTIMUM_A) -> PiGains:
        kp_d, kp_q = params.l_d / (a * period), params.l_q / (a * period)
        return cls(kp_d, kp_q, kp_d / (a * a * period), kp_q / (a * a * period))


def pi_current_step(
    integral: torch.Tensor,
    measured: torch.Tensor,
    reference: torch.Tensor,
    omega: torch.Tensor,
    params: PmsmParams,
    gains: PiGains,
    period: float,
    clip: Literal["axis", "circle"] = "axis",
) -> tuple[torch.Tensor, torch.Tensor]:
    """One period of the PI/FOC current controller: (normalized dq commands `(N, 2)`, 1 = u_dc/2; the new integrator
    state `(N, 2)`) from the integrator state, measured and reference dq currents `(N, 2)` in A and speeds (rad/s)."""
    p, u_max = params, params.u_max
    error = reference - measured
    kp = torch.tensor([gains.kp_d, gains.kp_q], device=error.device, dtype=error.dtype)
    ki = torch.tensor([gains.ki_d, gains.ki_q], device=error.device, dtype=error.dtype)
    raw = kp * error + ki * integral
    pi_out = raw.clamp(-u_max, u_max)
    integral = integral + error * period * (pi_out == raw)
    omega_el = p.pole_pairs * omega
    i_d, i_q = measured.unbind(-1)
    feedforward = torch.stack((-omega_el * p.l_q * i_q, omega_el * (p.l_d * i_d + p.psi_p)), dim=-1)
    voltage = pi_out + feedforward
    if clip == "axis":
        voltage = voltage.clamp(-u_max, u_max)
    else:
        norm = voltage.norm(dim=-1, keepdim=True)
        voltage = voltage * torch.clamp(u_max / norm.clamp_min(1e-9), max=1.0)
    return voltage / u_max, integral


class FocCurrentController:
    """`num_envs` PI current controllers with decoupling (`pi_current_step`) and their integrators."""

    def __init__(
        self,
        params: PmsmParams,
        period: float,
        num_envs: int,
        device: str | torch.device = "cpu",
        clip: Literal["axis", "circle"] = "axis",
        gains: PiGains | None = None,
    ) -> None:
        self.params = params
        self.period = period
        self.clip = clip
        self.gains = gains if gains is not None else PiGains.symmetric_optimum(params, period)
        self._integral = torch.zeros(num_envs, 2, device=device)

    def reset(self, where: torch.Tensor | None = None) -> None:
        """Zero the integrators (of the envs where `where` `(N,)` is true; of all for None)."""
        if where is None:
            self._integral.zero_()
        else:
            self._integral[where] = 0.0

    def __call__(
        self, i_d: torch.Tensor, i_q: torch.Tensor, ref_d: torch.Tensor, ref_q: torch.Tensor, omega: torch.Tensor
    ) -> torch.Tensor:
        """Normalized dq commands `(N, 2)` (1 = u_dc/2) from measured currents (A), references (A), speed (rad/s)."""
        measured = torch.stack((i_d, i_q), dim=-1)
        reference = torch.stack((ref_d, ref_q), dim=-1)
        integral = self._integral.to(measured.dtype)
        command, integral = pi_current_step(
            integral, measured, reference, omega, self.params, self.gains, self.period, self.clip
        )
        self._integral = integral.to(self._integral.dtype)
        return command


class SpeedPi:
    """`num_envs` PI speed controllers: speed error (rad/s) → torque (N m), symmetric optimum over the speed loop's
    period `period` (the sum of its small time constants taken as 1.5 periods: sampling and one period of delay):
    K_p = J / (a T), K_i = K_p / (a^2 T)."""

    def __init__(
        self, j_total: float, torque_limit: float, period: float, num_envs: int, device: str | torch.device = "cpu"
    ) -> None:
        small = 1.5 * period
        self.kp = j_total / (SYMMETRIC_OPTIMUM_A * small)
        self.ki = self.kp / (SYMMETRIC_OPTIMUM_A**2 * small)
        self.torque_limit = torque_limit
        self.period = period
        self._integral = torch.zeros(num_envs, device=device)

    def reset(self, where: torch.Tensor | None = None) -> None:
        if where is None:
            self._integral.zero_()
        else:
            self._integral[where] = 0.0

    def __call__(self, omega: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
        """Torque commands in N m `(N,)`."""
        error = reference - omega
        raw = self.kp * error + self.ki * self._integral
        out = raw.clamp(-self.torque_limit, self.torque_limit)
        self._integral += error * self.period * (out == raw)
        return out
