"""The simulated operator of the peg benchmark correcting through teleop_node's topics (profile arm_peg): the peg
expert (robo_rl.sim.mujoco.peg_expert) judging and driving from what the robot's topics carry, with a budget.

It sees the arm as ArmOperator does (joint_states and the state topic's peg tip offset from the hole estimate,
decoded as the nodes decode them) plus the true hole that sim_bridge reports on /diagnostics (what a person watching
the arm sees), through robo_rl.sim.mujoco.peg_view.PegTopicView. Once per new observation, while an episode runs,
robo_rl.hil.simulated.SimulatedHuman polls the expert with the peg benchmark's operator settings
(robo_rl.sim.mujoco.presets: reaction 1 step, 20 % budget, takeovers finished once started, at least 5 steps): it
takes over when the expert judges the policy heading wrong and hands back once the peg is well in the hole. While it
controls, it publishes the expert's joint steps on /NS/intervention every tick (teleop_node's takeover). It answers
the trainer's reset prompts on /NS/episode_event (sim_bridge puts the arm back) and starts a new episode there for
the expert (its patience); it never presses the e-stop."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import torch
from arm_operator import ArmOperator
from std_msgs.msg import Bool, Float32MultiArray, String

from robo_rl.hil.simulated import SimulatedHuman, SimulatedHumanConfig
from robo_rl.sim.mujoco.peg_expert import PegSearchExpert
from robo_rl.sim.mujoco.peg_view import PegTopicView

HUMAN = SimulatedHumanConfig(
    reaction_steps=1, action_noise=0.0005, budget=0.2, min_takeover_steps=5, finish_takeovers=True
)
"""The peg benchmark's operator (robo_rl.sim.mujoco.presets' peg HIL presets)."""
HOLE_KEYS = ("hole_x", "hole_y", "hole_z", "hole_yaw")
"""sim_bridge's /diagnostics values of the true hole pose."""


class PegOperator(ArmOperator):
    def __init__(self, node: Any, namespace: str) -> None:
        super().__init__(node, namespace)
        self.view = PegTopicView()
        self.expert = PegSearchExpert(self.view)
        bound = torch.tensor([a.high for a in self.profile.actions], dtype=torch.float32)
        low = torch.tensor([a.low for a in self.profile.actions], dtype=torch.float32)
        self.human = SimulatedHuman(self.expert, low, bound, 1, HUMAN)
        self.observations = self._polled = 0
        self._action: list[float] = []

    def _on_input(self, decode: Any) -> Any:
        callback = super()._on_input(decode)

        def counted(message: Any) -> None:
            callback(message)
            self.observations += 1

        return counted

    def tick(self, log: Path | None = None, estop: bool = False, drive: bool = False) -> None:
        """One operator period (about 50 Hz): answer a reset prompt in `log`; while an episode runs, poll the expert
        once per new observation and publish its step while it controls. `estop` and `drive` are ignored."""
        now = time.monotonic()
        self.estop.publish(Bool(data=False))
        running = False
        if log is not None and log.exists():
            text = log.read_text()
            prompts, starts = text.count("then press reset"), text.count("the next episode starts")
            running = 0 < starts >= prompts
            if prompts > starts and now > self._pressed_at + 1.0:
                self.episode.publish(String(data="reset"))
                self.reset_presses, self._pressed_at = self.reset_presses + 1, now
                self.human.episode_reset(torch.ones(1, dtype=torch.bool))
                self._action = []
        hole = [float(self.bridge[key]) for key in HOLE_KEYS] if all(k in self.bridge for k in HOLE_KEYS) else None
        if not running or self.observations == self._polled or not self.view.update(self.fields, hole):
            self._publish()
            return
        self._polled = self.observations
        command = self.human.poll(torch.zeros(1, 1))
        controlling = bool(command.active[0])
        self.steps += 1
        self.driving_steps += int(controlling)
        self.takeovers += int(controlling and not self._was_driving)
        self._was_driving = controlling
        self._action = command.action[0].tolist() if controlling else []
        self._publish()

    def _publish(self) -> None:
        if self._action:
            self.takeover.publish(Float32MultiArray(data=self._action))
