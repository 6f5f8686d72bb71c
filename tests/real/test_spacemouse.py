"""A SpaceMouse's Joy, as ROS 2's spacenav driver publishes it, becomes the arm's end-effector actions.

The driver's conventions are from its source: ros-drivers/joystick_drivers, branch ros2, commit
881f3a5474044b79324a2117fe52a5db2106e4e0, spacenav/src/spacenav.cpp (and spacenav/include/spacenav/spacenav.hpp):
- lines 118-130: publishers `spacenav/offset` and `spacenav/rot_offset` (geometry_msgs/Vector3), `spacenav/twist`
  (geometry_msgs/Twist; `spacenav/twist_stamped`, TwistStamped, when use_twist_stamped) and `spacenav/joy`
  (sensor_msgs/Joy), relative names, queue 10; line 133: the device is polled on a 1 ms wall timer.
- lines 69-95: full_scale 512, linear_scale/{x,y,z} and angular_scale/{x,y,z} 1, static_count_threshold 30,
  zero_when_static true, static_trans_deadband and static_rot_deadband 0.1, use_twist_stamped false.
- lines 244-250: normed x = motion.z / full_scale, y = -motion.x / full_scale, z = motion.y / full_scale; rotation
  x = rz / full_scale, y = -rx / full_scale, z = ry / full_scale (libspnav's frame turned into ROS's).
- lines 312-320: Joy axes = [x, y, z, rot x, rot y, rot z] normalised (no linear/angular scale), buttons = the
  button states; lines 283-293: offset, rot_offset and twist are those times linear_scale / angular_scale.
- header line 94 and lines 262-268: buttons start as two zeros, index = libspnav's button number, grown on demand.
  That number is spacenavd's (FreeSpacenav/spacenavd, commit bac572ae1e2dff288a072896880f0a6431d046e4): the evdev
  key code minus the device's lowest (src/dev_usb_linux.c lines 130-149 and 316), then the `bnmapN` remapping of
  /etc/spnavrc (src/event.c line 235, src/cfgfile.c lines 105 and 385-396; identity by default).
- lines 222-240: after more than static_count_threshold empty polls, zero_when_static zeroes the six values (else
  only those within the deadbands) and they are published again: a puck let go reads zeros.
- lines 270, 309, 311: Joy is published whenever joy_stale, which nothing resets: on every poll after the first event.
"""

from __future__ import annotations

import numpy as np
import pytest

from robo_rl.real.arm_kinematics import ArmGeometry, tip_position
from robo_rl.real.profile import load_profile
from robo_rl.real.spacemouse import (
    LEFT_BUTTON,
    DeadMan,
    EndEffectorTeleop,
    SpaceMouseSettings,
    arm_actions,
    tip_velocity,
)
from robo_rl.sim.mujoco.peg_insert import peg_down_ik, peg_tip_fk

FULL_SCALE = 512.0
PEG_DOWN = peg_down_ik(np.array([[0.40, 0.02, 0.15]]))[0]


def spacenav_axes(x: float = 0, y: float = 0, z: float = 0, rx: float = 0, ry: float = 0, rz: float = 0) -> list[float]:
    """The Joy axes the driver publishes for libspnav's motion event (x, y, z, rx, ry, rz) (lines 244-250, 312-319)."""
    return [z / FULL_SCALE, -x / FULL_SCALE, y / FULL_SCALE, rz / FULL_SCALE, -rx / FULL_SCALE, ry / FULL_SCALE]


def measured(teleop: EndEffectorTeleop, q: np.ndarray) -> dict[str, float]:
    return {source: float(v) for source, v in zip(teleop.arm.joint_sources, q, strict=True)}


def peg_teleop(**settings: float) -> EndEffectorTeleop:
    profile = load_profile("arm_peg")
    return EndEffectorTeleop(arm_actions(profile), profile.dt, settings=SpaceMouseSettings(**settings))


def expected_speed(deflection: float, settings: SpaceMouseSettings) -> float:
    return (abs(deflection) - settings.deadband) / (1 - settings.deadband) * settings.speed * np.sign(deflection)


@pytest.mark.parametrize(
    ("motion", "axis"),
    [({"z": 350.0}, 0), ({"x": 350.0}, 1), ({"y": -200.0}, 2), ({"z": -512.0}, 0)],
)
def test_a_push_moves_the_peg_tip_along_the_pushed_axis(motion: dict[str, float], axis: int) -> None:
    teleop = peg_teleop()
    axes = spacenav_axes(**motion)
    action = teleop.action(measured(teleop, PEG_DOWN), axes)
    assert action is not None
    moved = peg_tip_fk((PEG_DOWN + action)[None])[0] - peg_tip_fk(PEG_DOWN[None])[0]  # steps from the measured pose
    expected = np.zeros(3)
    expected[axis] = expected_speed(axes[axis], teleop.settings) * 0.1  # the profile's dt
    np.testing.assert_allclose(moved, expected, atol=1e-9)
    assert abs(action[1:].sum()) < 1e-12  # the peg keeps pointing down


def test_driver_frame_signs() -> None:
    """libspnav's -x is ROS's +y (left), its z is ROS's x, its y is ROS's z (lines 244-246)."""
    settings = SpaceMouseSettings(deadband=0.0)
    np.testing.assert_allclose(tip_velocity(spacenav_axes(x=-512.0), settings), [0.0, settings.speed, 0.0])
    np.testing.assert_allclose(tip_velocity(spacenav_axes(z=512.0, y=512.0), settings), [0.05, 0.0, 0.05])
    assert not tip_velocity(spacenav_axes(rx=500.0, ry=500.0, rz=500.0), settings).any()  # rotation unused


def test_a_puck_at_rest_holds_exactly() -> None:
    """What the driver publishes for a puck let go (zeros, lines 222-240) is zero steps, or the measured pose as
    absolute targets: never a jump."""
    teleop = peg_teleop()
    assert teleop.action(measured(teleop, PEG_DOWN), spacenav_axes()) == pytest.approx([0.0] * 4, abs=0.0)
    assert teleop.action(measured(teleop, PEG_DOWN), spacenav_axes(z=40.0, x=-40.0)) == pytest.approx([0.0] * 4)
    profile = load_profile("arm")  # absolute joint targets
    absolute = EndEffectorTeleop(arm_actions(profile), profile.dt)
    np.testing.assert_array_equal(absolute.action(measured(absolute, PEG_DOWN), spacenav_axes()), PEG_DOWN)


def test_absolute_targets_move_the_tip_too() -> None:
    profile = load_profile("arm")
    teleop = EndEffectorTeleop(arm_actions(profile), profile.dt, ArmGeometry(wrist_to_tip=0.10))
    action = teleop.action(measured(teleop, PEG_DOWN), spacenav_axes(z=512.0))
    assert action is not None
    geometry = teleop.geometry
    moved = tip_position(geometry, action) - tip_position(geometry, PEG_DOWN)
    np.testing.assert_allclose(moved, [0.05 * profile.dt, 0.0, 0.0], atol=1e-9)


def test_a_fast_setting_is_shrunk_into_the_step_bounds_keeping_the_direction() -> None:
    teleop = peg_teleop(speed=2.0)  # 0.2 m per period asked: far beyond 0.05 rad steps
    action = teleop.action(measured(teleop, PEG_DOWN), spacenav_axes(z=512.0, x=-200.0))
    assert action is not None and 0.05 / 1.01 <= np.abs(action).max() <= 0.05
    moved = peg_tip_fk((PEG_DOWN + action)[None])[0] - peg_tip_fk(PEG_DOWN[None])[0]
    wanted = tip_velocity(spacenav_axes(z=512.0, x=-200.0), teleop.settings)
    cosine = moved @ wanted / np.linalg.norm(moved) / np.linalg.norm(wanted)
    assert cosine > 0.9999


def test_no_action_until_every_joint_is_measured() -> None:
    teleop = peg_teleop()
    fields = measured(teleop, PEG_DOWN)
    fields.pop("joint_states.position[2]")
    assert teleop.action(fields, spacenav_axes(z=300.0)) is None
    fields["joint_states.position[2]"] = float("nan")
    assert teleop.action(fields, spacenav_axes(z=300.0)) is None


def test_dead_man_is_the_button_held_in_a_fresh_message() -> None:
    dead_man = DeadMan(LEFT_BUTTON, timeout=0.3)
    assert not dead_man.held(0.0)  # nothing received
    dead_man.receive(spacenav_axes(z=300.0), [1, 0], now=10.0)
    assert dead_man.held(10.0) and dead_man.held(10.29)
    assert not dead_man.held(10.31)  # the driver went silent: let go
    dead_man.receive(spacenav_axes(z=300.0), [0, 1], now=11.0)
    assert not dead_man.held(11.0)  # the other button is not the dead-man
    dead_man.receive(spacenav_axes(), [], now=12.0)
    assert not dead_man.held(12.0)


def test_profiles_without_an_arm_are_refused() -> None:
    with pytest.raises(ValueError, match="JointTrajectory"):
        arm_actions(load_profile("quadrotor_crazyflie"))
    with pytest.raises(ValueError, match="4 distinct joints"):
        arm_actions(load_profile("arm_peg"), ["yaw", "shoulder", "elbow"])
    with pytest.raises(ValueError, match="no JointState"):
        arm_actions(load_profile("arm_peg"), ["yaw", "shoulder", "elbow", "gripper"])
