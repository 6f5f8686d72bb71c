"""A VESC car's profile states its ESC and servo calibration (`vesc:`, robo_rl.real.profile.VescCalibration); a
policy whose steering the servo cannot reach, or whose speeds the ESC would clip elsewhere than its simulator, is
refused with the numbers.

The arithmetic is F1TENTH's, read in f1tenth/vesc, branch ros2, commit 153998df8545fe1781b975df88e411b4e71d4bfe:
vesc_ackermann/src/ackermann_to_vesc.cpp (`AckermannToVesc::ackermannCmdCallback`) maps the message linearly and
clamps nothing (erpm = speed_to_erpm_gain * speed + speed_to_erpm_offset; servo = steering_angle_to_servo_gain *
angle + steering_angle_to_servo_offset); vesc_driver/src/vesc_driver.cpp (`speedCallback`, `servoCallback`,
`CommandLimit::clip`) clamps the erpm to [speed_min, speed_max] and the servo value to [servo_min, servo_max] before
sending them to the VESC. The stock numbers are F1TENTH's f1tenth/f1tenth_system, commit
ae64e05fbaf6eda592ef56c13ce89c896d489a55, f1tenth_stack/config/vesc.yaml.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import yaml

from robo_rl.actuator import DriveActuator
from robo_rl.real.policy_fit import ProfileMismatchError, esc_mismatches, profile_drive
from robo_rl.real.profile import ProfileError, VescCalibration, load_profile, profile_from_dict
from robo_rl.real.runtime import PolicyRuntime
from robo_rl.sim.rc_car.dynamics import speed_setpoint
from robo_rl.sim.rc_car.params import load_car

STOCK_F1TENTH = {
    "speed_to_erpm_gain": 4614.0,
    "speed_to_erpm_offset": 0.0,
    "steering_angle_to_servo_gain": -1.2135,
    "steering_angle_to_servo_offset": 0.5304,
    "servo_min": 0.15,
    "servo_max": 0.85,
    "speed_min": -23250.0,
    "speed_max": 23250.0,
}
"""f1tenth/f1tenth_system @ ae64e05f, f1tenth_stack/config/vesc.yaml (the ackermann_to_vesc and vesc_driver keys)."""


def _profile_data(vesc: dict[str, float] | None = None) -> dict[str, Any]:
    data = yaml.safe_load(resources.files("robo_rl.real").joinpath("profiles/rc_car.yaml").read_text())
    if vesc is not None:
        data["vesc"] = dict(vesc)
    return data


def test_the_conversions_are_vesc_ackermann_s_then_vesc_driver_s_clamp() -> None:
    """Hand-worked with the stock numbers: 0.2 rad → -1.2135 * 0.2 + 0.5304 = 0.2877; -0.3 rad → 0.89445, which
    vesc_driver clamps to servo_max 0.85; 1.5 m/s → 4614 * 1.5 = 6921 erpm; -6 m/s → -27684, clamped to -23250.
    The servo's reach is the inverse map at its limits: (0.15 - 0.5304) / -1.2135 = +0.3135 rad (servo_min: a
    negative gain steers left at small values), (0.85 - 0.5304) / -1.2135 = -0.2634 rad."""
    stock = VescCalibration(**STOCK_F1TENTH)
    assert stock.servo_command(0.2) == pytest.approx(0.2877, abs=1e-12)
    assert stock.servo_output(0.2) == pytest.approx(0.2877, abs=1e-12)
    assert stock.servo_command(-0.3) == pytest.approx(0.89445, abs=1e-12)
    assert stock.servo_output(-0.3) == 0.85
    assert stock.servo_output(0.5) == 0.15
    assert stock.erpm_command(1.5) == pytest.approx(6921.0) and stock.erpm_output(1.5) == pytest.approx(6921.0)
    assert stock.erpm_command(-6.0) == pytest.approx(-27684.0) and stock.erpm_output(-6.0) == -23250.0
    assert stock.steering_reach == pytest.approx((-0.3196 / 1.2135, 0.3804 / 1.2135))
    assert stock.steering_reach == pytest.approx((-0.26337, 0.31347), abs=1e-5)
    assert stock.speed_reach == pytest.approx((-23250 / 4614, 23250 / 4614))
    assert (stock.reverse_limit_key, stock.forward_limit_key) == ("speed_min", "speed_max")
    reversed_motor = VescCalibration(**STOCK_F1TENTH | {"speed_to_erpm_gain": -4614.0, "speed_min": -9228.0})
    assert reversed_motor.speed_reach == pytest.approx((-23250 / 4614, 2.0))
    assert (reversed_motor.reverse_limit_key, reversed_motor.forward_limit_key) == ("speed_max", "speed_min")


def test_the_stock_f1tenth_calibration_is_refused_naming_the_servo_range() -> None:
    """The stock servo limits reach +0.313/-0.263 rad; the policy steers +-0.4189 rad (F1TENTH gym's s_max)."""
    with pytest.raises(ProfileError) as info:
        profile_from_dict(_profile_data(STOCK_F1TENTH), "rc_car.yaml")
    assert str(info.value) == (
        "rc_car.yaml: vesc: steering: ackermann_msgs/msg/AckermannDriveStamped drive.steering_angle (0.4189 * "
        "steering in [-1, 1]) commands -0.419 to +0.419 rad, the servo reaches -0.263 to +0.313 rad (servo_min "
        "0.15, servo_max 0.85, steering_angle_to_servo_gain -1.2135, steering_angle_to_servo_offset 0.5304; angle = "
        "(servo - offset) / gain): the car would steer less than the policy learned; calibrate the servo "
        "(docs/ROBOT.md) or train with the car's steering limit"
    )
    twist_only = _profile_data(STOCK_F1TENTH)
    del twist_only["commands"][0]  # a Twist's yaw rate carries the same steering angle to the converter
    with pytest.raises(ProfileError, match=r"Twist angular.z \(0.4189 \* steering in \[-1, 1\]\) commands -0.419"):
        profile_from_dict(twist_only)


def test_the_bundled_profile_accepts_the_car_policy_and_executes_what_the_simulator_did(
    policy_file: Callable[[str], Path],
) -> None:
    """Over the policy's whole action range, the bundled calibration's car executes the simulator's commands: the
    speed setpoint of rc_car's `speed_setpoint` (clipped at 2 m/s in reverse) and the steering angle within
    +-max_steer, each read back from what vesc_driver sends through the inverse map."""
    profile = load_profile("rc_car")
    runtime = PolicyRuntime(policy_file("rc_car"), profile)
    vesc, car = profile.vesc, load_car("f1tenth")
    assert vesc is not None and runtime.info.action_low == (-1.0, -1.0) and runtime.info.action_high == (1.0, 1.0)
    drive = np.linspace(-1.0, 1.0, 201)
    simulated = speed_setpoint(torch.tensor(drive), car).numpy()
    executed = [(vesc.erpm_output(5.0 * d) - vesc.speed_to_erpm_offset) / vesc.speed_to_erpm_gain for d in drive]
    assert simulated.min() == pytest.approx(-2.0) and executed == pytest.approx(simulated, abs=1e-9)
    angles = 0.4189 * drive
    gain, offset = vesc.steering_angle_to_servo_gain, vesc.steering_angle_to_servo_offset
    steered = [(vesc.servo_output(a) - offset) / gain for a in angles]
    assert steered == pytest.approx(np.clip(angles, -car.max_steer, car.max_steer), abs=1e-12)


def test_an_esc_that_clips_reverse_elsewhere_than_the_simulator_is_refused(policy_file: Callable[[str], Path]) -> None:
    """The stock speed_min (-23250 erpm, -5.04 m/s) lets the car reverse at 5 m/s where the simulator drove 2 m/s;
    -4614 erpm (1 m/s) stops it short of the simulator's 2 m/s. Both name the speed_min that matches: -9228."""
    runtime = PolicyRuntime(policy_file("rc_car"))
    for speed_min, executed, reach in ((-23250.0, "-5.000", "-5.039"), (-4614.0, "-1.000", "-1.000")):
        data = _profile_data()
        data["vesc"]["speed_min"] = speed_min
        with pytest.raises(ProfileMismatchError) as info:
            runtime.check(profile_from_dict(data))
        reverse = (
            "reverse: the policy commands down to -5.000 m/s; the simulator drove -2.000 m/s (its ESC limit, "
            f"robo_rl.actuator max_reverse_speed), the car's ESC would drive {executed} m/s (it reaches {reach} m/s: "
            f"speed_min {speed_min:g} erpm, speed_to_erpm_gain 4614, speed_to_erpm_offset 0): set speed_min to -9228 "
            "erpm, the simulator's limit"
        )
        assert info.value.mismatches == (
            f"ackermann_msgs/msg/AckermannDriveStamped drive.speed (drive): {reverse}",
            f"geometry_msgs/msg/Twist linear.x (drive): {reverse}",
        )


def test_reverse_the_simulator_did_not_clip_must_be_reached_and_a_car_trained_policy_is_not_checked(
    policy_file: Callable[[str], Path],
) -> None:
    profile = load_profile("rc_car")
    info = PolicyRuntime(policy_file("rc_car")).info
    assert isinstance(info.actuator, DriveActuator)
    assert esc_mismatches(info.actuator, info, profile) == []
    unclipped = dataclasses.replace(info.actuator, max_reverse_speed=6.0)  # the simulator drove -5 m/s
    found = esc_mismatches(unclipped, info, profile)
    assert len(found) == 2 and found[0].endswith(
        "the simulator drove it, the car's ESC would drive -2.000 m/s (it reaches -2.000 m/s: speed_min -9228 erpm, "
        "speed_to_erpm_gain 4614, speed_to_erpm_offset 0): speed_min must reach -23070 erpm"
    )
    assert esc_mismatches(profile_drive(profile), info, profile) == []  # the car itself was the plant


def test_an_esc_that_cannot_reach_the_top_speed_is_refused() -> None:
    data = _profile_data()
    data["vesc"]["speed_max"] = 18456.0  # 4 m/s
    with pytest.raises(ProfileError) as info:
        profile_from_dict(data, "rc_car.yaml")
    assert str(info.value) == (
        "rc_car.yaml: vesc: speed: ackermann_msgs/msg/AckermannDriveStamped drive.speed (5 * drive in [-1, 1]) "
        "commands up to 5.000 m/s, the ESC reaches 4.000 m/s (speed_max 18456 erpm, speed_to_erpm_gain 4614, "
        "speed_to_erpm_offset 0): speed_max must reach 23070 erpm"
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"servo_min": 0.85, "servo_max": 0.15}, "vesc.servo_min: need 0 <= servo_min < servo_max <= 1"),
        ({"servo_min": 0.5, "servo_max": 0.5}, "vesc.servo_min: need 0 <= servo_min < servo_max <= 1"),
        ({"servo_max": 1.2}, r"vesc.servo_min: need .*, got servo_min=0.05 servo_max=1.2$"),
        ({"speed_to_erpm_gain": 0.0}, "vesc.speed_to_erpm_gain: must not be 0"),
        ({"steering_angle_to_servo_gain": 0}, "vesc.steering_angle_to_servo_gain: must not be 0"),
        ({"speed_min": 23250.0}, "vesc.speed_min: must be < speed_max, got speed_min=23250.0 speed_max=23250.0"),
        ({"steering_angle_to_servo_offset": 0.97}, r"vesc.steering_angle_to_servo_offset: straight wheels"),
        ({"speed_to_erpm_offset": -10000.0}, r"vesc.speed_to_erpm_offset: speed 0 \(erpm = offset\) must lie"),
        ({"servo_min": math.nan}, "vesc.servo_min: must be a finite number, got nan"),
        ({"servo_min": "low"}, "vesc.servo_min: expected float, got str 'low'"),
        ({"speed_max": None}, "vesc.speed_max: expected float, got null"),
        ({"speed_limit": 5.0}, "vesc.speed_limit: unknown key"),
    ],
)
def test_a_bad_calibration_is_a_profile_error_naming_the_key(change: dict[str, Any], message: str) -> None:
    data = _profile_data()
    data["vesc"].update(change)
    with pytest.raises(ProfileError, match=f"^rc_car.yaml: {message}"):
        profile_from_dict(data, "rc_car.yaml")


def test_a_missing_key_a_throttle_field_or_another_kind_is_refused() -> None:
    data = _profile_data()
    del data["vesc"]["speed_min"]
    with pytest.raises(ProfileError, match=r"^p: vesc\.speed_min: missing required key$"):
        profile_from_dict(data, "p")
    data = _profile_data()
    for command in data["commands"]:
        command["fields"][1]["esc"] = "throttle"
    with pytest.raises(ProfileError, match="a throttle field, but vesc_ackermann sends the VESC a speed"):
        profile_from_dict(data)
    arm = yaml.safe_load(resources.files("robo_rl.real").joinpath("profiles/arm.yaml").read_text())
    arm["vesc"] = STOCK_F1TENTH
    with pytest.raises(ProfileError, match="vesc: a calibration of a car's VESC, but the kind is 'arm'"):
        profile_from_dict(arm)
    no_calibration = _profile_data()
    del no_calibration["vesc"]
    assert profile_from_dict(no_calibration).vesc is None  # optional: nothing is checked without it
