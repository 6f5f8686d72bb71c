"""policy_node: an exported policy.onnx driving a robot through its profile, as a ROS 2 lifecycle node.

Lifecycle: `configure` loads the robot profile and the policy and checks one against the other (a mismatch fails
the transition with the list of differences, logged and in /diagnostics); `activate` starts control; `deactivate`
sends the safe command once and stops; the e-stop latch is cleared only by deactivate → activate.

Topics (relative names, remap them onto the robot's driver):
  subscribes  the profile's inputs (e.g. `odom`, nav_msgs/Odometry), best-effort sensor QoS;
              `estop` (std_msgs/Bool; true latches the safe command);
              `go_home` (std_msgs/Bool, in every lifecycle state; profiles with `safe_command: hold_measured`, the
              arm: true moves to the home pose, rate limited, instead of the policy until deactivation (asked while
              inactive, from the next activation); false hands control back to the policy);
              `intervention` (std_msgs/Float32MultiArray: the operator's action in policy units, from teleop_node);
              `vehicle_request` (std_msgs/String; profiles with a `handover:` section: "policy" hands control to
              the policy, ramped in from the vehicle's hold; "vehicle" hands it back to the vehicle's controller;
              a vehicle's own words, e.g. crazyswarm2's "takeoff", "land"; a refusal goes to /diagnostics)
  publishes   the profile's command topic and type (e.g. `cmd_motors`, std_msgs/Float32MultiArray);
              `/diagnostics` (diagnostic_msgs/DiagnosticArray) every `diagnostics_period` s and on each new fault;
              `operator_log` (std_msgs/String, JSON): one record per operator command acted on (an e-stop, an
              accepted intervention, go_home or vehicle request) with its publisher: node, enclave and GID.

Who sent it: estop, intervention, go_home and vehicle_request are taken with each message's publisher GID
(real/ros/senders.py: before each observation and every 10 ms), named by the ROS graph (node and enclave); the log
lines name the sender, /diagnostics gives the last sender per topic (`from.TOPIC`) and every sender with its count
(`senders.TOPIC`), and `operator_log` records each one (the recorder records it). In the secure mode
(real/security) the enclave is the one DDS-Security authenticated; `estop false` is never acted on, from anyone.

Parameters: policy, profile, target (quadrotor hover point, m), trigger ("observation": one command per message of
the profile's first input, the lowest latency; "timer": a fixed-rate loop on the latest observation),
deadline (s from an input's header stamp to its command; 0: the profile's dt), max_missed_deadlines (consecutive
late commands that latch the e-stop), autostart (configure + activate at start; a failed configuration then ends
the process with exit code 2), diagnostics_period, threads (onnxruntime's intra-op threads, capped at the CPUs the
process may use; 0: automatic, 1 thread; also `--threads N` on the command line), px4_offboard and px4_arm (PX4
profiles only, default false: after 1 s of setpoints, ask PX4 to switch to offboard / to arm; nothing else ever
arms a vehicle or changes its mode), command_type (one of the profile's command types, e.g.
geometry_msgs/msg/Twist for the car's fallback; default: the first whose package is installed). An arm's
JointTrajectory gets the profile's joint_names. For a chunked policy (H actions per evaluation, stamped t_obs +
i * dt): chunk_execution ("ensemble", the default, temporal ensembling: a chunk from every observation, the command
the weighted mean of the chunks' predictions for now; or "receding": chunk_execute actions of a chunk, 0: all H,
then the newest observation's), ensemble_decay (m of the weights exp(-m i), i = 0 the oldest; ACT's 0.01). When
every queued action is in the past, the safe command goes out ("action chunk spent").

Cameras (a camera policy, artifact schema 4): each camera of the policy is fed by one image input of the profile
(sensor_msgs/Image: rgb8, bgr8, rgba8, bgra8, mono8; or CompressedImage: JPEG, PNG), best-effort sensor QoS. Each
frame is decoded, cropped and resized to the camera's size on arrival (real/images.py) and kept; the commands go
out at the control rate (the first, state input's messages or the timer), each with the newest frame of every
camera. A camera silent for the staleness timeout gives the safe command, naming its input, and so does one whose
frames arrive older than that by their header stamps (a frame's age counts from its stamp); a frame that cannot be
read (unknown encoding, grey for a colour camera) is skipped and counted. /diagnostics reports every input's age
(`input_age_ms.NAME`) and the stale ones (`stale_inputs`).

Memory (a policy with memory, artifact schema 5: inputs obs and h_in, outputs action and h_out): the node carries
the state from one of the policy's commands to the next and resets it to the artifact's reset_value where
`robo_rl.memory_spec.RESET_RULE` says: at activation, and at the first policy command after any safe command (a
stale, missing or non-finite input, the e-stop, go_home) or the operator's action (real/controller.py).

Outputs: what goes out for each decision is the profile's command type's adapter (real/ros/outputs.py): the
command message with its stamp and joint names, and for PX4 (a px4_msgs command type) the offboard protocol around
it: microsecond timestamps, the OffboardControlMode heartbeat, the fault hold then silence, VehicleCommand requests
only when px4_offboard / px4_arm ask (px4_target_system, px4_target_component, acks and resends), VehicleStatus on
px4_version's topic (`px4_armed`, `px4_nav_state` in /diagnostics), ActuatorMotors in PX4's motor order.

Safety: whatever goes wrong (any input stale or missing for longer than the profile's staleness_timeout, NaN/inf in
an observation or the policy's action, e-stop), the profile's safe command is sent instead, within one control
period, and /diagnostics says why (naming the silent inputs when only some are). With `safe_command: hold_measured`
(the arm) the safe command holds the last complete measured joint pose, nothing goes out before the first one, and
the JointTrajectory point's time_from_start keeps every joint within its rate limit (real/safety.py). A message the
profile cannot read (a JointState lacking the profile's joints, e.g. another publisher's) is skipped and counted
(`skipped_messages`); it does not keep its input fresh.

Simulated time: with ROS's `use_sim_time` parameter true, the node's clock is /clock (deadlines, the watchdog timer,
diagnostics) and so are the staleness timeout and the operator's freshness (`trigger: observation` only): a stepped
simulation faster than real time (bench/soak.py) sees the timeouts in simulated seconds.

Timing: callbacks run in rclpy's EventsExecutor where this rclpy has it (real/ros/executor.py), in arrival order;
the objects made up to activation are frozen out of the garbage collector's reach.

Structure: the control logic (input handling, the watchdog, deadlines and the e-stop latch, the operator's takeover,
fault → status, the safe command on stop, the diagnostics values) is `PolicyNodeCore` in real/node_core.py,
tested without ROS. This node holds the parameters, the lifecycle, the ROS entities, message construction,
logging and the timer loop's thread.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, cast

from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn

from robo_rl.real.controller import PolicyController
from robo_rl.real.handover import VehicleLink
from robo_rl.real.loop import ControlLoop
from robo_rl.real.node_core import NodeCounters, NodeSettings, PolicyNodeCore
from robo_rl.real.profile import ProfileError, RobotProfile, load_profile
from robo_rl.real.ros import parameters
from robo_rl.real.ros.diagnostics import DIAGNOSTICS_TOPIC, ERROR, OK, WARN, diagnostic_array
from robo_rl.real.ros.inputs import ImageInput, TopicInput, image_inputs, topic_inputs
from robo_rl.real.ros.messages import MessageTypeError
from robo_rl.real.ros.outputs import Output, make_output
from robo_rl.real.ros.outputs import declare_parameters as declare_output_parameters
from robo_rl.real.ros.senders import POLL_PERIOD_S, OperatorTopic, Sender, SenderDirectory
from robo_rl.real.ros.spin import StartupInputError, positive_seconds, run
from robo_rl.real.runtime import PolicyFileError, PolicyRuntime, ProfileMismatchError

OPERATOR_LOG_TOPIC = "operator_log"
"""Every operator command the node acted on, one std_msgs/String (JSON: topic, value, node, enclave, gid) each."""


@dataclass(frozen=True)
class PolicyNodeParameters:
    """policy_node's own parameters (the control ones are `NodeSettings`, the outputs' in real/ros/outputs.py)."""

    policy: str = "policy.onnx"
    profile: str = ""
    autostart: bool = False
    diagnostics_period: float = 1.0
    threads: int = 0
    command_type: str = "auto"


class PolicyNode(LifecycleNode):
    """See the module docstring."""

    def __init__(self, name: str = "policy_node", threads: int = 0) -> None:
        super().__init__(name)
        self._declare_parameters(threads)
        from diagnostic_msgs.msg import DiagnosticArray

        self.profile: RobotProfile | None = None
        self.core: PolicyNodeCore | None = None
        self.counters = NodeCounters()
        self.output: Output | None = None
        self.subscriptions_: list[Any] = []
        self.watchdog_timer: Any = None
        self.loop: ControlLoop | None = None
        self.loop_thread: threading.Thread | None = None
        self.loop_stop = threading.Event()
        self.status: tuple[int, str] = (WARN, "unconfigured")
        from std_msgs.msg import String

        self.diagnostics = self.create_publisher(DiagnosticArray, DIAGNOSTICS_TOPIC, 10)
        self.operator_log = self.create_publisher(String, OPERATOR_LOG_TOPIC, 100)
        self.senders = SenderDirectory(self)
        self.operator_topics: list[OperatorTopic] = []
        self.accepted_from: dict[str, Sender] = {}
        self.accepted_counts: dict[tuple[str, str], int] = {}
        self._subscribe_go_home()
        self.create_timer(POLL_PERIOD_S, self.poll_operator)
        own = parameters.read(self, PolicyNodeParameters)
        period = positive_seconds("diagnostics_period", own.diagnostics_period)
        self.create_timer(period, self.publish_diagnostics)
        self.configure_error = ""
        if own.autostart:
            self._autostart()

    def _autostart(self) -> None:
        """configure + activate; a configuration that fails (bad file or parameter) stops the process: exit 2."""
        self.trigger_configure()
        if self.core is None:
            raise StartupInputError(self.configure_error)
        self.trigger_activate()

    def _declare_parameters(self, threads: int) -> None:
        parameters.declare(self, PolicyNodeParameters, {"threads": threads})
        parameters.declare(self, NodeSettings)
        declare_output_parameters(self)

    # ------------------------------------------------------------------------------------------------ lifecycle

    def on_configure(self, state: Any) -> Any:
        try:
            self._configure()
        except (ProfileError, PolicyFileError, ProfileMismatchError, MessageTypeError, ValueError) as err:
            self.configure_error = f"configure failed: {err}"
            if not parameters.read(self, PolicyNodeParameters).autostart:  # else run() prints it as the one error
                self.get_logger().error(self.configure_error)
            self._set_status(ERROR, f"configure failed: {err}")
            return TransitionCallbackReturn.FAILURE
        self._set_status(WARN, "inactive")
        return TransitionCallbackReturn.SUCCESS

    def _configure(self) -> None:
        own = parameters.read(self, PolicyNodeParameters)
        if not own.profile:
            raise ValueError("parameter 'profile' is empty (a bundled profile name or a profile YAML path)")
        settings = parameters.read(self, NodeSettings)
        profile = load_profile(own.profile)
        runtime = PolicyRuntime(own.policy, profile, own.threads)
        inputs = topic_inputs(profile)
        cameras = image_inputs(profile, runtime.cameras)
        clock = self._control_clock()
        controller = PolicyController(
            runtime,
            profile,
            clock=clock,
            command_type=own.command_type,
            chunk_execution=settings.chunks(runtime.action_chunk),
        )
        self.output = make_output(self, controller.command_spec, profile, self._set_status)
        self.profile = profile
        self.core = PolicyNodeCore(
            controller,
            settings,
            {item.spec.name: item.decode for item in inputs},
            self._publish,
            self._fault_status,
            now_monotonic=clock,
            now_ros_ns=lambda: self.get_clock().now().nanoseconds,
            counters=self.counters,
            frame_decoders={item.spec.name: item.decode for item in cameras},
            vehicle=cast(VehicleLink, self.output) if hasattr(self.output, "on_step") else None,  # the vehicle link
        )
        self._subscribe([*inputs, *cameras])
        info = runtime.info
        chunk = f" × {runtime.action_chunk} steps ({settings.chunk_execution})" if runtime.action_chunk > 1 else ""
        memory = runtime.memory
        chunk += f", memory {memory.kind} of {memory.size}" if memory is not None else ""
        self.get_logger().info(
            f"configured: policy {runtime.path.name} (task {info.task}, dt {info.dt} s, {runtime.obs_dim} obs, "
            f"{runtime.action_dim} actions{chunk}, onnxruntime {runtime.threads} thread(s)) on profile {profile.name}; "
            f"command {controller.command_spec.type} on '{controller.command_spec.topic}', trigger {settings.trigger}"
        )

    def _control_clock(self) -> Callable[[], float]:
        """The clock (s) of staleness and the operator's freshness: the monotonic clock, or with ROS's
        `use_sim_time` the simulated time on /clock (a stepped simulation: the timeouts are in simulated seconds)."""
        if not self.get_parameter("use_sim_time").value:
            return time.monotonic
        return lambda: self.get_clock().now().nanoseconds * 1e-9

    def _subscribe(self, inputs: Sequence[TopicInput | ImageInput]) -> None:
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
        from std_msgs.msg import Bool, Float32MultiArray, String

        self._drop_operator_topics()  # all but go_home, which every lifecycle state keeps
        for item in inputs:
            callback = partial(self.on_input, item.spec.name)
            self.subscriptions_.append(
                self.create_subscription(item.message_type, item.spec.topic_name, callback, qos_profile_sensor_data)
            )
        latched = QoSProfile(
            depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL
        )
        self.operator_topics += [
            OperatorTopic(self, Bool, "estop", latched, self.on_estop),
            OperatorTopic(self, Float32MultiArray, "intervention", QoSProfile(depth=10), self.on_intervention),
            OperatorTopic(self, String, "vehicle_request", QoSProfile(depth=10), self.on_vehicle_request),
        ]

    def on_activate(self, state: Any) -> Any:
        assert self.core is not None and self.profile is not None
        self.core.activate()
        if self.output is not None:
            self.output.start()
        if self.core.settings.trigger == "timer":
            self._start_loop(self.core, self.profile.dt)
        else:
            self.watchdog_timer = self.create_timer(self.profile.dt, self.core.on_watchdog)
        # Objects made so far (policy, profile, ROS entities) are never garbage: keep the collector off them, so
        # that its pauses stay short while the loop runs.
        gc.collect()
        gc.freeze()
        self._set_status(OK, "active")
        self.get_logger().info(f"active: control at {1.0 / self.profile.dt:.0f} Hz")
        return super().on_activate(state)

    def on_deactivate(self, state: Any) -> Any:
        self._stop_control("deactivated")
        self._set_status(WARN, "inactive")
        return super().on_deactivate(state)

    def on_cleanup(self, state: Any) -> Any:
        self._release()
        self._set_status(WARN, "unconfigured")
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state: Any) -> Any:
        self._stop_control("shutdown")
        self._release()
        return TransitionCallbackReturn.SUCCESS

    def stop(self) -> None:
        """Process exit (SIGINT/SIGTERM): the safe command goes out once more while the publisher still works."""
        self._stop_control("shutdown")

    def _stop_control(self, reason: str) -> None:
        if self.core is not None and self.core.stop(reason, self._halt):
            self.get_logger().info(f"{reason}: safe command sent, control stopped")

    def _halt(self) -> None:
        """Stop the watchdog timer, the output's timers (PX4's heartbeat) and the control loop's thread."""
        if self.output is not None:
            self.output.halt()
        if self.watchdog_timer is not None:
            self.destroy_timer(self.watchdog_timer)
            self.watchdog_timer = None
        if self.loop_thread is not None:
            self.loop_stop.set()
            self.loop_thread.join()
            self.loop_thread = None

    def _release(self) -> None:
        for subscription in self.subscriptions_:
            self.destroy_subscription(subscription)
        self.subscriptions_ = []
        self._drop_operator_topics()
        if self.output is not None:
            self.output.release()
            self.output = None
        self.core = None

    def _drop_operator_topics(self) -> None:
        for topic in self.operator_topics:
            topic.destroy()
        self.operator_topics = []

    def _start_loop(self, core: PolicyNodeCore, period: float) -> None:
        self.loop_stop.clear()
        loop = self.loop = ControlLoop(period, core.tick)
        self.loop_thread = threading.Thread(target=lambda: loop.run(should_stop=self.loop_stop.is_set), daemon=True)
        self.loop_thread.start()

    # ------------------------------------------------------------------------------------------ ROS ↔ the core

    def on_input(self, source: str, message: Any) -> None:
        self.poll_operator()  # an e-stop or takeover that arrived before this observation applies to its command
        core = self.core
        if core is not None:
            core.on_input(source, message)

    def on_estop(self, message: Any, sender: Sender) -> None:
        if message.data and self.core is not None:
            self.core.estop()
            self._accepted("estop", sender, "true")
            self.get_logger().warning(f"e-stop latched by {sender.describe()}: deactivate and activate to resume")
            self._set_status(ERROR, "e-stop latched")

    def _subscribe_go_home(self) -> None:
        """`go_home` in every lifecycle state (a profile holding its measured pose): true, the rate-limited move
        home replaces the policy until the next deactivation (asked while inactive: from the next activation);
        false, the policy takes over again, rate limited from the measured pose."""
        from rclpy.qos import QoSProfile
        from std_msgs.msg import Bool

        self.go_home_topic = OperatorTopic(self, Bool, "go_home", QoSProfile(depth=10), self.on_go_home)

    def on_go_home(self, message: Any, sender: Sender) -> None:
        core = self.core
        if core is None:
            self.get_logger().warning(f"go_home from {sender.describe()} ignored: the node is not configured")
            return
        if not message.data:
            core.resume_policy()
            self._accepted("go_home", sender, "false")
            self.get_logger().info(f"go_home false from {sender.describe()}: the policy commands again")
            return
        try:
            core.go_home()
        except ValueError as err:
            self.get_logger().error(f"go_home from {sender.describe()} ignored: {err}")
            return
        self._accepted("go_home", sender, "true")
        when = "now" if core.active else "from the next activation"
        self.get_logger().warning(
            f"go_home from {sender.describe()}: moving to the home pose {when}, rate limited, until deactivated"
        )

    def on_vehicle_request(self, message: Any, sender: Sender) -> None:
        """An operator's hand-over request (PolicyNodeCore.request): logged; a refusal also in /diagnostics."""
        if self.core is None:
            self.get_logger().warning(f"request {message.data!r} from {sender.describe()} ignored: not configured")
            return
        why = self.core.request(str(message.data))
        if why:
            self.get_logger().warning(f"request {message.data!r} from {sender.describe()} refused: {why}")
        else:
            self._accepted("vehicle_request", sender, str(message.data))
            self.get_logger().info(f"request {message.data!r} from {sender.describe()} accepted")

    def on_intervention(self, message: Any, sender: Sender) -> None:
        if self.core is None:
            return
        try:
            self.core.intervene(message.data)
        except ValueError as err:
            self.get_logger().error(f"intervention from {sender.describe()} ignored: {err}", throttle_duration_sec=1.0)
            return
        self._accepted("intervention", sender, "")

    def poll_operator(self) -> None:
        """Take what the operator's topics hold, each with its sender (real/ros/senders.py)."""
        for topic in (self.go_home_topic, *self.operator_topics):
            topic.take(self.senders)

    def _accepted(self, topic: str, sender: Sender, value: str) -> None:
        """An operator command the node acts on: counted per sender for /diagnostics and logged on operator_log."""
        from std_msgs.msg import String

        self.accepted_from[topic] = sender
        key = (topic, sender.describe())
        self.accepted_counts[key] = self.accepted_counts.get(key, 0) + 1
        record = {"topic": topic, "value": value, "node": sender.node, "enclave": sender.enclave, "gid": sender.gid}
        self.operator_log.publish(String(data=json.dumps(record)))

    def _publish(self, fields: dict[str, float], fault: str) -> None:
        if self.output is not None:
            self.output.send(fields, fault)

    def _fault_status(self, level: int, message: str) -> None:
        # rclpy refuses two severities from one call site, hence two calls.
        if level == ERROR:
            self.get_logger().error(message, throttle_duration_sec=1.0)
        elif level == WARN:
            self.get_logger().warning(message, throttle_duration_sec=1.0)
        self._set_status(level, message)

    # ---------------------------------------------------------------------------------------------- diagnostics

    def _set_status(self, level: int, message: str) -> None:
        changed = self.status != (level, message)
        self.status = (level, message)
        if changed:
            self.publish_diagnostics()

    def publish_diagnostics(self) -> None:
        level, message = self.status
        hardware = self.profile.name if self.profile else ""
        loop_missed = self.loop.missed_deadlines if self.loop else 0
        core = self.core
        values = core.diagnostics(loop_missed) if core else self.counters.values(False, loop_missed)
        if self.output is not None:
            values |= self.output.diagnostics()
        values |= self._sender_values()
        self.diagnostics.publish(diagnostic_array(self, level, message, hardware, values))

    def _sender_values(self) -> dict[str, object]:
        """`from.TOPIC`: the last accepted command's sender; `senders.TOPIC`: every sender with its count."""
        values: dict[str, object] = {f"from.{topic}": sender.describe() for topic, sender in self.accepted_from.items()}
        for topic in self.accepted_from:
            counts = [f"{who}: {n}" for (name, who), n in self.accepted_counts.items() if name == topic]
            values[f"senders.{topic}"] = "; ".join(counts)
        return values


def main(argv: Sequence[str] | None = None) -> int:
    threads = _threads_option(argv)
    return run(lambda: PolicyNode(threads=threads), argv, name="policy_node")


def _threads_option(argv: Sequence[str] | None) -> int:
    """`--threads N` among the arguments outside `--ros-args ... [--]` (the `threads` parameter's default; 0 without).
    The ROS arguments are skipped, not parsed: bad ones are rclpy.init's to report (one line, in spin.run)."""
    parser = argparse.ArgumentParser(prog="policy_node", add_help=False)
    parser.add_argument("--threads", type=int, default=0)
    plain, in_ros_args = [], False
    for arg in list(sys.argv if argv is None else argv)[1:]:
        if arg == "--ros-args":
            in_ros_args = True
        elif in_ros_args and arg == "--":
            in_ros_args = False
        elif not in_ros_args:
            plain.append(arg)
    known, _ = parser.parse_known_args(plain)
    return known.threads


if __name__ == "__main__":
    raise SystemExit(main())
