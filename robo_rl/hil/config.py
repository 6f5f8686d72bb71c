"""The human-in-the-loop section of an experiment config."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from robo_rl.hil.gamepad import GamepadConfig
from robo_rl.hil.simulated import SimulatedHumanConfig

Teleop = Literal["none", "simulated", "keyboard", "gamepad", "ros"]
TELEOPS: tuple[str, ...] = ("none", "simulated", "keyboard", "gamepad", "ros")


@dataclass(frozen=True)
class HilConfig:
    teleop: Teleop = "none"
    """Who may take over the training envs: nobody, `simulated` (the task's scripted expert as a simulated
    human, `robo_rl.sim.make_expert`), `keyboard` (a person at this terminal drives env 0, see
    robo_rl.hil.keyboard) or `ros` (a joystick through teleop_node's topics in `ros_namespace`; needs rclpy, so
    train from .venv-ros). Interventions are off-policy data: sac, td3, fql or dsrl only."""
    human: SimulatedHumanConfig = field(default_factory=SimulatedHumanConfig)
    """Reaction delay, action noise and budget of the simulated human."""
    gamepad: GamepadConfig = field(default_factory=GamepadConfig)
    """Device, buttons and axis mapping of `gamepad`."""
    ros_namespace: str = "/"
    """Namespace of the teleop_node whose `intervention` / `intervening` topics `ros` reads (e.g. /cf1)."""
    real_time: bool = False
    """Pace the training env to `rate_hz` steps per second, as a robot runs (robo_rl.hil.realtime): for a
    person at the keyboard or joystick on a simulator, and for off_policy.actor_learner to keep up."""
    rate_hz: float = 0.0
    """Step rate of `real_time`; 0 means the task's own rate, 1 / dt."""

    def __post_init__(self) -> None:
        if self.rate_hz < 0:
            raise ValueError(f"hil.rate_hz must be >= 0, got {self.rate_hz}")
