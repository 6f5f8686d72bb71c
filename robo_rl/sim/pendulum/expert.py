"""A scripted swing-up pilot for the pendulum: the `Expert` of robo_rl.hil's SimulatedHuman.

Energy pumping far from upright, a PD balance near it (θ̈ = a sin θ + b u with a = 3g/2l, b = 3/ml², from
Pendulum-v1's dynamics; E = θ̇²/2 + a (cos θ − 1) is 0 upright at rest and is raised by u of the sign of θ̇).
The pilot takes over when the pendulum falls more than `unsafe_angle` from upright (every episode starts there,
hanging) and hands back once it is balanced within `recovered_angle` and `recovered_speed`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from robo_rl.sim.pendulum.task import Pendulum


@dataclass(frozen=True)
class SwingUpPilotConfig:
    pump_gain: float = 1.0
    balance_angle: float = 0.4
    """rad: PD balance within this angle of upright, energy pumping outside."""
    position_gain: float = 10.0
    velocity_gain: float = 2.0
    unsafe_angle: float = 0.6
    recovered_angle: float = 0.1
    recovered_speed: float = 0.5


class SwingUpPilot:
    """`Expert` for the pendulum task."""

    def __init__(self, env: Pendulum, config: SwingUpPilotConfig = SwingUpPilotConfig()) -> None:
        c = env.config
        self.env, self.config = env, config
        self.a, self.b, self.max_torque = 3 * c.g / (2 * c.l), 3 / (c.m * c.l * c.l), c.max_torque

    def _angle_speed(self) -> tuple[torch.Tensor, torch.Tensor]:
        state = self.env.state
        angle = torch.remainder(state[:, 0] + math.pi, 2 * math.pi) - math.pi
        return angle, state[:, 1]

    def action(self) -> torch.Tensor:
        c = self.config
        angle, speed = self._angle_speed()
        energy = 0.5 * speed.square() + self.a * (torch.cos(angle) - 1)
        pump = c.pump_gain * speed * (-energy)
        balance = -(c.position_gain * angle + c.velocity_gain * speed)
        torque = torch.where(angle.abs() < c.balance_angle, balance, pump)
        return torque.clamp(-self.max_torque, self.max_torque).unsqueeze(1)

    def unsafe(self) -> torch.Tensor:
        return self._angle_speed()[0].abs() > self.config.unsafe_angle

    def recovered(self) -> torch.Tensor:
        angle, speed = self._angle_speed()
        return (angle.abs() < self.config.recovered_angle) & (speed.abs() < self.config.recovered_speed)
