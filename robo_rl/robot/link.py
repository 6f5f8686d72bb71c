"""The robot end of a `RobotEnv`: what it reads and sends, over ROS 2 (`RosLink`) or anything with the same methods.

`RobotLink` is the transport boundary: the latest observation fields of the profile's inputs (derived ones
included), which inputs are stale, the command to send, the operator's e-stop, takeover action and episode buttons.
`RosLink` subscribes the profile's inputs as policy_node does (`robo_rl.real.ros.inputs`), publishes its command,
and listens to teleop_node's `estop`, `intervention` and `episode_event` topics; rclpy is imported when it is
built, so the module imports without ROS.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from robo_rl.real.command import select_command
from robo_rl.real.profile import CommandSpec, RobotProfile
from robo_rl.real.watchdog import Watchdog

EPISODE_EVENTS = ("success", "failure", "reset", "discard")
"""What the operator's episode buttons say (teleop_node's `episode_event`, std_msgs/String)."""


class RobotLink(Protocol):
    spec: CommandSpec
    """The profile's command this link sends."""

    def fields(self) -> dict[str, float]:
        """The latest value of every observation field received so far (derived fields included)."""
        ...

    def stale_inputs(self) -> list[str]:
        """The inputs silent for longer than the profile's staleness timeout."""
        ...

    def send(self, fields: dict[str, float]) -> None:
        """Publish one command (message field → value)."""
        ...

    def estopped(self) -> bool: ...

    def intervention(self) -> np.ndarray | None:
        """The operator's action in policy units while fresh (staleness timeout), else None."""
        ...

    def events(self) -> list[str]:
        """Episode buttons pressed since the last call (`EPISODE_EVENTS`), oldest first."""
        ...

    def wait_until(self, deadline: float) -> None:
        """Receive messages until the monotonic time `deadline`."""
        ...

    def close(self) -> None: ...


class RosLink:
    """A `RobotLink` over rclpy: one node in the robot's namespace (remap the topics like policy_node's)."""

    def __init__(
        self,
        profile: RobotProfile,
        namespace: str = "/",
        target: Sequence[float] = (0.0, 0.0, 0.0),
        command_type: str = "auto",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        import rclpy
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
        from std_msgs.msg import Bool, Float32MultiArray, String

        from robo_rl.real.ros.inputs import derived_fields, topic_inputs
        from robo_rl.real.ros.messages import message_class

        if not rclpy.ok():
            rclpy.init()
        self.profile, self.target, self.clock = profile, tuple(target), clock
        self._derived = derived_fields
        self.node = rclpy.create_node("robot_env", namespace=namespace)
        self.spec = select_command(profile, command_type=command_type)
        self.command_type = message_class(self.spec.type)
        self.publisher = self.node.create_publisher(self.command_type, self.spec.topic, 10)
        self._fields: dict[str, float] = {}
        self.watchdogs = {}
        for item in topic_inputs(profile):
            self.watchdogs[item.spec.name] = Watchdog(profile.staleness_timeout, clock)
            callback = self._on_input(item.spec.name, item.decode)
            self.node.create_subscription(item.message_type, item.spec.topic_name, callback, qos_profile_sensor_data)
        latched = QoSProfile(
            depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL
        )
        self._estop = False
        self._intervention: np.ndarray | None = None
        self._intervened_at = -float("inf")
        self._events: list[str] = []
        self.node.create_subscription(Bool, "estop", self._on_estop, latched)
        self.node.create_subscription(Float32MultiArray, "intervention", self._on_intervention, 10)
        self.node.create_subscription(String, "episode_event", self._on_event, 10)

    def _on_input(self, name: str, decode: Callable[[Any], dict[str, float]]) -> Callable[[Any], None]:
        def callback(message: Any) -> None:
            self._fields.update(decode(message))
            self._fields.update(self._derived(self.profile, self._fields, self.target))
            self.watchdogs[name].feed()

        return callback

    def _on_estop(self, message: Any) -> None:
        self._estop = bool(message.data)

    def _on_intervention(self, message: Any) -> None:
        action = np.asarray(message.data, dtype=np.float64)
        if action.shape == (len(self.profile.actions),):
            self._intervention, self._intervened_at = action, self.clock()

    def _on_event(self, message: Any) -> None:
        if message.data in EPISODE_EVENTS:
            self._events.append(str(message.data))

    def fields(self) -> dict[str, float]:
        return dict(self._fields)

    def stale_inputs(self) -> list[str]:
        return [name for name, watchdog in self.watchdogs.items() if watchdog.stale()]

    def send(self, fields: dict[str, float]) -> None:
        from robo_rl.real.ros.messages import set_fields

        message = set_fields(self.command_type(), fields)
        if "header" in self.command_type.get_fields_and_field_types():
            message.header.stamp = self.node.get_clock().now().to_msg()
        if self.spec.joint_names:
            message.joint_names = list(self.spec.joint_names)
            for point in message.points:
                point.time_from_start.nanosec = int(self.profile.dt * 1e9)
        self.publisher.publish(message)

    def estopped(self) -> bool:
        return self._estop

    def intervention(self) -> np.ndarray | None:
        fresh = self.clock() - self._intervened_at <= self.profile.staleness_timeout
        return self._intervention if fresh else None

    def events(self) -> list[str]:
        events, self._events = self._events, []
        return events

    def wait_until(self, deadline: float) -> None:
        import rclpy

        while (left := deadline - self.clock()) > 0:
            rclpy.spin_once(self.node, timeout_sec=min(left, 0.005))

    def close(self) -> None:
        self.node.destroy_node()
