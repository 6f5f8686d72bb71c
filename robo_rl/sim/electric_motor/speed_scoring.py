"""Score a speed controller on the speed-control task: mean |speed error|, trips and return, against the PI speed
controller (`foc.SpeedPi`) on the same episodes (the task reset with the same seed draws the same references and
noise whatever the controller does, as long as no episode trips)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch

from robo_rl.envs import INFO_TRACKING_ERROR
from robo_rl.sim.electric_motor.current_control import INFO_TRIP
from robo_rl.sim.electric_motor.foc import SpeedPi
from robo_rl.sim.electric_motor.speed_control import PmsmSpeedControl

SpeedController = Callable[[torch.Tensor], torch.Tensor]
"""observation `(N, 5)` → torque commands `(N, 1)` (1 = `SpeedControlConfig.torque_scale`)."""


@dataclass(frozen=True)
class SpeedScore:
    mean_abs_error: float
    """Mean |speed reference - speed| in rad/s over all steps."""
    trips: int
    mean_return: float
    """Mean return of the episodes that ended."""
    episodes: int

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


class PiSpeedController:
    """`foc.SpeedPi` as a `SpeedController`: it reads the measured speed and the reference from the observation;
    `reset(done)` restarts the integrators of the envs whose episode ended."""

    def __init__(self, task: PmsmSpeedControl) -> None:
        c = task.config
        self.config = c
        self.pi = SpeedPi(c.motor.j_rotor + c.load.j_load, c.torque_scale, c.dt, task.num_envs, task.device)

    def __call__(self, obs: torch.Tensor) -> torch.Tensor:
        c = self.config
        return (self.pi(obs[:, 2] * c.omega_scale, obs[:, 1] * c.omega_scale) / c.torque_scale).unsqueeze(-1)

    def reset(self, done: torch.Tensor) -> None:
        self.pi.reset(done)


def pi_speed_controller(task: PmsmSpeedControl) -> PiSpeedController:
    """The PI speed controller for `task`'s motors."""
    return PiSpeedController(task)


def score_speed(
    task: PmsmSpeedControl, controller: SpeedController, episodes_per_env: int = 1, seed: int = 12345
) -> SpeedScore:
    """Run `controller` on every env of `task` for `episodes_per_env` episodes from `reset(seed)`."""
    obs = task.reset(seed)
    error_sum, trips, returns = 0.0, 0, []
    running = torch.zeros(task.num_envs, device=task.device)
    steps = task.max_episode_steps * episodes_per_env
    reset = getattr(controller, "reset", None)
    for _ in range(steps):
        obs, reward, terminated, truncated, info = task.step(controller(obs))
        error_sum += float(info[INFO_TRACKING_ERROR].sum())
        trips += int(info[INFO_TRIP].sum())
        running += reward
        done = terminated | truncated
        returns.extend(running[done].tolist())
        running = torch.where(done, torch.zeros_like(running), running)
        if reset is not None:
            reset(done)
    mean_return = sum(returns) / max(len(returns), 1)
    return SpeedScore(error_sum / (task.num_envs * steps), trips, mean_return, len(returns))
