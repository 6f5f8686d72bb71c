"""The RC car's stand-in: rc_car/race behind the profile's topics (`SimLink`), with the VESC chain between the
command and the car as vesc_ackermann and vesc_driver apply it (`robo_rl.real.profile.VescCalibration`).

The car's own controller is its ESC's speed loop: while the node's safe command goes out (speed 0, straight
wheels) the ESC holds the car stopped, so the vehicle is "in charge" for every period whose command is the safe
one. A rule of the car is broken by any command the VESC chain would execute otherwise than the simulator the
policy was trained in: a steering angle the servo clamps (servo_min, servo_max), a speed the ESC clamps elsewhere
than the simulator's own limits ([-max_reverse_speed, speed_scale])."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from robo_rl.real.command import command_actions
from robo_rl.real.profile import RobotProfile, VescCalibration
from robo_rl.sim.rehearsal.ground import GroundRig

TOLERANCE = 1e-6


class CarRig(GroundRig):
    """See the module docstring."""

    def __init__(self, profile: RobotProfile, params: Sequence[str] = (), seed: int = 0) -> None:
        super().__init__(profile, params, seed)
        self.vesc: VescCalibration | None = profile.vesc
        self.car = self.sim.env.params
        self.steer_scale = next(f.scale for f in self.sim.spec.fields if f.action == "steering")
        """rad per unit steering action in the command (a Twist's yaw rate is read back to this angle)."""

    def command(self, fields: dict[str, float], fault: str) -> None:
        self.held = bool(fault)
        self.sim.send(fields)
        actions = command_actions(self.sim.spec, fields)
        executed = [actions.get(name, self._executed[i]) for i, name in enumerate(self.profile.action_names)]
        self._executed = np.asarray(executed, dtype=np.float64)
        self._check(actions)

    def _check(self, actions: dict[str, float]) -> None:
        """The VESC chain against the simulator: the servo's and the ESC's clamps."""
        if self.vesc is None:
            return
        steering = actions.get("steering")
        if steering is not None:
            angle = steering * self.steer_scale
            if abs(self.vesc.servo_output(angle) - self.vesc.servo_command(angle)) > TOLERANCE:
                self.violations.append(f"{self.now:.2f} s: the servo clamps {angle:+.3f} rad")
        drive = actions.get("drive")
        if drive is not None:
            speed = drive * self.car.speed_scale
            simulated = min(max(speed, -self.car.max_reverse_speed), self.car.speed_scale)
            executed = (self.vesc.erpm_output(speed) - self.vesc.speed_to_erpm_offset) / self.vesc.speed_to_erpm_gain
            if abs(executed - simulated) > 1e-3:
                self.violations.append(f"{self.now:.2f} s: the ESC runs {executed:+.3f} m/s for {speed:+.3f} m/s")
