"""teleop_node's SpaceMouse (`device: spacenav`): spacenav's Joy and the arm's joint_states to end-effector actions.

Subscribes `spacenav/joy` (sensor_msgs/Joy, as ROS 2's spacenav driver publishes it: robo_rl.real.spacemouse) and
the profile's JointState input(s) by joint name (robo_rl.real.ros.inputs.JointStateReader). Every control period
(the profile's dt) while the dead-man button is held in a fresh Joy, the puck's translation becomes a tip
displacement, turned into the profile's actions from the latest measured joint angles
(robo_rl.real.spacemouse.EndEffectorTeleop), and teleop_node publishes it. No measured pose yet: nothing is
published, as with the button released. The buttons' e-stop and episode presses are handled per message by the
node, as the joystick's.

Parameters (besides the node's buttons, `spacenav.NAME_button`): `spacenav.speed` (m/s at full deflection, 0.05),
`spacenav.deadband` (0.1 of full deflection), `spacenav.timeout` (s a Joy stays fresh; the profile's staleness
timeout), `spacenav.joints` (the profile's joints in the kinematics' order yaw, shoulder, elbow, wrist; the
JointTrajectory's joint_names by default) and `spacenav.arm_geometry` ([shoulder_height, upper_arm, forearm,
wrist_to_tip] m; robo_rl's simulated arm by default).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import astuple
from typing import Any

import numpy as np
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import Joy

from robo_rl.real.arm_kinematics import ArmGeometry
from robo_rl.real.fault import InputError
from robo_rl.real.profile import JOINT_TRAJECTORY, RobotProfile
from robo_rl.real.ros.inputs import JointStateReader
from robo_rl.real.ros.messages import message_class
from robo_rl.real.ros.spin import StartupInputError
from robo_rl.real.spacemouse import (
    SPACENAV_JOY_TOPIC,
    DeadMan,
    EndEffectorTeleop,
    SpaceMouseSettings,
    arm_actions,
)

WARN_EVERY_S = 5.0
"""At most one warning this often for a held button without a measured pose, or a JointState lacking joints."""


class SpacenavTeleop:
    """The SpaceMouse path of teleop_node (see the module docstring). `on_buttons(buttons)` gets every Joy's buttons;
    `takeover(action)` is called once per control period with the operator's action, or None when it has none."""

    def __init__(
        self,
        node: Node,
        profile: RobotProfile,
        takeover_button: int,
        on_buttons: Callable[[list[int]], None],
        takeover: Callable[[np.ndarray | None], None],
    ) -> None:
        self.node, self.on_buttons, self.takeover = node, on_buttons, takeover
        self.teleop = _teleop(node, profile)
        timeout = float(node.declare_parameter("spacenav.timeout", profile.staleness_timeout).value)
        self.dead_man = DeadMan(takeover_button, timeout)
        self.fields: dict[str, float] = {}
        self.warned = -np.inf
        sources = {source.split(".", 1)[0] for source in self.teleop.arm.joint_sources}
        for spec in profile.inputs:
            if spec.name in sources:
                reader = JointStateReader(spec.name, spec.joints, [f"position[{j}]" for j in range(len(spec.joints))])
                node.create_subscription(
                    message_class(spec.type),
                    spec.topic_name,
                    lambda m, r=reader: self.on_joints(r, m),
                    qos_profile_sensor_data,
                )
        node.create_subscription(Joy, SPACENAV_JOY_TOPIC, self.on_joy, 10)
        node.create_timer(profile.dt, self.on_period)

    def on_joy(self, message: Any) -> None:
        buttons = list(message.buttons)
        self.dead_man.receive(list(message.axes), buttons, time.monotonic())
        self.on_buttons(buttons)

    def on_joints(self, reader: JointStateReader, message: Any) -> None:
        try:
            self.fields.update(reader(message))
        except InputError as err:
            self._warn(f"joint_states skipped: {err}")

    def on_period(self) -> None:
        action = None
        if self.dead_man.held(time.monotonic()):
            action = self.teleop.action(self.fields, self.dead_man.axes)
            if action is None:
                self._warn("dead-man button held, but no measured joint angles yet: nothing sent")
        self.takeover(action)

    def _warn(self, text: str) -> None:
        now = time.monotonic()
        if now - self.warned >= WARN_EVERY_S:
            self.node.get_logger().warning(text)
            self.warned = now


def _teleop(node: Node, profile: RobotProfile) -> EndEffectorTeleop:
    """The EndEffectorTeleop the `spacenav.*` parameters describe; StartupInputError naming what does not fit."""
    settings = SpaceMouseSettings()
    trajectory = [c for c in profile.commands if c.type == JOINT_TRAJECTORY]
    joints = list(trajectory[0].joint_names) if trajectory else ["yaw", "shoulder", "elbow", "wrist"]
    values = {
        "speed": node.declare_parameter("spacenav.speed", settings.speed).value,
        "deadband": node.declare_parameter("spacenav.deadband", settings.deadband).value,
        "joints": node.declare_parameter("spacenav.joints", joints).value,
        "arm_geometry": node.declare_parameter("spacenav.arm_geometry", list(astuple(ArmGeometry()))).value,
    }
    try:
        settings = SpaceMouseSettings(speed=float(values["speed"]), deadband=float(values["deadband"]))
    except ValueError as err:
        raise StartupInputError(f"parameter spacenav.{err}") from None
    lengths = [float(v) for v in values["arm_geometry"]]
    try:
        if len(lengths) != 4:
            raise ValueError(f"4 lengths in m, got {lengths}")
        geometry = ArmGeometry(*lengths)
    except ValueError as err:
        raise StartupInputError(f"parameter spacenav.arm_geometry: {err}") from None
    try:
        arm = arm_actions(profile, [str(j) for j in values["joints"]])
    except ValueError as err:  # ProfileError is one
        raise StartupInputError(f"device spacenav (parameters profile, spacenav.joints): {err}") from None
    return EndEffectorTeleop(arm, profile.dt, geometry, settings)
