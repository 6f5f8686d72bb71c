"""The pendulum swing-up task (`pendulum`): Gymnasium's Pendulum-v1 batched in torch, its expert, its renderer and
its presets (`presets.py`)."""

from robo_rl.sim.pendulum.task import Pendulum, PendulumConfig

__all__ = ["Pendulum", "PendulumConfig"]
