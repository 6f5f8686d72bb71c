"""The simulated operator of the peg benchmark correcting through teleop_node's topics (profile arm_peg): the peg
expert (robo_rl.sim.mujoco.peg_expert) judging and driving from what the robot's topics carry, with a budget.

It sees the arm as ArmOperator does (joint_states and the state topic's peg tip offset from the hole estimate,
decoded as the nodes decode them) plus the true hole that sim_bridge reports on /diagnostics (what a person watching
the arm sees), through robo_rl.sim.mujoco.peg_view.PegTopicView. Once per complete new observation (a joint_states
and a state message since the last one), while an episode runs, robo_rl.hil.simulated.SimulatedHuman polls the expert
with the peg benchmark's operator settings (robo_rl.sim.mujoco.presets.PEG_OPERATOR: reaction 1 step, 20 %
budget, takeovers finished once started, at least 5 steps): it takes over when the expert judges the policy heading
wrong and hands back once the peg is well in the hole. While it controls it answers each observation at once, in
the input callback: the expert's joint steps on /NS/intervention and /NS/intervening true (the trainer waits a
moment for that answer, robo_rl.robot.env.RobotEnvConfig.operator_wait); letting go, /NS/intervening false once, as
teleop_node does at the release of its dead-man button. It answers the trainer's reset prompts on
/NS/episode_event (sim_bridge puts the arm back) and starts a new episode there for the expert (its patience); it
never presses the e-stop.

With the environment's PEG_OPERATOR_REPEAT=1 it is issue 36's operator instead (bench/peg_ros_realtime.py
--late-operator): polled from the 50 Hz tick once per input message (either topic), publishing its last action
every tick and never saying that it let go, so the trainer executes its answer to the previous observation and
repeats its last action for the staleness timeout after a hand-back.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import torch
from arm_operator import ArmOperator
from std_msgs.msg import Bool, Float32MultiArray, String

from robo_rl.hil.simulated import SimulatedHuman
from robo_rl.real.fault import InputError
from robo_rl.sim.mujoco.peg_expert import PegSearchExpert
from robo_rl.sim.mujoco.peg_view import JOINT_FIELDS, OFFSET_FIELDS, PegTopicView
from robo_rl.sim.mujoco.presets import PEG_OPERATOR

HOLE_KEYS = ("hole_x", "hole_y", "hole_z", "hole_yaw")
"""sim_bridge's /diagnostics values of the true hole pose."""


class PegOperator(ArmOperator):
    def __init__(self, node: Any, namespace: str) -> None:
        super().__init__(node, namespace)
        self.view = PegTopicView()
        self.expert = PegSearchExpert(self.view)
        bound = torch.tensor([a.high for a in self.profile.actions], dtype=torch.float32)
        low = torch.tensor([a.low for a in self.profile.actions], dtype=torch.float32)
        self.human = SimulatedHuman(self.expert, low, bound, 1, PEG_OPERATOR)
        self.observations = self._polled = 0
        self._action: list[float] = []
        self._fresh: set[str] = set()
        self._running = False
        self.repeat = os.environ.get("PEG_OPERATOR_REPEAT") == "1"
        self.intervening = node.create_publisher(Bool, f"{self.ns}/intervening", 10)

    def _on_input(self, decode: Any) -> Any:
        def callback(message: Any) -> None:
            try:
                fields = decode(message)
            except InputError:
                self.bad_inputs += 1
                return
            self.fields.update(fields)
            if self.repeat:
                self.observations += 1
                return
            self._fresh |= {"joints"} if JOINT_FIELDS[0] in fields else set()
            self._fresh |= {"offset"} if OFFSET_FIELDS[0] in fields else set()
            if self._fresh == {"joints", "offset"}:
                self._fresh = set()
                self.observations += 1
                self._answer()

        return callback

    def _answer(self) -> None:
        """Poll the expert on the newest observation (once per observation, while an episode runs) and publish
        what it decided."""
        hole = [float(self.bridge[key]) for key in HOLE_KEYS] if all(k in self.bridge for k in HOLE_KEYS) else None
        if not self._running or self.observations == self._polled or not self.view.update(self.fields, hole):
            return
        self._polled = self.observations
        command = self.human.poll(torch.zeros(1, 1))
        controlling = bool(command.active[0])
        self.steps += 1
        self.driving_steps += int(controlling)
        self.takeovers += int(controlling and not self._was_driving)
        let_go = self._was_driving and not controlling
        self._was_driving = controlling
        self._action = command.action[0].tolist() if controlling else []
        self._publish()
        if let_go and not self.repeat:
            self.intervening.publish(Bool(data=False))

    def tick(self, log: Path | None = None, estop: bool = False, drive: bool = False) -> None:
        """One operator period (about 50 Hz): answer a reset prompt in `log` and note whether an episode runs;
        with PEG_OPERATOR_REPEAT=1 also poll the expert here and repeat the last action. `estop` and `drive` are
        ignored."""
        now = time.monotonic()
        self.estop.publish(Bool(data=False))
        self._running = False
        if log is not None and log.exists():
            text = log.read_text()
            prompts, starts = text.count("then press reset"), text.count("the next episode starts")
            self._running = 0 < starts >= prompts
            if prompts > starts and now > self._pressed_at + 1.0:
                self.episode.publish(String(data="reset"))
                self.reset_presses, self._pressed_at = self.reset_presses + 1, now
                self.human.episode_reset(torch.ones(1, dtype=torch.bool))
                self._action = []
                if self._was_driving and not self.repeat:
                    self.intervening.publish(Bool(data=False))
                self._was_driving = False
        if self.repeat:
            polled = self._polled
            self._answer()
            if self._polled == polled:  # no new observation: the last action again
                self._publish()

    def _publish(self) -> None:
        if self._action:
            self.takeover.publish(Float32MultiArray(data=self._action))
            if not self.repeat:
                self.intervening.publish(Bool(data=True))
