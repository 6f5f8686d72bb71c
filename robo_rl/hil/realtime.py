"""RealTimeEnv: a batched env paced to a fixed step rate, as a robot runs (composition over any BatchedEnv).

A simulator steps as fast as it can; a person at a keyboard or joystick, and a learner process that must keep
up, need it to run at the robot's rate instead. `step` sleeps until the next tick of a fixed grid
(`start + k / rate_hz`); a step that comes late does not make the following ones hurry (the grid moves on).
"""

from __future__ import annotations

import time
from typing import Any

import torch

from robo_rl.envs import BatchedEnv, StepResult


class RealTimeEnv:
    """`env` stepped at most `rate_hz` times per second (default: 1 / env.dt, the robot's own rate)."""

    def __init__(self, env: BatchedEnv, rate_hz: float | None = None) -> None:
        rate = 1.0 / env.dt if rate_hz is None else rate_hz
        if not rate > 0:
            raise ValueError(f"RealTimeEnv: rate_hz must be > 0, got {rate}")
        self.env, self.period = env, 1.0 / rate
        self.next_tick: float | None = None
        self.late_steps = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)

    def reset(self, seed: int | None = None) -> torch.Tensor:
        self.next_tick = None
        return self.env.reset(seed)

    def step(self, action: torch.Tensor) -> StepResult:
        now = time.monotonic()
        if self.next_tick is None:
            self.next_tick = now
        elif now < self.next_tick:
            time.sleep(self.next_tick - now)
        else:
            self.late_steps += 1
            self.next_tick = now
        self.next_tick += self.period
        return self.env.step(action)
