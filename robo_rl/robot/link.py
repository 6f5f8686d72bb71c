"""The robot end of a `RobotEnv`: what it reads and sends, over ROS 2 (`RosLink`) or anything with the same methods.

`RobotLink` is the transport boundary: the latest observation fields of the profile's inputs (derived ones
included), which inputs are stale, the command to send, the operator's e-stop, takeover action and episode buttons;
a `CameraLink` also delivers each camera's newest frame. `RosLink` subscribes the profile's inputs as policy_node
does (`robo_rl.real.ros.inputs`; its image inputs when given the cameras), publishes its command, and listens to
teleop_node's `estop`, `intervention` and `episode_event` topics; rclpy is imported when it is built, so the module
imports without ROS.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from robo_rl.image_spec import ImageSpec
from robo_rl.real.command import TIME_FROM_START, select_command, stamped_now
from robo_rl.real.images import FrameDecoder
from robo_rl.real.profile import CommandSpec, RobotProfile
from robo_rl.real.watchdog import Watchdog

EPISODE_EVENTS = ("success", "failure", "reset", "discard")
Frames = dict[str, np.ndarray]
"""Camera name → one `(H, W, C)` uint8 frame at its camera's spec."""
STALL_PERIODS = 5
"""Control periods without a command after which RosLink's watchdog sends the safe command."""
TRANSITION_TOPIC = "transitions"
"""Where RosLink publishes each step RobotEnv takes (std_msgs/Float32MultiArray), in the robot's namespace."""
TRANSITION_DEPTH = 1000
"""The history depth of the transitions topic on both ends: how far the learner may fall behind the robot."""
TRANSITION_FIELDS = ("obs", "action", "reward", "next_obs", "terminated", "truncated", "intervened", "valid")
"""The parts of a transition message, in order: obs (obs_dim), the executed action in the profile's units
(action_dim), reward, next_obs (obs_dim), and four flags (0/1); the message layout names them with their sizes."""


def transition_layout(obs_dim: int, action_dim: int) -> Any:
    """The std_msgs/MultiArrayLayout of a transition message: one dimension per `TRANSITION_FIELDS` entry."""
    from std_msgs.msg import MultiArrayDimension, MultiArrayLayout

    sizes = (obs_dim, action_dim, 1, obs_dim, 1, 1, 1, 1)
    dims = [MultiArrayDimension(label=n, size=s, stride=s) for n, s in zip(TRANSITION_FIELDS, sizes, strict=True)]
    return MultiArrayLayout(dim=dims, data_offset=0)


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

    def answer(self, deadline: float) -> np.ndarray | None:
        """`intervention()`, waiting during a takeover (until the monotonic time `deadline` at most) for the
        operator's answer to the latest observation where the transport can be late with it."""
        ...

    def events(self) -> list[str]:
        """Episode buttons pressed since the last call (`EPISODE_EVENTS`), oldest first."""
        ...

    def next_input(self, earliest: float, deadline: float) -> float | None:
        """Receive until the robot's state message after the monotonic time `earliest` arrived, at `deadline` at the
        latest: its arrival time, or None (then the caller's tick stands; a link stepping on that tick itself
        receives until the tick, midway, and says None)."""
        ...

    def wait_until(self, deadline: float) -> None:
        """Receive messages until the monotonic time `deadline`."""
        ...

    def close(self) -> None: ...


class CameraLink(RobotLink, Protocol):
    """A `RobotLink` that also delivers the frames of the cameras its profile's image inputs feed."""

    def frames(self) -> Frames:
        """The newest frame of each camera received so far (none before its first); whether it is fresh enough is
        its image input's staleness (`stale_inputs`)."""
        ...


class RosLink:
    """A `RobotLink` over rclpy: one node in the robot's namespace (remap the topics like policy_node's). With
    `cameras` (the specs of the cameras the profile's image inputs feed) a `CameraLink`: it subscribes the image
    inputs as policy_node does (`_on_frame`)."""

    def __init__(
        self,
        profile: RobotProfile,
        namespace: str = "/",
        target: Sequence[float] = (0.0, 0.0, 0.0),
        command_type: str = "auto",
        clock: Callable[[], float] = time.monotonic,
        cameras: Sequence[ImageSpec] = (),
    ) -> None:
        import rclpy
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
        from rclpy.signals import SignalHandlerOptions
        from std_msgs.msg import Bool, Float32MultiArray, String

        from robo_rl.real.ros.inputs import derived_fields, image_inputs, topic_inputs
        from robo_rl.real.ros.messages import message_class

        if not rclpy.ok():
            # Without rclpy's signal handlers: Ctrl-C and SIGTERM are robo-rl train's to handle (robo_rl.api.interrupt),
            # and rclpy's would shut the context down first, after which this link can no longer send the safe command
            # (and its watchdog thread fails with an RCLError).
            rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
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
        self._frames: Frames = {}
        for image in image_inputs(self.profile, cameras) if cameras else ():
            self.watchdogs[image.spec.name] = Watchdog(profile.staleness_timeout, clock)
            callback = self._on_frame(image.spec.name, image.decode)
            self.node.create_subscription(image.message_type, image.spec.topic_name, callback, qos_profile_sensor_data)
        latched = QoSProfile(
            depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL
        )
        self._estop = False
        self._intervention: np.ndarray | None = None
        self._intervened_at = -float("inf")
        self._input_at = -float("inf")
        """When the latest input message arrived: the operator's answer to it comes after."""
        self._first_input = profile.inputs[0].name
        self._first_input_at = -float("inf")
        """When the latest message of the profile's first input (the robot's state) arrived: `next_input`."""
        self._events: list[str] = []
        self.node.create_subscription(Bool, "estop", self._on_estop, latched)
        self.node.create_subscription(Float32MultiArray, "intervention", self._on_intervention, 10)
        self.node.create_subscription(Bool, "intervening", self._on_intervening, 10)
        self.node.create_subscription(String, "episode_event", self._on_event, 10)
        # as deep as the learner's subscription (robo_rl.robot.topic_learner): a reliable writer keeps only this
        # many unacknowledged samples, and a learner busy with gradient steps on a loaded machine falls behind by
        # more than 100 (it lost 5.3 % of 986 under stress-ng)
        self.transitions = self.node.create_publisher(Float32MultiArray, TRANSITION_TOPIC, TRANSITION_DEPTH)
        self._last_send = clock()
        self.stall_stops = 0
        """Periods in which the watchdog sent the safe command because the control loop had not sent one."""
        self._safe_fields: dict[str, float] | None = None
        self.skipped_messages = 0
        """Messages the profile cannot read (a JointState without the arm's joints), skipped."""
        self._stop = threading.Event()
        self._watchdog = threading.Thread(target=self._watch, name="robot-command-watchdog", daemon=True)
        self._watchdog.start()
        self._transition_layout = transition_layout(len(profile.observations), len(profile.actions))

    def _on_input(self, name: str, decode: Callable[[Any], dict[str, float]]) -> Callable[[Any], None]:
        from robo_rl.real.ros.inputs import InputError

        def callback(message: Any) -> None:
            try:
                fields = decode(message)
            except InputError:  # e.g. another publisher's JointState on the topic: skipped, keeps nothing fresh
                self.skipped_messages += 1
                return
            self._fields.update(fields)
            self._fields.update(self._derived(self.profile, self._fields, self.target))
            self.watchdogs[name].feed()
            self._input_at = self.clock()
            if name == self._first_input:
                self._first_input_at = self._input_at

        return callback

    def _on_frame(self, name: str, decode: FrameDecoder) -> Callable[[Any], None]:
        """A frame of image input `name`, as policy_node takes it (robo_rl.real.node_core): decoded, cropped and
        resized to its camera's spec on arrival, kept as the camera's newest, and aged by its header stamp on the
        node's clock (the clock of the stamps): it feeds the input's watchdog as that much older, so a frame older
        than the staleness timeout leaves the camera stale and the step invalid. An undecodable frame is skipped
        and counted (`skipped_messages`) and keeps nothing fresh."""
        from robo_rl.real.node_core import stamp_ns
        from robo_rl.real.ros.inputs import InputError

        def callback(message: Any) -> None:
            try:
                frame = decode(message)
            except InputError:
                self.skipped_messages += 1
                return
            stamp = stamp_ns(message)
            age = 0.0 if stamp is None else (self.node.get_clock().now().nanoseconds - stamp) * 1e-9
            self._frames[decode.camera] = frame
            self.watchdogs[name].feed(age)

        return callback

    def _on_estop(self, message: Any) -> None:
        self._estop = bool(message.data)

    def _on_intervention(self, message: Any) -> None:
        action = np.asarray(message.data, dtype=np.float64)
        if action.shape == (len(self.profile.actions),):
            self._intervention, self._intervened_at = action, self.clock()

    def _on_intervening(self, message: Any) -> None:
        """teleop_node's `intervening` false: the operator let go, the takeover ends now (not a staleness timeout
        later, which would repeat its last action for up to that long)."""
        if not message.data:
            self._intervention, self._intervened_at = None, -float("inf")

    def _on_event(self, message: Any) -> None:
        if message.data in EPISODE_EVENTS:
            self._events.append(str(message.data))

    def fields(self) -> dict[str, float]:
        return dict(self._fields)

    def frames(self) -> Frames:
        return dict(self._frames)

    def stale_inputs(self) -> list[str]:
        return [name for name, watchdog in self.watchdogs.items() if watchdog.stale()]

    def safe_command(self, fields: dict[str, float]) -> None:
        """The command the watchdog sends when the control loop stalls (RobotEnv gives the profile's safe one)."""
        self._safe_fields = dict(fields)

    def _watch(self) -> None:
        """Actor-stall watchdog: when the control loop has sent nothing for `STALL_PERIODS` periods (a long
        garbage collection, a learner update in the same process, a hung callback), send the safe command every
        period until it sends again, so the robot stops instead of driving on with a stale command."""
        period = self.profile.dt
        while not self._stop.wait(period):
            if self._safe_fields is not None and self.clock() - self._last_send > STALL_PERIODS * period:
                self._publish(self._safe_fields)
                self.stall_stops += 1

    def send(self, fields: dict[str, float]) -> None:
        self._last_send = self.clock()
        self._publish(fields)

    def _publish(self, fields: dict[str, float]) -> None:
        from robo_rl.real.ros.messages import set_fields

        message = set_fields(self.command_type(), fields)
        if "header" in self.command_type.get_fields_and_field_types() and stamped_now(self.spec.type):
            message.header.stamp = self.node.get_clock().now().to_msg()
        if self.spec.joint_names:
            message.joint_names = list(self.spec.joint_names)
            if TIME_FROM_START[0] not in fields:  # RobotEnv times an arm's hold; one period otherwise
                for point in message.points:
                    point.time_from_start.nanosec = int(self.profile.dt * 1e9)
        self.publisher.publish(message)

    def estopped(self) -> bool:
        return self._estop

    def publish_transition(self, values: np.ndarray) -> None:
        """One step as RobotEnv stores it (`TRANSITION_FIELDS` layout), on `transitions` for recorders and remote
        learners."""
        from std_msgs.msg import Float32MultiArray

        message = Float32MultiArray(data=[float(v) for v in values])
        message.layout = self._transition_layout
        self.transitions.publish(message)

    def intervention(self) -> np.ndarray | None:
        fresh = self.clock() - self._intervened_at <= self.profile.staleness_timeout
        return self._intervention if fresh else None

    def answer(self, deadline: float) -> np.ndarray | None:
        """During a takeover, the operator's answer to the latest observation: receive until an intervention
        message arrived after the latest input message, or until the monotonic time `deadline`; then
        `intervention()`. Without a takeover under way, `intervention()` at once (a takeover starts when the
        operator decides, a period later at most)."""
        import rclpy

        while self.intervention() is not None and self._intervened_at < self._input_at:
            left = deadline - self.clock()
            if left <= 0:
                break
            rclpy.spin_once(self.node, timeout_sec=min(left, 0.002))
        return self.intervention()

    def next_input(self, earliest: float, deadline: float) -> float | None:
        """Receive until a message of the profile's first input (the robot's state) arrived after the monotonic time
        `earliest`, at `deadline` at the latest; its arrival time, or None when none came."""
        import rclpy

        self.wait_until(earliest)
        while self._first_input_at <= earliest:
            left = deadline - self.clock()
            if left <= 0:
                return None
            rclpy.spin_once(self.node, timeout_sec=min(left, 0.002))
        return self._first_input_at

    def events(self) -> list[str]:
        events, self._events = self._events, []
        return events

    def wait_until(self, deadline: float) -> None:
        import rclpy

        while (left := deadline - self.clock()) > 0:
            rclpy.spin_once(self.node, timeout_sec=min(left, 0.005))

    def stats(self) -> dict[str, float]:
        return {"stall_stops": self.stall_stops, "skipped_messages": self.skipped_messages}

    def close(self) -> None:
        """Stop the watchdog, send the safe command once more, and leave the graph."""
        self._stop.set()
        self._watchdog.join(1.0)
        if self._safe_fields is not None:
            self._publish(self._safe_fields)
        self._deliver_before_leaving()
        self.node.destroy_node()

    def _deliver_before_leaving(self, timeout_s: float = 2.0) -> None:
        """Wait (bounded) until the reliable subscribers acknowledged the last safe command and the last transitions:
        a node that leaves the graph right after publishing drops what is still unacknowledged (a recorder then misses
        the final steps; the robot may miss the safe command)."""
        from rclpy.duration import Duration

        for publisher in (self.publisher, self.transitions):
            publisher.wait_for_all_acked(Duration(seconds=timeout_s))
