"""sim_bridge: a robo_rl simulator behind a robot's ROS topics, so the whole graph runs in simulation.

Runs one env of `task` in real time (a timer at the task's dt). Every tick it applies the latest command from the
profile's command topic (the inverse of the profile's `offset + scale × action`; a `relative_to` field's step is
read back against this tick's measured fields, so a held command keeps its absolute target), steps, and publishes the
profile's topic inputs: each observation the profile reads from a topic is filled from the simulator's observation
of the same name (divided by its unit factor); the input a derived one reads carries the simulator's true state as
the robot's driver publishes it (`robo_rl.real.derive.SOURCE_WRITERS`): for `quadrotor_state` an Odometry (pose in
the z-up world, body-frame linear velocity), for `px4_state` PX4's VehicleOdometry (NED position and velocity, FRD
body → NED attitude, FRD body rates, microsecond `timestamp` and `timestamp_sample`). The profile's first input is
published last, so a policy_node triggered by it sees this tick's values on the other inputs. A JointState input
names the profile's joints in its order (the nodes read joints by name).

With the quadrotor_px4 profile the bridge stands in for PX4 SITL: it publishes fmu/out/vehicle_odometry and flies
the VehicleRatesSetpoint it receives (body rates and thrust back to the ctbr actions); it ignores the
OffboardControlMode heartbeat and VehicleCommands (nothing to arm, always "offboard") and says so: a VehicleStatus
(v1.16's fmu/out/vehicle_status_v1, 10 Hz) armed in nav_state offboard, so that policy_node takes over at once when
asked, as from a PX4 already switched to offboard (without it, policy_node would first stream the hold setpoint for
the 1 s PX4 needs before offboard, and this stand-in would fly that stream from its random initial state, for as
many steps as the machine's speed allows). The task is made with the
profile's `task_params` (quadrotor_px4: action_mode=ctbr) before the `task_params` parameter's, and the bridge
refuses to start when the task's actions are not the profile's (names, in order).

Until the first command arrives the simulator does not step (it holds its initial state and keeps publishing),
so nothing falls while policy_node is still starting. /diagnostics reports steps, episodes and crashes (and laps
with the last lap time, for tasks that count them); episodes last `episode_length` s and reset as in training
(crashes reset at once).

An arm that holds its measured pose when stopped (`safe_command: hold_measured`, e.g. arm_peg) is put back by the
operator's `reset` on `episode_event` (teleop_node's button, in the bridge's namespace): the simulator's own reset
(a new start pose), standing in for the person who lifts the arm back before pressing it, as SimLink does. The held
command is dropped with it (the held pose is gone: the next command steps from the new one); /diagnostics counts
these as `put_backs`. Other robots are put back by the simulator's own episode ends.

A task with a hole to find (`hole_pose()`, mujoco/peg_insert) also reports the true hole on /diagnostics (`hole_x`,
`hole_y`, `hole_z` in m, `hole_yaw` in rad): what a person watching the arm sees, which the policy only estimates,
so a simulated operator can judge through the topics when the policy is heading wrong
(tests/real/ros/scenarios/peg_operator.py). Diagnostics go out once a second and at once when an episode ends or
the arm is put back (a new hole).

Real time or lockstep: in real time (the default) a tick steps with whatever command arrived last, as a robot's
motors do, so a command that answers the last observation later than one tick is applied one tick late
(`late_commands` in /diagnostics counts those ticks). With `lockstep: true`, as PX4's SITL simulators do, a tick
waits (skips) until the answer to the last published observation has arrived: simulated time then slows down on
a busy machine instead of the dynamics changing, so a graph behaves the same on any machine.

A car's command reaches the simulated car as it reaches the real one: the profile's speed field (`esc: speed`,
AckermannDriveStamped `speed` or Twist `linear.x`, m/s) is the setpoint of the simulated ESC's speed loop
(`robo_rl.sim.rc_car`, `command_mode: speed`): drive = speed / scale, which the simulator multiplies by the same
scale again, with no throttle model between. The bridge refuses to start when the simulated car's drive is not
what the profile sends (another mode or scale: `robo_rl.real.policy_fit.drive_mismatches`).

A task with cameras (`robo_rl.envs.CameraEnv`) also has each camera's current frame published every tick, before
the profile's inputs (so a policy_node triggered by the first input finds this tick's frame too): a `sensor_msgs/Image`
(rgb8 or mono8, the frame's bytes as the simulator rendered them) and a `sensor_msgs/CameraInfo` (K from the camera's
`ImageSpec` intrinsics), both stamped with the tick's time, as the state, and `frame_id` the camera's name, on the
topics the `camera_image_topic` and `camera_info_topic` templates give (`{camera}` stands for the name; relative
names resolve in the bridge's namespace and remap like the profile's topics). A camera that a profile input of type
`sensor_msgs/msg/Image` feeds is published on that input's topic instead, where the robot's camera driver would
publish it; the profile's image inputs are never filled from the state vector (a CompressedImage input gets
nothing: the bridge sends raw frames on the template's topic). A task without cameras publishes exactly what it did
before. Messages: robo_rl.sim.camera_messages.

Vehicle mode (`vehicle: true`, a profile whose handover vehicle is px4 or crazyswarm2; robo_rl.sim.ros_vehicle): the
bridge stands in for the vehicle itself, from the ground, with its own rules and controller (PX4's commander with
VehicleCommand acks and VehicleStatus; the Crazyflie firmware's commander with crazyswarm2's services), hovering at
`target` (m, policy_node's target), for rehearsing the hand-over through vehicle_request; /diagnostics then reports
rule violations, periods in the air with the motors off and who is in charge. In every mode, `silence`
(std_msgs/Float64, in the bridge's namespace) stops the published inputs for that many seconds: a rehearsal's fault.

Parameters: profile, task, seed, task_params (extra `key=value` task settings, e.g. the preset's), episode_length,
lockstep, camera_image_topic (default `{camera}/image_raw`), camera_info_topic (default `{camera}/camera_info`),
vehicle (default false), target (default [0, 0, 1]).
Needs torch (robo_rl.sim).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data

from robo_rl.envs import image_specs_of, state_of
from robo_rl.real import px4
from robo_rl.real.command import command_actions, select_command
from robo_rl.real.derive import SOURCE_WRITERS
from robo_rl.real.profile import HOLD_MEASURED, IMAGE, IMAGE_TYPES, InputSpec, history_source, source_input
from robo_rl.real.ros.diagnostics import DIAGNOSTICS_TOPIC, OK, diagnostic_array
from robo_rl.real.ros.messages import FieldReader, MessageTypeError, message_class, set_fields
from robo_rl.real.ros.spin import StartupInputError, positive_seconds, profile_parameter, run
from robo_rl.sim.camera_messages import (
    DEFAULT_IMAGE_TOPIC,
    DEFAULT_INFO_TOPIC,
    camera_topics,
    fill_camera_info,
    fill_image,
)


class SimBridge(Node):
    """See the module docstring."""

    def __init__(self, name: str = "sim_bridge") -> None:
        super().__init__(name)
        for parameter, default in (("profile", ""), ("task", ""), ("seed", 0), ("episode_length", 3600.0)):
            self.declare_parameter(parameter, default)
        self.declare_parameter("task_params", [""])
        self.declare_parameter("lockstep", False)
        self.declare_parameter("command_type", "auto")
        self.declare_parameter("camera_image_topic", DEFAULT_IMAGE_TOPIC)
        self.declare_parameter("camera_info_topic", DEFAULT_INFO_TOPIC)
        self.declare_parameter("vehicle", False)
        self.declare_parameter("target", [0.0, 0.0, 1.0])
        self.lockstep = bool(self.get_parameter("lockstep").value)
        self.answered = False  # a command arrived since the last observation was published
        self.late_commands = 0
        self.profile = profile_parameter(str(self.get_parameter("profile").value))
        try:
            self.command_spec = select_command(self.profile, command_type=str(self.get_parameter("command_type").value))
        except ValueError as err:
            raise StartupInputError(f"parameter {err}") from None
        self.action = np.asarray(self.profile.safe_action, dtype=np.float32)
        self.commanded = False
        self.command_values: dict[str, float] = {}
        self.steps = self.episodes = self.crashes = self.laps = self.put_backs = 0
        self.last_lap_s = float("nan")
        self._create_entities()
        self.env = self._make_env()
        self.cameras = image_specs_of(self.env)
        self._observe(self.env.reset(int(self.get_parameter("seed").value)))
        self._create_camera_publishers()
        self.obs_index = {name: i for i, name in enumerate(self.env.obs_spec.names)}
        self._check_observations()
        self._check_actions()
        self._check_drive()
        self.paths = {spec.name: self._paths(spec) for spec, _ in self.outputs}
        self.vehicle = self._vehicle()
        if self.vehicle is None and px4.is_px4(self.command_spec.type):
            self._report_offboard()
        self.silent_until = 0.0
        from std_msgs.msg import Float64

        self.create_subscription(Float64, "silence", self.on_silence, 10)
        self.create_timer(self.env.dt, self.tick)
        self.create_timer(1.0, self.publish_diagnostics)
        self.get_logger().info(
            f"{self.task} at {1.0 / self.env.dt:.0f} Hz for profile {self.profile.name}: "
            f"publishing {', '.join(p.topic_name for p, _ in self.outputs)}; commands on "
            f"'{self.command_spec.topic}' ({self.command_spec.type})"
        )

    def _create_entities(self) -> None:
        """Publishers and subscriptions first, before the simulator (seconds to build): until a participant has
        registered its topics' types it is exposed to Fast DDS's type-lookup stall (robo_rl.real.ros.dds)."""
        try:
            self.outputs = [
                (spec, message_class(spec.type))
                for spec in self.profile.inputs
                if not spec.derive and spec.type not in IMAGE_TYPES  # frames come from the cameras, not the state
            ]
            command_type = message_class(self.command_spec.type)
        except MessageTypeError as err:
            raise StartupInputError(str(err)) from None
        self.publishers_ = {
            spec.name: self.create_publisher(kind, spec.topic_name, qos_profile_sensor_data)
            for spec, kind in self.outputs
        }
        self.stamped = {spec.name for spec, kind in self.outputs if "header" in kind.get_fields_and_field_types()}
        # A JointState carries its joints' names (the profile's order, as its position[i] fields): policy_node reads
        # joints by name and skips a message that lacks one.
        self.px4_stamped = {
            spec.name: [f for f in ("timestamp", "timestamp_sample") if f in kind.get_fields_and_field_types()]
            for spec, kind in self.outputs
            if px4.is_px4(spec.type)
        }
        self.state_writers = self._state_writers()
        self.action_index = {name: i for i, name in enumerate(self.profile.action_names)}
        self.command_reader = FieldReader("cmd", [f.field for f in self.command_spec.fields])
        self.create_subscription(command_type, self.command_spec.topic, self.on_command, 10)
        if self.profile.safe_command == HOLD_MEASURED:
            from std_msgs.msg import String

            self.create_subscription(String, "episode_event", self.on_episode_event, 10)
        self.diagnostics = self.create_publisher(_diagnostic_type(), DIAGNOSTICS_TOPIC, 10)

    def _create_camera_publishers(self) -> None:
        """An Image and a CameraInfo publisher per camera of the task (none without cameras). Created after the
        simulator, the only place that knows its cameras."""
        self.camera_publishers: dict[str, tuple[Any, Any]] = {}
        if not self.cameras:
            return
        from sensor_msgs.msg import CameraInfo, Image

        self.camera_messages = (Image, CameraInfo)
        topics = []
        for parameter in ("camera_image_topic", "camera_info_topic"):
            try:
                topics.append(camera_topics(str(self.get_parameter(parameter).value), self.cameras))
            except ValueError as err:
                raise StartupInputError(f"parameter '{parameter}': {err}") from None
        raw_inputs = {spec.camera: spec.topic_name for spec in self.profile.inputs if spec.type == IMAGE}
        topics[0] |= {name: topic for name, topic in raw_inputs.items() if name in topics[0]}
        for spec in self.cameras:
            image = self.create_publisher(Image, topics[0][spec.name], qos_profile_sensor_data)
            info = self.create_publisher(CameraInfo, topics[1][spec.name], qos_profile_sensor_data)
            self.camera_publishers[spec.name] = (image, info)
        self.get_logger().info(
            "cameras: " + ", ".join(f"{s.name} {s.width}x{s.height} on '{topics[0][s.name]}'" for s in self.cameras)
        )

    def _observe(self, obs: Any) -> None:
        """Keep env 0's state vector and, with cameras, its frames (`(H, W, C)` uint8) from an observation."""
        self.obs = state_of(obs)[0].numpy()
        self.frames = {spec.name: obs[spec.name][0].cpu().numpy() for spec in self.cameras}

    def _make_env(self) -> Any:
        from robo_rl.sim import make
        from robo_rl.sim.registry import with_fast_step

        task = str(self.get_parameter("task").value) or self.profile.task
        self.task = task
        extra = [p for p in self.get_parameter("task_params").value if p]
        length = positive_seconds("episode_length", float(self.get_parameter("episode_length").value))
        params = [*self.profile.task_params, *extra, f"episode_length={length}"]
        try:
            params = with_fast_step(task, params)  # one env in real time: the numba step where it applies
            return make(task, num_envs=1, params=params, seed=int(self.get_parameter("seed").value))
        except (KeyError, ValueError, OSError) as err:  # an unknown task, a bad or missing task_params file
            raise StartupInputError(
                f"sim_bridge: cannot make task {task!r} (parameters task, task_params): {err}"
            ) from None

    def _check_observations(self) -> None:
        missing = [
            o.name
            for o in self.profile.observations
            if history_source(o.source) is None and not self._derived(o.source) and o.name not in self.obs_index
        ]
        if missing:
            raise StartupInputError(f"task observations lack the profile's {missing}")

    def _check_actions(self) -> None:
        """StartupInputError unless the task acts with the profile's actions (names, in order): the commands read back
        into actions must mean to the simulator what they mean to the robot."""
        task_actions, profile_actions = list(self.env.action_spec.names), list(self.profile.action_names)
        if task_actions != profile_actions:
            raise StartupInputError(
                f"sim_bridge: task {self.task!r} acts with {task_actions}, the profile commands {profile_actions} "
                "(set the task's action mode in the profile's task_params or the task_params parameter)"
            )

    def _state_writers(self) -> dict[str, Callable[[Sequence[float]], dict[str, float]]]:
        """Per input that a derived input reads: the writer of its message's fields from the simulator's state."""
        writers = {}
        for spec in self.profile.inputs:
            if spec.derive:
                if spec.derive not in SOURCE_WRITERS:
                    message = f"sim_bridge cannot publish the input {spec.source!r} for derivation {spec.derive!r}"
                    raise StartupInputError(message)
                writers[spec.source] = SOURCE_WRITERS[spec.derive]
        return writers

    def _check_drive(self) -> None:
        """StartupInputError unless the simulated car takes what the profile's command sends its ESC."""
        from robo_rl.actuator import DriveActuator
        from robo_rl.real.policy_fit import drive_mismatches

        actuator = getattr(self.env, "actuator", None)
        drive = actuator if isinstance(actuator, DriveActuator) else None
        problems = drive_mismatches(drive, self.command_spec)
        if problems:
            raise StartupInputError(f"sim_bridge: task {self.task!r} does not take the profile's command: {problems}")

    def _derived(self, source: str) -> bool:
        return any(spec.derive and spec.name == source_input(source) for spec in self.profile.inputs)

    def on_command(self, message: Any) -> None:
        self.command_values = {key.removeprefix("cmd."): value for key, value in self.command_reader(message).items()}
        self.commanded = self.answered = True
        if self.vehicle is not None:
            self.vehicle.on_command(self.command_values)

    def _vehicle(self) -> Any:
        """Vehicle mode (`robo_rl.sim.ros_vehicle`): the vehicle's own side stands in, or None."""
        if not bool(self.get_parameter("vehicle").value):
            return None
        from robo_rl.sim.ros_vehicle import vehicle_bridge

        target = [float(v) for v in self.get_parameter("target").value]
        extra = [p for p in self.get_parameter("task_params").value if p]
        try:
            return vehicle_bridge(self, self.profile, target, extra, int(self.get_parameter("seed").value))
        except (ValueError, ImportError) as err:
            raise StartupInputError(f"sim_bridge: {err}") from None

    def _report_offboard(self) -> None:
        """The bare PX4 stand-in's VehicleStatus at 10 Hz: armed, in offboard (the module docstring)."""
        status_type = message_class("px4_msgs/msg/VehicleStatus")
        publisher = self.create_publisher(status_type, px4.VEHICLE_STATUS_TOPICS["1.16"], qos_profile_sensor_data)

        def publish() -> None:
            status = status_type(timestamp=px4.timestamp_us(self.get_clock().now().nanoseconds))
            status.nav_state = px4.NAVIGATION_STATE_OFFBOARD
            status.arming_state = status.ARMING_STATE_ARMED
            publisher.publish(status)

        self.create_timer(0.1, publish)

    def on_silence(self, message: Any) -> None:
        """A rehearsal's injected fault: no input published for `data` s (the vehicle flies on)."""
        self.silent_until = time.monotonic() + float(message.data)

    def on_episode_event(self, message: Any) -> None:
        if message.data == "reset":
            self.put_back()

    def put_back(self) -> None:
        """The operator's reset press on an arm that holds its pose: the simulator's own reset, the held command
        dropped (it would pull the new pose back to the old one) until the next command arrives."""
        self._observe(self.env.reset())
        self.command_values = {}
        self.action = np.asarray(self.profile.safe_action, dtype=np.float32)
        self.commanded = self.answered = False
        self.put_backs += 1
        self.get_logger().info("put back by the operator's reset")
        self.publish_diagnostics()  # at once: watchers see the new episode's hole now, not up to 1 s later

    def tick(self) -> None:
        if self.vehicle is not None:
            self._vehicle_tick()
            return
        if self.commanded:
            if not self.answered:
                self.late_commands += 1
                if self.lockstep:
                    return  # the last observation's answer is still on its way: wait for it
            self._step()
        self.answered = False
        now = self.get_clock().now()
        stamp, now_us = now.to_msg(), px4.timestamp_us(now.nanoseconds)
        self.publish_cameras(stamp)
        for spec, kind in reversed(self.outputs):
            message = set_fields(kind(), self._fields(spec))
            if spec.joints:  # a JointState names its joints: the nodes read it by name (position[i] is joints[i])
                message.name = list(spec.joints)
            if spec.name in self.stamped:
                message.header.stamp = stamp
            for field in self.px4_stamped.get(spec.name, ()):
                setattr(message, field, now_us)
            self.publishers_[spec.name].publish(message)

    def _vehicle_tick(self) -> None:
        """Vehicle mode: the vehicle's period, then its inputs (unless silenced)."""
        fields = self.vehicle.tick()
        self.steps += 1
        if time.monotonic() < self.silent_until:
            return
        now = self.get_clock().now()
        stamp, now_us = now.to_msg(), px4.timestamp_us(now.nanoseconds)
        for spec, kind in reversed(self.outputs):
            message = set_fields(kind(), fields[spec.name])
            if spec.name in self.stamped:
                message.header.stamp = stamp
            for field in self.px4_stamped.get(spec.name, ()):
                setattr(message, field, now_us)
            self.publishers_[spec.name].publish(message)

    def publish_cameras(self, stamp: Any) -> None:
        """Each camera's current frame and its CameraInfo, stamped with this tick's time (nothing without cameras)."""
        if not self.camera_publishers:
            return
        image_type, info_type = self.camera_messages
        for spec in self.cameras:
            image, info = self.camera_publishers[spec.name]
            image.publish(fill_image(image_type(), self.frames[spec.name], spec, stamp))
            info.publish(fill_camera_info(info_type(), spec, stamp))

    def _step(self) -> None:
        for name, value in command_actions(self.command_spec, self.command_values, self._measured()).items():
            self.action[self.action_index[name]] = value
        action = torch.as_tensor(self.action, dtype=torch.float32).unsqueeze(0)
        obs, _, terminated, truncated, info = self.env.step(action)
        self._observe(obs)
        self.steps += 1
        lap_time = info.get("lap_time")
        if lap_time is not None and bool(torch.isfinite(lap_time[0])):
            self.laps += 1
            self.last_lap_s = float(lap_time[0])
        if bool(terminated[0]) or bool(truncated[0]):
            self.episodes += 1
            self.crashes += int(terminated[0])
            self.get_logger().warning(f"episode ended ({'crash' if terminated[0] else 'time limit'}), reset")
            self.publish_diagnostics()

    def _measured(self) -> dict[str, float]:
        """The profile's observation sources as the simulator measures them now (what relative fields step from)."""
        return {
            obs.source: float(self.obs[self.obs_index[obs.name]]) / obs.factor
            for obs in self.profile.observations
            if history_source(obs.source) is None and obs.name in self.obs_index
        }

    def _paths(self, spec: InputSpec) -> list[tuple[str, int, float]]:
        """(message path, index in the task's observation, unit factor) of every observation `spec` carries."""
        paths = []
        for obs in self.profile.observations:
            if history_source(obs.source) is None and source_input(obs.source) == spec.name:
                path = obs.source.removeprefix(f"{spec.name}.")
                if spec.labels:
                    path = f"data[{spec.labels.index(path)}]"
                paths.append((path, self.obs_index[obs.name], obs.factor))
        return paths

    def _fields(self, spec: InputSpec) -> dict[str, float]:
        fields = {path: float(self.obs[index]) / factor for path, index, factor in self.paths[spec.name]}
        writer = self.state_writers.get(spec.name)
        if writer is not None:
            fields |= writer(self.env.state[0].numpy())
        return fields

    def publish_diagnostics(self) -> None:
        values: dict[str, object] = {"steps": self.steps, "episodes": self.episodes, "crashes": self.crashes}
        values["commanded"] = self.commanded
        values |= {"late_commands": self.late_commands, "lockstep": self.lockstep, "put_backs": self.put_backs}
        if self.laps:
            values |= {"laps": self.laps, "last_lap_s": round(self.last_lap_s, 3)}
        if self.vehicle is not None:
            values |= self.vehicle.diagnostics()
        hole_pose = getattr(self.env, "hole_pose", None)
        if callable(hole_pose):
            values |= dict(zip(("hole_x", "hole_y", "hole_z", "hole_yaw"), hole_pose()[0].tolist(), strict=True))
        self.diagnostics.publish(diagnostic_array(self, OK, "running", self.profile.name, values))


def _diagnostic_type() -> type:
    from diagnostic_msgs.msg import DiagnosticArray

    return DiagnosticArray


def main(argv: Sequence[str] | None = None) -> int:
    return run(SimBridge, argv, name="sim_bridge")


if __name__ == "__main__":
    raise SystemExit(main())
