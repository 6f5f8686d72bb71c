"""Random current references a PMSM can reach: inside the nominal current circle, with i_d <= 0 (no field
strengthening), and whose steady-state voltage fits the inverter at the env's speed.

Steady state of the dq equations (`robo_rl.sim.electric_motor.pmsm`): u_d = r_s i_d - w_el l_q i_q,
u_q = r_s i_q + w_el (l_d i_d + psi_p). A reference needing |u| above `voltage_margin` * u_dc/2 cannot be held by any
controller; drawing it would only measure the motor. Candidates are drawn several at a time and the first that fits
is kept (no host sync); (0, 0), which always fits below the speed limit, is the fallback.
"""

from __future__ import annotations

import torch

from robo_rl.sim.electric_motor.params import PmsmParams

CANDIDATES = 16


def steady_voltage(
    i_d: torch.Tensor, i_q: torch.Tensor, omega: torch.Tensor, params: PmsmParams
) -> tuple[torch.Tensor, torch.Tensor]:
    """Steady-state dq voltages in V holding currents (A) at mechanical speed `omega` (rad/s)."""
    omega_el = params.pole_pairs * omega
    return params.r_s * i_d - omega_el * params.l_q * i_q, params.r_s * i_q + omega_el * (
        params.l_d * i_d + params.psi_p
    )


def draw_references(
    omega: torch.Tensor, params: PmsmParams, voltage_margin: float, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """(i_d, i_q) references in A `(N,)` for speeds `omega` `(N,)`, uniform over the reachable part of the disc."""
    n = omega.shape[0]
    unit = torch.rand(n, CANDIDATES, 2, generator=generator, device=omega.device, dtype=omega.dtype)
    i_d = -unit[..., 0] * params.i_nominal
    i_q = (2 * unit[..., 1] - 1) * params.i_nominal
    u_d, u_q = steady_voltage(i_d, i_q, omega.unsqueeze(-1), params)
    fits = (i_d.square() + i_q.square() <= params.i_nominal**2) & (
        u_d.square() + u_q.square() <= (voltage_margin * params.u_max) ** 2
    )
    first = torch.argmax(fits.to(torch.int8), dim=-1, keepdim=True)
    found = fits.any(dim=-1)
    pick_d = torch.gather(i_d, -1, first).squeeze(-1)
    pick_q = torch.gather(i_q, -1, first).squeeze(-1)
    return torch.where(found, pick_d, 0.0), torch.where(found, pick_q, 0.0)
