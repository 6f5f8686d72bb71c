"""teleop_node: a joystick (sensor_msgs/Joy) or a SpaceMouse as e-stop and dead-man takeover for policy_node.

With `device: joy` (the default) it subscribes `joy`. Publishes `estop` (std_msgs/Bool, reliable +
transient-local, so a policy_node that starts later still sees it) true on a press of `estop_button`; while
`takeover_button` is held (the dead-man switch), publishes `intervention` (std_msgs/Float32MultiArray, the
operator's action in the policy's units, one per Joy message) and `intervening` (std_msgs/Bool). Releasing the
button hands control back: policy_node uses the operator's action only while it is fresh (the profile's staleness
timeout). The human-in-the-loop training reads the same topics.
Episode buttons (`success_button` 2, `reset_button` 3, `failure_button` and `discard_button` none by default) publish
their name once per press on `episode_event` (std_msgs/String), which learning on the robot reads
(robo_rl.robot.RobotEnv: success/failure end the episode, reset ends it, discard ends it unstored).

Action i = clip(axis_offset[i] + axis_scale[i] × axes[axis_map[i]], low_i, high_i), with the bounds from the robot
profile; the defaults map axis i to action i with scale 1 and offset 0.

With `device: spacenav` it reads a 3Dconnexion SpaceMouse through ROS 2's spacenav driver (`spacenav/joy`) and drives
an arm's end effector: the puck's translation moves the tool tip, turned into the profile's joint actions by the
arm's kinematics from the measured joint_states, one action per control period while the dead-man button is held
(robo_rl.real.ros.spacenav_teleop). Its buttons are the `spacenav.NAME_button` parameters: the left button (0) is
the dead-man, the right one (1) success, no e-stop (the SpaceMouse has two buttons: keep a separate e-stop).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Joy
from std_msgs.msg import Bool, Float32MultiArray, String

from robo_rl.devices.joystick import AxisMapping
from robo_rl.real.ros.spacenav_teleop import SpacenavTeleop
from robo_rl.real.ros.spin import StartupInputError, profile_parameter, run
from robo_rl.real.spacemouse import LEFT_BUTTON, RIGHT_BUTTON

EVENT_BUTTONS = {"success": 2, "failure": -1, "reset": 3, "discard": -1}
"""Episode buttons (parameter `NAME_button`, default index; -1: none) and what they publish on `episode_event`."""
DEVICE_BUTTONS = {
    "joy": {"estop": 0, "takeover": 1, **EVENT_BUTTONS},
    "spacenav": {
        "estop": -1,
        "takeover": LEFT_BUTTON,
        "success": RIGHT_BUTTON,
        "failure": -1,
        "reset": -1,
        "discard": -1,
    },
}
"""Per device (parameter `device`): its buttons' default indices, parameters `NAME_button` for the joystick and
`spacenav.NAME_button` for the SpaceMouse (so one parameter file serves both)."""


class TeleopNode(Node):
    """See the module docstring."""

    def __init__(self, name: str = "teleop_node") -> None:
        super().__init__(name)
        self.declare_parameter("profile", "")
        self.device = str(self.declare_parameter("device", "joy").value)
        if self.device not in DEVICE_BUTTONS:
            raise StartupInputError(f"parameter 'device': one of {list(DEVICE_BUTTONS)}, got {self.device!r}")
        buttons = _buttons(self)[self.device]
        self.declare_parameter("axis_map", [-1])
        self.declare_parameter("axis_scale", [1.0])
        self.declare_parameter("axis_offset", [0.0])
        self.profile = profile_parameter(str(self.get_parameter("profile").value))
        self.low = np.array([a.low for a in self.profile.actions])
        self.high = np.array([a.high for a in self.profile.actions])
        self.estop_button = buttons["estop"]
        self.takeover_button = buttons["takeover"]
        latched = QoSProfile(
            depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL
        )
        self.estop = self.create_publisher(Bool, "estop", latched)
        self.intervention = self.create_publisher(Float32MultiArray, "intervention", 10)
        self.intervening = self.create_publisher(Bool, "intervening", 10)
        self.episode_event = self.create_publisher(String, "episode_event", 10)
        self.event_buttons = {event: buttons[event] for event in EVENT_BUTTONS}
        self.held_events: set[str] = set()
        self.estop_pressed = False
        self.was_intervening = False
        if self.device == "joy":
            self.mapping = _mapping(self, len(self.profile.actions))
            self.create_subscription(Joy, "joy", self.on_joy, 10)
        else:
            self.spacenav = SpacenavTeleop(self, self.profile, self.takeover_button, self.on_buttons, self.takeover)

    def on_joy(self, message: Any) -> None:
        buttons = list(message.buttons)
        self._estop_button(buttons)
        held = _button(buttons, self.takeover_button)
        self.takeover(self.action(list(message.axes)) if held else None)
        self._episode_buttons(buttons)

    def on_buttons(self, buttons: Sequence[int]) -> None:
        """The e-stop and episode buttons of a device whose takeover runs apart (the SpaceMouse's, per period)."""
        self._estop_button(buttons)
        self._episode_buttons(buttons)

    def takeover(self, action: np.ndarray | None) -> None:
        """Publish the operator's `action` while the dead-man button is held (not None), `intervening` with it, and
        `intervening` false once when it is released."""
        held = action is not None
        if action is not None:
            self.intervention.publish(Float32MultiArray(data=action.tolist()))
        if held or self.was_intervening:
            self.intervening.publish(Bool(data=held))
        self.was_intervening = held

    def _estop_button(self, buttons: Sequence[int]) -> None:
        pressed = _button(buttons, self.estop_button)
        if pressed and not self.estop_pressed:
            self.estop.publish(Bool(data=True))
            self.get_logger().warning("e-stop pressed")
        self.estop_pressed = pressed

    def _episode_buttons(self, buttons: Sequence[int]) -> None:
        """One `episode_event` per press (success, failure, reset, discard): for learning on the robot."""
        for event, index in self.event_buttons.items():
            pressed = _button(buttons, index)
            if pressed and event not in self.held_events:
                self.episode_event.publish(String(data=event))
                self.get_logger().info(f"episode: {event}")
            self.held_events = (self.held_events | {event}) if pressed else (self.held_events - {event})

    def action(self, axes: Sequence[float]) -> np.ndarray:
        """The operator's action `(action_dim,)` from the joystick axes (absent axes read 0)."""
        return self.mapping.action(axes, self.low, self.high)


def _buttons(node: Node) -> dict[str, dict[str, int]]:
    """Every device's button parameters (all declared, so a parameter file may set either), by device and name."""
    found: dict[str, dict[str, int]] = {}
    for device, defaults in DEVICE_BUTTONS.items():
        prefix = "" if device == "joy" else f"{device}."
        found[device] = {
            name: int(node.declare_parameter(f"{prefix}{name}_button", index).value) for name, index in defaults.items()
        }
    return found


def _mapping(node: Node, actions: int) -> AxisMapping:
    """The axis_map / axis_scale / axis_offset parameters; one-element defaults apply to every action."""
    values = {name: list(node.get_parameter(name).value) for name in ("axis_map", "axis_scale", "axis_offset")}
    try:
        return AxisMapping.expand(actions, values["axis_map"], values["axis_scale"], values["axis_offset"])
    except ValueError as err:
        raise StartupInputError(f"parameter {err}") from None


def _button(buttons: Sequence[int], index: int) -> bool:
    return 0 <= index < len(buttons) and bool(buttons[index])


def main(argv: Sequence[str] | None = None) -> int:
    return run(TeleopNode, argv, name="teleop_node")


if __name__ == "__main__":
    raise SystemExit(main())
