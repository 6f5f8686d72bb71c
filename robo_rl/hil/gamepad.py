"""GamepadTeleop: take over one env with a gamepad or joystick plugged into this machine (a TeleopDevice).

No ROS and no GUI: the Linux joystick interface (`robo_rl.devices.joystick`, /dev/input/jsN). While the dead-man
`takeover_button` is held, env `env_index` executes the stick action (the same axis mapping as teleop_node:
action i = clip(offset[i] + scale[i] × axes[axis[i]], low_i, high_i)); on release the policy drives again. A press
of `estop_button` is reported once as the `estop` button, as are `success_button` and `reset_button`. When the
gamepad is unplugged mid-takeover, control goes back to the policy and `disconnected` is reported once.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch

from robo_rl.devices.joystick import AxisMapping, LinuxJoystick
from robo_rl.hil.device import TeleopCommand


@dataclass(frozen=True)
class GamepadConfig:
    device: str = "/dev/input/js0"
    """The joystick device (ls /dev/input/js*)."""
    takeover_button: int = 4
    """Button held to drive (the dead-man switch); 4 is the left shoulder button on Xbox-layout pads."""
    estop_button: int = 1
    """Button reported as `estop`."""
    success_button: int = 0
    """Button reported as `success` (the operator marks the episode a success); -1: none."""
    reset_button: int = 3
    """Button reported as `reset`; -1: none."""
    axis_map: tuple[int, ...] = (-1,)
    """Joystick axis per action; (-1,) maps axis i to action i."""
    axis_scale: tuple[float, ...] = (1.0,)
    """Scale per action (one value: all actions)."""
    axis_offset: tuple[float, ...] = (0.0,)
    """Offset per action (one value: all actions), e.g. hover thrust."""
    env_index: int = 0
    """The env the operator drives."""

    def __post_init__(self) -> None:
        used = [self.takeover_button, self.estop_button, self.success_button, self.reset_button]
        if self.takeover_button < 0 or self.estop_button < 0:
            raise ValueError("hil.gamepad: takeover_button and estop_button must be buttons (>= 0)")
        assigned = [b for b in used if b >= 0]
        if len(set(assigned)) != len(assigned):
            raise ValueError(f"hil.gamepad: takeover, estop, success and reset need different buttons, got {used}")


class GamepadTeleop:
    """See the module docstring; `low`/`high` `(action_dim,)` are the action bounds."""

    def __init__(self, num_envs: int, low: torch.Tensor, high: torch.Tensor, config: GamepadConfig) -> None:
        if not 0 <= config.env_index < num_envs:
            raise ValueError(f"GamepadTeleop: env_index {config.env_index} outside 0..{num_envs - 1}")
        self.num_envs, self.config = num_envs, config
        self.low, self.high = low, high
        self.mapping = AxisMapping.expand(low.shape[0], config.axis_map, config.axis_scale, config.axis_offset)
        self.bounds = (low.cpu().double().numpy(), high.cpu().double().numpy())
        self.names = {
            config.estop_button: "estop",
            config.success_button: "success",
            config.reset_button: "reset",
        }
        self.joystick = LinuxJoystick(config.device)
        self.reported_disconnect = False

    def poll(self, obs: torch.Tensor) -> TeleopCommand:
        axes, held, presses = self.joystick.state()
        index = self.config.takeover_button
        active = torch.zeros(self.num_envs, dtype=torch.bool, device=obs.device)
        active[self.config.env_index] = index < len(held) and bool(held[index])
        action = torch.zeros(self.num_envs, self.low.shape[0], dtype=self.low.dtype, device=obs.device)
        row = self.mapping.action(axes, *self.bounds)  # the stick, held or not (record-demos uses it throughout)
        action[self.config.env_index] = torch.as_tensor(row, dtype=self.low.dtype, device=obs.device)
        buttons = {self.names[b]: True for b in presses if b in self.names and b >= 0}
        if not self.joystick.connected and not self.reported_disconnect:
            warnings.warn(f"gamepad {self.config.device} disconnected: the policy drives", stacklevel=2)
            self.reported_disconnect = True
            buttons["disconnected"] = True
        return TeleopCommand(action, active, buttons)

    def episode_reset(self, done: torch.Tensor) -> None:
        """The takeover follows the button, not episodes."""

    def close(self) -> None:
        self.joystick.close()
