"""The peg benchmark's operator at the robot, from the robot's fields: `PegFieldOperator`, an `Operator` of
`robo_rl.sim.robot_link.SimLink` (the arm_peg profile rehearsed in simulated time, `robo-rl train --robot arm_peg
--robot-link sim --operator simulated`).

It is the operator of bench/peg_hil.py's setup (c) acting as one at teleop_node does: `SimulatedHuman` with the peg
expert (`PegSearchExpert`) judging and driving from what the topics carry (joint angles and the peg tip's offset
from the hole estimate, through `PegTopicView`) plus the true hole a person watching the arm sees. It answers the
trainer's reset prompts after `reset_delay_s` (lifting the peg out and putting it back takes a person a moment) and
never presses the e-stop. The human's `delay_steps` reproduces the ROS path's lateness: with 1 the trainer executes
what the operator decided on the previous observation, as through teleop_node's topics
(tests/real/ros/scenarios/peg_operator.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from robo_rl.hil.simulated import SimulatedHuman, SimulatedHumanConfig
from robo_rl.sim.mujoco.peg_expert import PegSearchExpert
from robo_rl.sim.mujoco.peg_view import PegTopicView


@dataclass(frozen=True)
class PegOperatorConfig:
    human: SimulatedHumanConfig = field(default_factory=SimulatedHumanConfig)
    """Reaction, noise, budget and delay of the operator (the peg benchmark's: robo_rl.sim.mujoco.presets'
    `PEG_OPERATOR`)."""
    corrects: bool = True
    """Take over when the expert judges the policy heading wrong; False: only answer reset prompts."""
    reset_delay_s: float = 1.0
    """s between a reset prompt and the press (the peg lifted out and put back)."""


class PegFieldOperator:
    """See the module docstring. `hole()` is the true hole pose (x, y, z m, yaw rad) the person sees; `low`/`high`
    the profile's action bounds (rad of joint step)."""

    def __init__(
        self,
        hole: Callable[[], Sequence[float] | None],
        low: Sequence[float],
        high: Sequence[float],
        config: PegOperatorConfig = PegOperatorConfig(),
        seed: int = 0,
    ) -> None:
        self.hole, self.config = hole, config
        self.view = PegTopicView()
        self.expert = PegSearchExpert(self.view)
        bounds = (torch.tensor(low, dtype=torch.float32), torch.tensor(high, dtype=torch.float32))
        self.human = SimulatedHuman(self.expert, *bounds, 1, config.human, seed)
        self.takeovers = self.prompts = 0
        self._driving = False
        self._reset_at: float | None = None

    def action(self, fields: Mapping[str, float], now: float) -> np.ndarray | None:
        """The operator's joint steps (policy units) while it drives, else None; one call per control step."""
        del now
        if not self.config.corrects or self._reset_at is not None or not self.view.update(fields, self.hole()):
            return None
        command = self.human.poll(torch.zeros(1, 1))
        driving = bool(command.active[0])
        self.takeovers += int(driving and not self._driving)
        self._driving = driving
        return command.action[0].double().numpy() if driving else None

    def events(self, now: float) -> list[str]:
        if self._reset_at is None or now < self._reset_at:
            return []
        self._reset_at = None
        self.human.episode_reset(torch.ones(1, dtype=torch.bool))
        self._driving = False
        return ["reset"]

    def prompted(self, text: str, now: float) -> None:
        if "press reset" in text:
            self.prompts += 1
            self._reset_at = now + self.config.reset_delay_s

    def estopped(self, now: float) -> bool:
        del now
        return False

    @property
    def share(self) -> float:
        """The share of the polled steps the operator drove."""
        return self.human.used_budget
