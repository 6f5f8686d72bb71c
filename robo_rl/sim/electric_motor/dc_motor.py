"""The permanently excited DC motor on a four-quadrant converter, batched in torch (the simple case).

Model (GEM's `DcPermanentlyExcitedMotor.electrical_ode`): l_a di/dt = u - r_a i - psi_e w, torque psi_e i. Converter
(GEM's `ContFourQuadrantConverter`: two two-quadrant legs, switching-averaged): command a in [-1, 1] applies
a * u_dc, less each leg's interlocking loss sign(i) * dead_time/period * u_dc. Speed held constant, or inertia with
GEM's polynomial load (`robo_rl.sim.electric_motor.pmsm.load_torque`). One RK4 step per period.
"""

from __future__ import annotations

import torch

from robo_rl.sim.electric_motor.params import DcMotorParams, LoadParams
from robo_rl.sim.electric_motor.pmsm import load_torque


def converter_voltage(
    command: torch.Tensor, current: torch.Tensor, params: DcMotorParams, period: float
) -> torch.Tensor:
    """Armature voltage in V over one period for normalized commands `(N,)` (1 = u_dc) at armature current `current`."""
    duty = 0.5 * (command.clamp(-1.0, 1.0) + 1.0)
    lost = torch.sign(current) * params.dead_time / period
    leg_a = (duty - lost).clamp(0.0, 1.0)
    leg_b = (1.0 - duty + lost).clamp(0.0, 1.0)
    return (leg_a - leg_b) * params.u_dc


def dc_step(
    current: torch.Tensor,
    omega: torch.Tensor,
    voltage: torch.Tensor,
    params: DcMotorParams,
    period: float,
    load: LoadParams | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(current A, speed rad/s) after `period` s at armature `voltage` (V) held: one RK4 step."""

    def rates(i: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        di = (voltage - params.r_a * i - params.psi_e * w) / params.l_a
        if load is None:
            return di, torch.zeros_like(w)
        j_total = params.j_rotor + load.j_load
        return di, (params.psi_e * i - load_torque(w, load, j_total)) / j_total

    k1 = rates(current, omega)
    k2 = rates(current + period / 2 * k1[0], omega + period / 2 * k1[1])
    k3 = rates(current + period / 2 * k2[0], omega + period / 2 * k2[1])
    k4 = rates(current + period * k3[0], omega + period * k3[1])
    new_i = current + period / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
    new_w = omega + period / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
    return new_i, new_w
