"""The simulated operator of the RC car scenarios, through teleop_node's topics: it reads the car's own topics
(the profile's inputs, decoded as the nodes decode them), drives with `robo_rl.robot.operator.SimulatedOperator`
on /NS/intervention when it takes over, answers the trainer's reset prompts on /NS/episode_event, and judges laps
from sim_bridge's lap count: a lap is clean when the operator did not take over and the car stayed inside the
profile's workspace since the previous one (sim_bridge reports laps once a second, so a lap's end is known to
about a second)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from std_msgs.msg import Bool, Float32MultiArray, String

from robo_rl.real.profile import load_profile
from robo_rl.real.ros.inputs import topic_inputs
from robo_rl.real.safety_box import SafetyBox
from robo_rl.robot.operator import OperatorConfig, SimulatedOperator


class CarOperator:
    def __init__(self, node: Any, namespace: str, config: OperatorConfig | None = None) -> None:
        self.node, self.ns = node, namespace.rstrip("/")
        self.profile = load_profile("rc_car")
        self.operator = SimulatedOperator(config or OperatorConfig())
        self.box = SafetyBox.from_profile(self.profile)
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
        self.driving_steps = self.steps = self.reset_presses = 0
        self.laps = self.clean_laps = 0
        self.first_clean_lap_at: float | None = None
        self._dirty = False
        self._pressed_at = 0.0
        self.estop.publish(Bool(data=False))

    def _on_input(self, decode: Any) -> Any:
        def callback(message: Any) -> None:
            self.fields.update(decode(message))

        return callback

    def _on_diagnostics(self, message: DiagnosticArray) -> None:
        for status in message.status:
            if "sim_bridge" in status.name:
                self.bridge.update({kv.key: kv.value for kv in status.values})
        laps = int(self.bridge.get("laps", 0))
        if laps > self.laps:
            clean = not self._dirty
            self.clean_laps += int(clean)
            if clean and self.first_clean_lap_at is None:
                self.first_clean_lap_at = time.monotonic()
            self.laps, self._dirty = laps, False

    def tick(self, log: Path | None = None, estop: bool = False) -> None:
        """One operator period (call at about 50 Hz): answer a pending reset prompt in `log`, drive if taking over."""
        now = time.monotonic()
        self.estop.publish(Bool(data=estop))
        if log is not None and log.exists():
            text = log.read_text()
            waiting = text.count("then press reset") > text.count("the next episode starts")
            if waiting and not estop and now > self._pressed_at + 1.0:  # the car is put back; press (again) until seen
                self.episode.publish(String(data="reset"))
                self.reset_presses, self._pressed_at = self.reset_presses + 1, now
                self._dirty = False
        if not self.fields:
            return
        self.steps += 1
        self._dirty |= bool(self.box.violations(self.fields))
        action = self.operator.action(self.fields, now)
        if action is not None:
            self.takeover.publish(Float32MultiArray(data=[float(a) for a in action]))
            self.driving_steps += 1
            self._dirty = True

    def results(self) -> dict[str, Any]:
        return {
            "operator_laps": self.laps,
            "clean_laps": self.clean_laps,
            "takeovers": self.operator.takeovers,
            "operator_share": self.driving_steps / max(self.steps, 1),
            "reset_presses": self.reset_presses,
            "bridge": self.bridge,
        }
