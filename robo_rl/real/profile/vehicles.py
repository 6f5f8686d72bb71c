"""A robot profile's driver sections: PX4's fault hold and motor order, crazyswarm2's take-off and landing, and a
VESC car's speed and steering calibration."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from robo_rl.real.profile.errors import ProfileError, require
from robo_rl.real.profile.signals import CommandField
from robo_rl.real.px4 import DEFAULT_FAULT_HOLD, PX4_QUAD_X_ORDER, motor_permutation


@dataclass(frozen=True)
class Px4Settings:
    """What policy_node does for a PX4 vehicle besides the setpoints (`robo_rl.real.px4`)."""

    fault_hold: float = DEFAULT_FAULT_HOLD
    """Seconds of zero body rates at the hold thrust, with the heartbeat, after a fault, before the node goes silent
    and PX4's offboard-loss failsafe acts (VehicleRatesSetpoint only; other setpoints go silent at once). 0: none."""
    hover_thrust: float = 0.0
    """The hold's thrust, normalized upward in (0, 1]: the vehicle's MPC_THR_HOVER (PX4's uXRCE-DDS bridge does not
    export its HoverThrustEstimate by default, so the vehicle cannot tell it). 0: unknown, refused for a profile
    that holds (a handover section, or a fault hold on a VehicleRatesSetpoint)."""
    motor_order: tuple[str, ...] = PX4_QUAD_X_ORDER
    """For an ActuatorMotors command: the positions of PX4's motors 1..4 (`control[0..3]`, its CA_ROTOR0..3), named
    from robo_rl's rotors (front_right, back_right, back_left, front_left). The profile's fields write `control[k]`
    for robo_rl rotor k; policy_node moves each to its PX4 motor. Default: PX4's quad-X airframes."""

    def __post_init__(self) -> None:
        require(math.isfinite(self.fault_hold) and self.fault_hold >= 0, "fault_hold", "must be >= 0 s")
        require(0.0 <= self.hover_thrust <= 1.0, "hover_thrust", f"must lie in [0, 1], got {self.hover_thrust}")
        try:
            motor_permutation(self.motor_order)
        except ValueError as err:
            raise ProfileError(str(err)) from None


@dataclass(frozen=True)
class CrazyswarmSettings:
    """What policy_node does for a Crazyflie through crazyswarm2 besides the setpoints (`robo_rl.real.crazyflie_link`):
    its high-level commander takes off, holds and lands it; the policy flies only in between."""

    takeoff_height: float = 0.5
    """Height (m, world z) of the high-level take-off, where the vehicle hovers until the policy takes over."""
    takeoff_duration: float = 2.0
    """Seconds of the take-off climb; the policy may not take over before it ends."""
    land_duration: float = 2.0
    """Seconds of the high-level landing (to z = 0)."""
    unlock_packets: int = 10
    """Zero-thrust cmd_vel_legacy packets, one per period, sent on the ground before the take-off: the firmware's
    thrust lock opens only on a packet with thrust exactly 0 (several, in case the radio drops one)."""
    handback_duration: float = 1.0
    """Seconds of the high-level go_to that holds the vehicle where it is when the policy hands back."""
    ground_height: float = 0.1
    """The vehicle counts as on the ground (a take-off may be asked) below this odometry z (m)."""

    def __post_init__(self) -> None:
        require(0.0 < self.takeoff_height < 10.0, "takeoff_height", f"must lie in (0, 10) m, got {self.takeoff_height}")
        for name in ("takeoff_duration", "land_duration", "handback_duration"):
            value = getattr(self, name)
            require(math.isfinite(value) and value > 0, name, f"must be > 0 s, got {value}")
        require(self.unlock_packets >= 1, "unlock_packets", f"must be >= 1, got {self.unlock_packets}")
        require(
            0.0 < self.ground_height < self.takeoff_height,
            "ground_height",
            f"must lie in (0, takeoff_height {self.takeoff_height}) m, got {self.ground_height}",
        )


@dataclass(frozen=True)
class VescCalibration:
    """A VESC car's ESC and steering servo calibration: the keys of its vesc.yaml, as F1TENTH's vesc packages read
    them (f1tenth/vesc, ros2 branch). vesc_ackermann's `ackermann_to_vesc` node maps an AckermannDriveStamped
    linearly and clamps nothing: erpm = speed_to_erpm_gain × speed (m/s) + speed_to_erpm_offset, servo =
    steering_angle_to_servo_gain × steering angle (rad) + steering_angle_to_servo_offset. vesc_driver clamps what
    it passes on to the VESC: the erpm to [speed_min, speed_max], the servo value to [servo_min, servo_max]. So the
    car executes only the speeds and steering angles these limits reach (`speed_reach`, `steering_reach`); the
    profile refuses commands beyond them, which the car would execute differently from the simulator."""

    speed_to_erpm_gain: float
    """Electrical RPM per m/s of speed setpoint (motor pole pairs × gear ratio × 60 / wheel circumference); != 0."""
    speed_to_erpm_offset: float
    """ERPM at a speed setpoint of 0 (0 on a calibrated car)."""
    steering_angle_to_servo_gain: float
    """Servo value per rad of steering angle (negative where a larger value steers right); != 0."""
    steering_angle_to_servo_offset: float
    """Servo value of straight wheels, within [servo_min, servo_max]."""
    servo_min: float
    """Smallest servo value vesc_driver passes on, in [0, 1] (the VESC's servo output range)."""
    servo_max: float
    """Largest servo value vesc_driver passes on, in (servo_min, 1]."""
    speed_min: float
    """Smallest ERPM vesc_driver passes on (negative: reverse); it must contain the ERPM of speed 0."""
    speed_max: float
    """Largest ERPM vesc_driver passes on."""

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            require(math.isfinite(value), item.name, f"must be a finite number, got {value}")
        require(self.speed_to_erpm_gain != 0, "speed_to_erpm_gain", "must not be 0 (no speed would reach the ESC)")
        message = "must not be 0 (no steering angle would reach the servo)"
        require(self.steering_angle_to_servo_gain != 0, "steering_angle_to_servo_gain", message)
        servo = f"servo_min={self.servo_min} servo_max={self.servo_max}"
        inside = 0.0 <= self.servo_min < self.servo_max <= 1.0
        require(inside, "servo_min", f"need 0 <= servo_min < servo_max <= 1 (the VESC's servo range), got {servo}")
        speeds = f"speed_min={self.speed_min} speed_max={self.speed_max}"
        require(self.speed_min < self.speed_max, "speed_min", f"must be < speed_max, got {speeds}")
        straight = self.servo_min <= self.steering_angle_to_servo_offset <= self.servo_max
        message = f"straight wheels (servo = offset) must lie in [servo_min, servo_max], got {self.servo_text}"
        require(straight, "steering_angle_to_servo_offset", message)
        stop = self.speed_min <= self.speed_to_erpm_offset <= self.speed_max
        limits = self.speed_text("speed_min", "speed_max")
        message = f"speed 0 (erpm = offset) must lie in [speed_min, speed_max], got {limits}"
        require(stop, "speed_to_erpm_offset", message)

    def erpm_command(self, speed: float) -> float:
        """The ERPM ackermann_to_vesc sends for a speed setpoint in m/s (unclamped)."""
        return self.speed_to_erpm_gain * speed + self.speed_to_erpm_offset

    def erpm_output(self, speed: float) -> float:
        """The ERPM vesc_driver passes on to the VESC: `erpm_command` clamped to [speed_min, speed_max]."""
        return min(max(self.erpm_command(speed), self.speed_min), self.speed_max)

    def servo_command(self, angle: float) -> float:
        """The servo value ackermann_to_vesc sends for a steering angle in rad (unclamped)."""
        return self.steering_angle_to_servo_gain * angle + self.steering_angle_to_servo_offset

    def servo_output(self, angle: float) -> float:
        """The servo value vesc_driver passes on to the VESC: `servo_command` clamped to [servo_min, servo_max]."""
        return min(max(self.servo_command(angle), self.servo_min), self.servo_max)

    @property
    def speed_reach(self) -> tuple[float, float]:
        """(lowest, highest) speed setpoint in m/s the ESC executes: the inverse map at speed_min and speed_max."""
        ends = [
            (erpm - self.speed_to_erpm_offset) / self.speed_to_erpm_gain for erpm in (self.speed_min, self.speed_max)
        ]
        return min(ends), max(ends)

    @property
    def steering_reach(self) -> tuple[float, float]:
        """(lowest, highest) steering angle in rad the servo executes: the inverse map at servo_min and servo_max."""
        gain, offset = self.steering_angle_to_servo_gain, self.steering_angle_to_servo_offset
        ends = [(servo - offset) / gain for servo in (self.servo_min, self.servo_max)]
        return min(ends), max(ends)

    @property
    def reverse_limit_key(self) -> str:
        """The vesc_driver limit that bounds reverse: speed_min, or speed_max where the gain is negative."""
        return "speed_min" if self.speed_to_erpm_gain > 0 else "speed_max"

    @property
    def forward_limit_key(self) -> str:
        """The vesc_driver limit that bounds forward speed."""
        return "speed_max" if self.speed_to_erpm_gain > 0 else "speed_min"

    @property
    def servo_text(self) -> str:
        """The servo calibration as error messages name it."""
        return (
            f"servo_min {self.servo_min:g}, servo_max {self.servo_max:g}, steering_angle_to_servo_gain "
            f"{self.steering_angle_to_servo_gain:g}, steering_angle_to_servo_offset "
            f"{self.steering_angle_to_servo_offset:g}"
        )

    def speed_text(self, *keys: str) -> str:
        """The ERPM limits `keys` and the speed calibration as error messages name them."""
        limits = "".join(f"{key} {getattr(self, key):g} erpm, " for key in keys)
        gain, offset = self.speed_to_erpm_gain, self.speed_to_erpm_offset
        return f"{limits}speed_to_erpm_gain {gain:g}, speed_to_erpm_offset {offset:g}"


def carries_steering_angle(field: CommandField) -> bool:
    """Whether a command field is a car's steering angle: an Ackermann `steering_angle` field, or a Twist yaw rate
    made from one (`ackermann_yaw_rate`), which a Twist→Ackermann converter turns back into that angle."""
    return field.field.endswith("steering_angle") or field.transform == "ackermann_yaw_rate"
