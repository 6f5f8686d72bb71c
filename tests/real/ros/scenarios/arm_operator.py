"""The simulated operator of the peg arm scenario (profile arm_peg), through teleop_node's topics: it reads the arm's
own topics (joint_states and the peg tip's offset from the hole estimate on `state`, decoded as the nodes decode
them), answers the trainer's reset prompts on /NS/episode_event (sim_bridge puts the arm back at the press, as the
person lifting the peg out would), and, while told to take over, publishes joint-angle steps on /NS/intervention.

The takeover is mechanical, not a peg search: a small step on every joint whose sign flips every `FLIP` ticks, so
the arm wiggles in place (the policy's units: rad per control period, within the profile's ±0.05 rad). Learning to
insert is measured in simulation (bench/peg_hil.py); here only the path of the operator's actions counts."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from std_msgs.msg import Bool, Float32MultiArray, String

from robo_rl.real.fault import InputError
from robo_rl.real.profile import load_profile
from robo_rl.real.ros.inputs import topic_inputs

STEP = 0.01
"""rad per control period on each joint while the operator drives (a fifth of the profile's bound)."""
FLIP = 10
"""Operator ticks (about 0.2 s at 50 Hz) between the step's sign flips: the arm stays where it was."""


class ArmOperator:
    def __init__(self, node: Any, namespace: str) -> None:
        self.node, self.ns = node, namespace.rstrip("/")
        self.profile = load_profile("arm_peg")
        self.fields: dict[str, float] = {}
        for item in topic_inputs(self.profile):
            topic = f"{self.ns}/{item.spec.topic_name}"
            node.create_subscription(item.message_type, topic, self._on_input(item.decode), qos_profile_sensor_data)
        latched = QoSProfile(
            depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL
        )
        self.estop = node.create_publisher(Bool, f"{self.ns}/estop", latched)
        self.takeover = node.create_publisher(Float32MultiArray, f"{self.ns}/intervention", 10)
        self.episode = node.create_publisher(String, f"{self.ns}/episode_event", 10)
        node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 10)
        self.bridge: dict[str, str] = {}
        self.driving_steps = self.steps = self.reset_presses = self.takeovers = 0
        self.bad_inputs = 0
        self._pressed_at = 0.0
        self._was_driving = False
        self.estop.publish(Bool(data=False))

    def _on_input(self, decode: Any) -> Any:
        def callback(message: Any) -> None:
            try:
                self.fields.update(decode(message))
            except InputError:  # as the nodes do: a message the profile cannot read is skipped and counted
                self.bad_inputs += 1

        return callback

    def _on_diagnostics(self, message: DiagnosticArray) -> None:
        for status in message.status:
            if "sim_bridge" in status.name:
                self.bridge.update({kv.key: kv.value for kv in status.values})

    def tick(self, log: Path | None = None, estop: bool = False, drive: bool = False) -> None:
        """One operator period (call at about 50 Hz): answer a pending reset prompt in `log`, drive if `drive`."""
        now = time.monotonic()
        self.estop.publish(Bool(data=estop))
        if log is not None and log.exists():
            text = log.read_text()
            waiting = text.count("then press reset") > text.count("the next episode starts")
            if waiting and not estop and now > self._pressed_at + 1.0:  # the peg is put back; press (again) until seen
                self.episode.publish(String(data="reset"))
                self.reset_presses, self._pressed_at = self.reset_presses + 1, now
        if not self.fields:
            return
        self.steps += 1
        if drive:
            sign = 1.0 if (self.driving_steps // FLIP) % 2 == 0 else -1.0
            self.takeover.publish(Float32MultiArray(data=[sign * STEP] * len(self.profile.actions)))
            self.driving_steps += 1
        self.takeovers += int(drive and not self._was_driving)
        self._was_driving = drive

    def results(self) -> dict[str, Any]:
        return {
            "takeovers": self.takeovers,
            "operator_share": self.driving_steps / max(self.steps, 1),
            "reset_presses": self.reset_presses,
            "bad_inputs": self.bad_inputs,
            "bridge": self.bridge,
        }
