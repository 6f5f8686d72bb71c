"""SimulatedHuman: a scripted expert that takes over when the robot leaves a safe set, as a person would.

HIL-SERL's operator watches and grabs the SpaceMouse when the robot is about to fail; here an `Expert` (a task's
own controller, e.g. a cascaded hover controller or pure pursuit) plays that part, so HIL training can be tested
and benchmarked without a person. Per env: the expert takes over `reaction_steps` after the state leaves the
outer safe set (`Expert.unsafe`), and hands back once the state is well inside again (`Expert.recovered`, a
tighter set: hysteresis). Its actions get Gaussian noise; `budget` caps the share of steps it controls over the
whole run (a tired human): at the cap it lets go everywhere, until the share falls below it again.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Protocol

import torch

from robo_rl.hil.device import TeleopCommand


class Expert(Protocol):
    """A task's scripted controller and its safe set, reading the simulator's true state."""

    def action(self) -> torch.Tensor:
        """`(N, action_dim)` the expert's action for every env now, in the env's action units."""
        ...

    def unsafe(self) -> torch.Tensor:
        """`(N,)` bool: the state is outside the outer safe set (a human would take over)."""
        ...

    def recovered(self) -> torch.Tensor:
        """`(N,)` bool: the state is inside the inner safe set (a human would hand back)."""
        ...

    # Optional: `episode_reset(done: torch.Tensor) -> None`, called with the envs `(N,)` bool that start new episodes,
    # for an expert that judges by time within the episode (e.g. peg insertion: no progress for 6 s).


@dataclass(frozen=True)
class SimulatedHumanConfig:
    reaction_steps: int = 3
    """Steps between leaving the safe set and taking over (human reaction time ÷ dt)."""
    action_noise: float = 0.05
    """Standard deviation of Gaussian noise on the expert's action (action units)."""
    budget: float = 1.0
    """Largest share of all env steps the human may control; once it is used up, the human lets go everywhere."""
    min_takeover_steps: int = 10
    """Steps the human keeps control at least once it took over."""
    finish_takeovers: bool = False
    """At the cap: False lets go everywhere at once; True starts no new takeover but finishes those under way (until
    the expert's `recovered` or the episode's end), as a person who takes over for a whole manoeuvre does. Then the
    share may pass the budget by the takeovers under way. For tasks whose rescue is long (peg insertion: a search
    of tens of steps), where a human who lets go mid-way rescues nothing."""
    delay_steps: int = 0
    """Steps between the observation the human judges and acts on and the step that executes what it decided:
    0 in a simulator, where the device is polled with the observation the policy acts on; 1 on the ROS path, where
    the operator's message on a new observation reaches the trainer after it has already stepped (the trainer
    executes the operator's decision and action of the previous observation)."""

    def __post_init__(self) -> None:
        if self.reaction_steps < 0 or self.min_takeover_steps < 0 or self.delay_steps < 0:
            raise ValueError("reaction_steps, min_takeover_steps and delay_steps must be >= 0")
        if self.action_noise < 0 or not 0.0 <= self.budget <= 1.0:
            raise ValueError("action_noise must be >= 0 and budget in [0, 1]")


class SimulatedHuman:
    """A `TeleopDevice` driven by an `Expert`; `low`/`high` `(action_dim,)` clip its noisy actions."""

    def __init__(
        self,
        expert: Expert,
        low: torch.Tensor,
        high: torch.Tensor,
        num_envs: int,
        config: SimulatedHumanConfig = SimulatedHumanConfig(),
        seed: int = 0,
    ) -> None:
        self.expert, self.config = expert, config
        self.low, self.high = low, high
        device = low.device
        self.unsafe_for = torch.zeros(num_envs, dtype=torch.long, device=device)
        self.controlling = torch.zeros(num_envs, dtype=torch.bool, device=device)
        self.controlled_for = torch.zeros(num_envs, dtype=torch.long, device=device)
        self.generator = torch.Generator(device=device).manual_seed(seed)
        self.steps = 0
        self.human_steps = 0
        self._late: deque[TeleopCommand] = deque()
        """Decisions not yet executed (`delay_steps`), oldest first."""

    @property
    def used_budget(self) -> float:
        """Share of all polled env steps the human controlled so far."""
        return self.human_steps / self.steps if self.steps else 0.0

    def poll(self, obs: torch.Tensor) -> TeleopCommand:
        unsafe = self.expert.unsafe()
        self.unsafe_for = torch.where(unsafe, self.unsafe_for + 1, torch.zeros_like(self.unsafe_for))
        held_long_enough = self.controlled_for >= self.config.min_takeover_steps
        release = self.controlling & self.expert.recovered() & held_long_enough
        within_budget = self.used_budget < self.config.budget
        take = ~self.controlling & (self.unsafe_for > self.config.reaction_steps)
        if self.config.finish_takeovers:
            self.controlling = (self.controlling & ~release) | (take & within_budget)
        else:
            self.controlling = ((self.controlling & ~release) | take) & within_budget
        zeros = torch.zeros_like(self.controlled_for)
        self.controlled_for = torch.where(self.controlling, self.controlled_for + 1, zeros)
        self.steps += obs.shape[0]
        self.human_steps += int(self.controlling.sum())
        return self._delayed(TeleopCommand(self._noisy(self.expert.action()), self.controlling.clone()))

    def _delayed(self, command: TeleopCommand) -> TeleopCommand:
        """`command` after `delay_steps` polls (inactive before the first one arrives)."""
        if self.config.delay_steps == 0:
            return command
        self._late.append(command)
        if len(self._late) > self.config.delay_steps:
            return self._late.popleft()
        return TeleopCommand(torch.zeros_like(command.action), torch.zeros_like(command.active))

    def episode_reset(self, done: torch.Tensor) -> None:
        """Envs `done` start new episodes: the human lets go there (and tells an expert that keeps episode state)."""
        new_episodes = getattr(self.expert, "episode_reset", None)
        if new_episodes is not None:
            new_episodes(done)
        self.controlling &= ~done
        for late in self._late:  # a decision about the ended episode is not executed in the next one
            late.active[done] = False
        self.unsafe_for = torch.where(done, torch.zeros_like(self.unsafe_for), self.unsafe_for)
        self.controlled_for = torch.where(done, torch.zeros_like(self.controlled_for), self.controlled_for)

    def _noisy(self, action: torch.Tensor) -> torch.Tensor:
        if self.config.action_noise > 0:
            noise = torch.randn(action.shape, generator=self.generator, device=action.device, dtype=action.dtype)
            action = action + self.config.action_noise * noise
        return torch.maximum(torch.minimum(action, self.high), self.low)
