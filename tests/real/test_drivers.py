"""Profiles name the driver they are written against; one the driver cannot serve is refused, saying why."""

from __future__ import annotations

from importlib import resources
from typing import Any

import pytest
import yaml

from robo_rl.real.drivers import DRIVERS
from robo_rl.real.profile import ProfileError, bundled_profiles, load_profile, profile_from_dict


def _bundled(name: str) -> dict[str, Any]:
    return yaml.safe_load(resources.files("robo_rl.real").joinpath("profiles", f"{name}.yaml").read_text())


def test_every_bundled_profile_names_a_known_driver() -> None:
    for name in bundled_profiles():
        assert load_profile(name).driver in DRIVERS, name


def test_a_motor_profile_for_crazyswarm2_is_refused_with_the_reason() -> None:
    """crazyswarm2's crazyflie_server subscribes cmd_vel_legacy, cmd_full_state, cmd_position, cmd_velocity_world
    and cmd_hover: no per-motor command, so a motor policy cannot fly through it (it flies on board)."""
    data = _bundled("quadrotor_crazyflie") | {"driver": "crazyswarm2"}
    message = r"fly a quadrotor policy's std_msgs/msg/Float32MultiArray.*never per-motor.*--target crazyflie"
    with pytest.raises(ProfileError, match=message):
        profile_from_dict(data)


def test_a_ctbr_profile_flies_through_crazyswarm2_on_cmd_vel_legacy() -> None:
    """In the firmware's rate mode cmd_vel_legacy carries body rates and thrust: the ctbr profile is accepted, and
    a quadrotor profile sending another crazyswarm2 setpoint (e.g. cmd_hover) is refused."""
    profile = load_profile("quadrotor_crazyswarm2")
    assert profile.driver == "crazyswarm2"
    assert [(c.type, c.topic) for c in profile.commands] == [("geometry_msgs/msg/Twist", "cmd_vel_legacy")]
    data = _bundled("quadrotor_crazyswarm2")
    data["commands"] = [
        {
            "type": "crazyflie_interfaces/msg/Hover",
            "topic": "cmd_hover",
            "fields": [{"action": "collective_thrust", "field": "z_distance"}],
        }
    ]
    with pytest.raises(ProfileError, match=r"fly a quadrotor policy's crazyflie_interfaces/msg/Hover"):
        profile_from_dict(data)


def test_a_command_type_the_driver_does_not_take_is_refused() -> None:
    data = _bundled("rc_car") | {"driver": "px4"}
    with pytest.raises(ProfileError, match="px4 does not take ackermann_msgs/msg/AckermannDriveStamped"):
        profile_from_dict(data)
    with pytest.raises(ProfileError, match="unknown driver 'mavros'"):
        profile_from_dict(_bundled("rc_car") | {"driver": "mavros"})


def test_fields_a_driver_publishes_empty_are_refused() -> None:
    """crazyswarm2's odometry logs no body rates: a (non-quadrotor) profile reading them from its Odometry is
    refused too."""
    data = _bundled("rc_car") | {"driver": "crazyswarm2"}
    data["commands"] = [c for c in data["commands"] if c["type"] == "geometry_msgs/msg/Twist"]
    with pytest.raises(ProfileError, match=r"no usable twist\.twist\.angular.*odom\.twist\.twist\.angular\.z"):
        profile_from_dict(data)
