"""The pure-pursuit baseline: its geometry and speed profile by hand, and clean laps on the bundled tracks."""

from __future__ import annotations

import math

import pytest
import torch

from robo_rl.sim.rc_car import RaceConfig, RCCarRace
from robo_rl.sim.rc_car.dynamics import VX, YAW, X, Y
from robo_rl.sim.rc_car.lap_timing import time_laps
from robo_rl.sim.rc_car.pure_pursuit import PurePursuit, PurePursuitConfig


def test_steering_puts_the_rear_axle_on_the_circle_through_the_target() -> None:
    lr, wheelbase, radius = 0.17, 0.33, 2.0
    state = torch.zeros(3, 7)
    state[:, YAW] = 0.3
    state[:, X], state[:, Y] = 1.0 + lr * math.cos(0.3), -2.0 + lr * math.sin(0.3)  # rear axle at (1, -2)
    # Targets on circles of radius 2 m tangent to the heading: 40 degrees round to the left and to the right,
    # and one straight ahead.
    angle = math.radians(40)
    local = torch.tensor([[radius * math.sin(angle), radius * (1 - math.cos(angle))], [3.0, 0.0]])
    local = torch.cat((local, local[:1] * torch.tensor([1.0, -1.0])))
    rotation = torch.tensor([[math.cos(0.3), -math.sin(0.3)], [math.sin(0.3), math.cos(0.3)]])
    target = local @ rotation.T + torch.tensor([1.0, -2.0])
    steer = PurePursuit._steer(state, target, lr, wheelbase)
    expected = math.atan(wheelbase / radius)
    torch.testing.assert_close(steer, torch.tensor([expected, 0.0, -expected]), atol=1e-5, rtol=0)


def test_speed_target_is_friction_limited_in_a_bend_and_capped_on_a_straight() -> None:
    env = RCCarRace(3, config=RaceConfig(track="oval"), seed=0)
    config = PurePursuitConfig(preview=1.0, max_speed=8.0)
    driver = PurePursuit(config)
    # Middle of the right bend (radius 2.5 m, the bend continues > 1 m); the top straight before the left bend
    # (15.5 m: 4 m before it, more than the preview); 0.5 m before the left bend (11.93 m).
    s = torch.tensor([1.0, 7.0, 11.43])
    target = driver._speed_target(env, s)
    g, mu = env.params.gravity, env.params.friction
    corner = math.sqrt(config.lateral_acceleration * mu * g * 2.5)
    braking = config.braking_deceleration * env.params.max_deceleration  # the ESC's braking limit (speed mode)
    assert target[0].item() == pytest.approx(corner, rel=1e-3)
    assert target[1].item() == pytest.approx(env.params.speed_scale)  # the ESC's largest setpoint, below 8 m/s
    # Before the bend: the speed from which braking reaches the corner speed where the bend begins, 0.5 m ahead;
    # the curvature, averaged over 0.6 m, ramps in over 0.3 m on either side of that point.
    low, high = (math.sqrt(corner**2 + 2 * braking * distance) for distance in (0.2, 1.0))
    assert low <= target[2].item() <= high + 1e-3


@pytest.mark.parametrize("track", ["kidney", "technical"])
def test_pure_pursuit_drives_clean_laps(track: str) -> None:
    env = RCCarRace(4, config=RaceConfig(track=track), seed=0)
    driver = PurePursuit()
    report = time_laps(env, lambda obs: driver(env), seed=3, max_time=40.0)
    assert report.off_track == 0 and len(report.flying_laps) == 4 and report.laps == 8
    average_speed = env.track.length / report.mean_flying_lap
    assert 3.0 < average_speed < 8.0
    assert max(report.flying_laps) < min(report.first_laps)  # the first lap starts from at most 2 m/s


def test_pure_pursuit_steers_back_toward_the_center_line() -> None:
    env = RCCarRace(2, config=RaceConfig(track="oval"), seed=0)
    state = torch.zeros(2, 7)
    centre = env.track.point_at(torch.tensor([5.0, 5.0]))  # top straight, driving toward -x
    state[:, X], state[:, Y] = centre[:, 0], centre[:, 1] + torch.tensor([0.4, -0.4])
    state[:, YAW], state[:, VX] = math.pi, 3.0
    env.set_state(state)
    steering = PurePursuit()(env)[:, 0]
    assert steering[0] > 0.05 and steering[1] < -0.05  # outside (+y, its right side): steer left; inside: right
