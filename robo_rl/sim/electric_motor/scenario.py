"""Scripted current-control episodes: the same motors, speeds, references and sensor noise for every controller and
every simulator (ours here, GEM's in `gem_judge`), so their results compare step for step.

A `Scenario` is drawn once from a seed with the task's config (`draw_scenario`). A controller is built for a number
of motors (`ControllerFactory`) and called each step with the observation the task gives its policy, the speeds and
the references; `rollout` runs it on our simulator (batched, the task's physics functions) and returns a `Trace`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from robo_rl.sim.electric_motor.current_control import CurrentControlConfig, draw_speeds
from robo_rl.sim.electric_motor.pmsm import PmsmState, inverter_dq, pmsm_step
from robo_rl.sim.electric_motor.references import draw_references

Controller = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
"""(observation `(N, 7)`, speeds `(N,)` rad/s, references `(N, 2)` A) → normalized dq commands `(N, 2)`."""
ControllerFactory = Callable[[int], Controller]
"""Builds a controller with fresh internal state for N motors."""


@dataclass(frozen=True)
class Scenario:
    """E episodes of T steps: per episode a speed and a start angle; per step the reference and the sensor noise."""

    config: CurrentControlConfig
    speeds: np.ndarray
    """`(E,)` mechanical speed in rad/s, constant through the episode."""
    start_angles: np.ndarray
    """`(E,)` electrical angle at the start in rad."""
    references: np.ndarray
    """`(E, T, 2)` dq current references in A, the one in force during each step."""
    noise: np.ndarray
    """`(E, T, 2)` current sensor noise in A, added to the measurement the controller sees before each step."""

    @property
    def episodes(self) -> int:
        return int(self.speeds.shape[0])

    @property
    def steps(self) -> int:
        return int(self.references.shape[1])


@dataclass(frozen=True)
class Trace:
    """What happened: currents after each step, the commands, and where the current limit tripped."""

    currents: np.ndarray
    """`(E, T, 2)` true dq currents in A after each step (NaN after a trip: the drive stopped)."""
    commands: np.ndarray
    """`(E, T, 2)` normalized dq commands the controller gave (NaN after a trip)."""
    trip_step: np.ndarray
    """`(E,)` the step at which the current limit tripped, -1 where it never did."""


def draw_scenario(config: CurrentControlConfig, episodes: int, seed: int, steps: int | None = None) -> Scenario:
    """`episodes` episodes of `steps` (default: the task's episode length) drawn as the task draws them."""
    m, steps = config.motor, steps or config.max_episode_steps
    generator = torch.Generator().manual_seed(seed)
    unit = torch.rand(episodes, 2, generator=generator, dtype=torch.float64)
    speeds = draw_speeds(unit[:, 0], config)
    angles = (2 * unit[:, 1] - 1) * math.pi
    references = torch.zeros(episodes, steps, 2, dtype=torch.float64)
    low, high = config.hold_steps
    for episode in range(episodes):
        t = 0
        while t < steps:
            hold = int(torch.randint(low, high + 1, (1,), generator=generator))
            ref_d, ref_q = draw_references(speeds[episode : episode + 1], m, config.voltage_margin, generator)
            references[episode, t : t + hold] = torch.stack((ref_d, ref_q), dim=-1)
            t += hold
    noise = config.noise_std * torch.randn(episodes, steps, 2, generator=generator, dtype=torch.float64)
    return Scenario(config, speeds.numpy(), angles.numpy(), references.numpy(), noise.numpy())


def observation(
    measured: torch.Tensor,
    reference: torch.Tensor,
    speed: torch.Tensor,
    pending: torch.Tensor,
    config: CurrentControlConfig,
) -> torch.Tensor:
    """The task's observation (`current_control.OBS_NAMES`) from measured currents and references (A), speeds (rad/s)
    and the pending command."""
    m = config.motor
    error = (reference - measured) / m.i_nominal
    return torch.cat((error, reference / m.i_nominal, (speed / m.omega_limit).unsqueeze(-1), pending), dim=-1)


def rollout(scenario: Scenario, factory: ControllerFactory) -> Trace:
    """Run the controller on our simulator through every episode of `scenario` at once (float64)."""
    c, m = scenario.config, scenario.config.motor
    e = scenario.episodes
    controller = factory(e)
    omega = torch.from_numpy(scenario.speeds)
    state = PmsmState(
        torch.zeros(e, dtype=torch.float64),
        torch.zeros(e, dtype=torch.float64),
        torch.from_numpy(scenario.start_angles),
        omega,
    )
    pending = torch.zeros(e, 2, dtype=torch.float64)
    alive = torch.ones(e, dtype=torch.bool)
    currents = np.full((e, scenario.steps, 2), np.nan)
    commands = np.full((e, scenario.steps, 2), np.nan)
    trip_step = np.full(e, -1)
    for t in range(scenario.steps):
        reference = torch.from_numpy(scenario.references[:, t])
        measured = torch.stack((state.i_d, state.i_q), dim=-1) + torch.from_numpy(scenario.noise[:, t])
        obs = observation(measured, reference, omega, pending, c)
        command = controller(obs.float(), omega.float(), reference.float()).to(torch.float64).clamp(-1.0, 1.0)
        applied = pending if c.delay_steps else command
        pending = command
        u_d, u_q = inverter_dq(applied, state, m, c.dt)
        state = pmsm_step(state, u_d, u_q, m, c.dt)
        tripped = alive & (state.i_d.square() + state.i_q.square() > m.i_limit**2)
        trip_step[tripped.numpy()] = t
        keep = alive.numpy()
        currents[keep, t] = torch.stack((state.i_d, state.i_q), dim=-1).numpy()[keep]
        commands[keep, t] = command.numpy()[keep]
        alive = alive & ~tripped
    return Trace(currents, commands, trip_step)
