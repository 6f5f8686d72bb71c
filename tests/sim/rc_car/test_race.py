"""RCCarRace: contract, Gymnasium checker, batching, seeding, laps and lap times, off-track termination,
randomization and latency, resume, rendering, registry."""

from __future__ import annotations

import dataclasses
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from robo_rl.envs import INFO_PRIVILEGED_OBS, INFO_SUCCESS, RenderableEnv, check_step_result
from robo_rl.sim import make
from robo_rl.sim.gymnasium_adapter import GymnasiumEnv, check_task
from robo_rl.sim.rc_car import (
    INFO_LAP_TIME,
    INFO_LAPS,
    INFO_OFF_TRACK,
    INFO_PROGRESS,
    INFO_STALLED,
    RaceConfig,
    RCCarRace,
)
from robo_rl.sim.rc_car.dynamics import STEER, VX, YAW, X, Y
from robo_rl.sim.rc_car.pure_pursuit import PurePursuit
from robo_rl.sim.rc_car.randomization import EPISODE_NAMES, RandomizationConfig
from robo_rl.sim.rc_car.track_shapes import write_track_csv

DEVICES = [
    "cpu",
    pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")),
]
RANDOMIZED = RandomizationConfig(friction=0.3, mass=0.2, min_action_latency=0, max_action_latency=3)
LOOKAHEAD, DYNAMICS, TRACK_PART = slice(0, 20), slice(20, 24), slice(24, 27)


@pytest.fixture
def circle(tmp_path: Path) -> str:
    """Path of a circular track CSV: radius 2 m (12.57 m per lap), 1.2 m wide; quick laps for lap-time tests."""
    angle = np.linspace(0.0, 2 * math.pi, 200, endpoint=False)
    path = tmp_path / "circle.csv"
    write_track_csv(path, 2.0 * np.stack((np.cos(angle), np.sin(angle)), axis=1), np.full(200, 1.2))
    return str(path)


def _random_actions(n: int, steps: int, seed: int) -> torch.Tensor:
    return torch.rand(steps, n, 2, generator=torch.Generator().manual_seed(seed)) * 2 - 1


def _place(
    env: RCCarRace, s: float, offset: float | list[float] = 0.0, heading: float | list[float] = 0.0, speed: float = 0.0
) -> None:
    """Put the cars at arc length `s` m, `offset` m left of the center line, `heading` rad off its direction
    (scalars for every car, or one value per car), at forward speed `speed` m/s."""
    track = env.track
    where = torch.full((env.num_envs,), s)
    offset, heading = torch.as_tensor(offset).expand(env.num_envs), torch.as_tensor(heading).expand(env.num_envs)
    centre, direction = track.point_at(where), track.heading_at(where)
    state = torch.zeros(env.num_envs, 7)
    state[:, X] = centre[:, 0] - offset * torch.sin(direction)
    state[:, Y] = centre[:, 1] + offset * torch.cos(direction)
    state[:, YAW] = direction + heading
    state[:, VX] = speed
    env.set_state(state)


def test_specs_name_every_observation_and_action() -> None:
    env = RCCarRace(3, seed=0)
    assert env.obs_spec.dim == 31 and env.action_spec.dim == 2 and env.privileged_obs_spec.dim == 3
    names = env.obs_spec.names
    assert names[:2] == ("lookahead_1_x", "lookahead_1_y") and names[19] == "lookahead_10_y"
    assert names[DYNAMICS] == ("vx", "vy", "yaw_rate", "steer")
    assert names[TRACK_PART] == ("lateral_offset", "heading_error", "half_width")
    assert names[27:] == ("previous_steering_0", "previous_drive_0", "previous_steering_1", "previous_drive_1")
    assert env.action_spec.names == ("steering", "drive") and env.action_spec.low == (-1.0, -1.0)
    assert env.privileged_obs_spec.names == EPISODE_NAMES
    assert env.dt == 0.02 and env.max_episode_steps == 1500
    short = RCCarRace(2, config=RaceConfig(lookahead_points=4, action_history=0), seed=0)
    assert short.obs_spec.dim == 8 + 7


@pytest.mark.parametrize("device", DEVICES)
def test_step_results_meet_the_contract_with_randomization(device: str) -> None:
    env = RCCarRace(6, device=device, config=RaceConfig(randomization=RANDOMIZED, episode_length=1.0), seed=0)
    for action in _random_actions(6, 80, seed=0).to(device):
        result = env.step(action)
        check_step_result(env, result)
        obs, reward, terminated, truncated, info = result
        assert info[INFO_SUCCESS].dtype == torch.bool and info[INFO_OFF_TRACK].dtype == torch.bool
        assert info[INFO_LAP_TIME].shape == info[INFO_LAPS].shape == info[INFO_PROGRESS].shape == (6,)
        assert torch.equal(info[INFO_OFF_TRACK] | info[INFO_STALLED], terminated)
        assert not (terminated & truncated).any()
        assert torch.isfinite(obs).all() and torch.isfinite(reward).all()
        torch.testing.assert_close(info[INFO_PRIVILEGED_OBS], env.privileged_obs, rtol=0, atol=0)


def test_gymnasium_checker_passes() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_task("rc_car/race")
    assert [str(w.message) for w in caught if "infinity" not in str(w.message)] == []


def test_gymnasium_adapter_resets_reproducibly() -> None:
    env = GymnasiumEnv.from_task("rc_car/race")
    action = np.array([0.2, 0.5], dtype=np.float32)
    first = [env.reset(seed=5)[0], env.reset()[0], env.step(action)[0]]
    again = [env.reset(seed=5)[0], env.reset()[0], env.step(action)[0]]
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], first[1]) and first[0] in env.observation_space


def test_batched_stepping_equals_stepping_each_env_alone() -> None:
    n, steps = 5, 60
    batch = RCCarRace(n, seed=0)
    states = batch.state
    actions = _random_actions(n, steps, seed=1) * torch.tensor([0.3, 1.0])  # gentle steering: stay on track
    results = [batch.step(a) for a in actions]
    assert not any((r[2] | r[3]).any() for r in results), "resets draw different random numbers: avoid them"
    batched = torch.stack([torch.cat((r[0], r[1].unsqueeze(-1)), -1) for r in results])
    for i in range(n):
        alone = RCCarRace(1, seed=100 + i)
        alone.set_state(states[i : i + 1])
        single = torch.stack(
            [torch.cat((r[0], r[1].unsqueeze(-1)), -1) for r in map(alone.step, actions[:, i : i + 1])]
        )
        torch.testing.assert_close(single[:, 0], batched[:, i], rtol=0, atol=1e-5)


def test_same_seed_same_stream_different_seed_differs() -> None:
    config = RaceConfig(episode_length=0.6, randomization=RANDOMIZED)
    actions = _random_actions(8, 100, seed=2)
    runs, episodes = [], []
    for seed in (7, 7, 8):
        env = RCCarRace(8, config=config)
        first = env.reset(seed=seed)
        episodes.append(env.episode_params)
        runs.append(torch.cat([first.unsqueeze(0)] + [env.step(a)[0].unsqueeze(0) for a in actions]))
    torch.testing.assert_close(runs[0], runs[1], rtol=0, atol=0)
    torch.testing.assert_close(episodes[0], episodes[1], rtol=0, atol=0)
    assert not torch.allclose(runs[0], runs[2]) and not torch.allclose(episodes[0], episodes[2])
    from_constructor, fresh = RCCarRace(8, config=config, seed=7), RCCarRace(8, config=config)
    fresh.reset(seed=7)
    torch.testing.assert_close(fresh.state, from_constructor.state, rtol=0, atol=0)


def test_resets_spread_over_the_whole_track_within_the_configured_ranges() -> None:
    config = RaceConfig(init_offset=0.5, init_heading=0.2, init_speed=1.5)
    env = RCCarRace(2000, config=config, seed=0)
    projection, state = env.projection, env.state
    assert projection.s.min() < 0.05 * env.track.length and projection.s.max() > 0.95 * env.track.length
    assert (projection.lateral_offset.abs() <= 0.5 * projection.half_width + 1e-3).all()
    heading_error = torch.remainder(state[:, YAW] - projection.heading + math.pi, 2 * math.pi) - math.pi
    assert heading_error.abs().max() <= 0.2 + 0.02 and heading_error.abs().max() > 0.18
    assert state[:, VX].min() >= 0 and state[:, VX].max() <= 1.5 and state[:, VX].max() > 1.4
    assert (state[:, 4:].abs().max() == 0).item()  # no sideways speed, yaw rate or steering


def test_observation_shows_the_track_ahead_in_the_car_frame() -> None:
    env = RCCarRace(1, config=RaceConfig(track="oval"), seed=0)
    _place(env, s=5.0, offset=0.3, speed=2.0)  # on the top straight (heading -x), 0.3 m left of the center line
    obs = env.step(torch.zeros(1, 2))[0][0]  # straight, speed setpoint 0, for one step
    ahead = obs[LOOKAHEAD].reshape(10, 2)
    spacing = env.config.lookahead_spacing
    # Straight ahead along the body x axis, 0.3 m to the right; the car moved ~4 cm since the projection.
    torch.testing.assert_close(ahead[:, 0], spacing * torch.arange(1, 11.0), atol=0.01, rtol=0)
    torch.testing.assert_close(ahead[:, 1], torch.full((10,), -0.3), atol=1e-4, rtol=0)
    torch.testing.assert_close(obs[TRACK_PART], torch.tensor([0.3, 0.0, 0.8]), atol=1e-4, rtol=0)
    # Drive 0 is a speed setpoint of 0: the ESC's loop brakes at its limit (2 m/s error / tau is far above it).
    braked = 2.0 - env.params.max_deceleration * env.dt
    assert obs[DYNAMICS][0].item() == pytest.approx(braked, abs=1e-4)


def test_reward_is_progress_and_leaving_the_track_terminates_with_a_penalty() -> None:
    config = RaceConfig(track="oval", steering_rate_weight=0.0, off_track_penalty=5.0)
    env = RCCarRace(2, config=config, seed=0)
    _place(env, s=5.0, speed=3.0)
    _, reward, terminated, _, info = env.step(torch.zeros(2, 2))
    torch.testing.assert_close(reward, info[INFO_PROGRESS])
    assert not terminated.any() and info[INFO_PROGRESS].min() > 0.05
    # Car 0 points 90 degrees left of the track and drives off its left border; car 1 follows the track.
    _place(env, s=5.0, offset=[0.6, 0.0], heading=[math.pi / 2, 0.0], speed=3.0)
    for _ in range(20):
        obs, reward, terminated, _, info = env.step(torch.zeros(2, 2))
        if terminated[0]:
            break
    assert terminated.tolist() == [True, False], "a car driving sideways off the track must terminate"
    assert reward[0] < -4.0 and info[INFO_OFF_TRACK][0] and not info[INFO_SUCCESS][0]
    assert info["final_obs"][0, TRACK_PART][0] > 0.8  # the last observation: beyond the left border
    assert obs[0, TRACK_PART][0].abs() <= 0.5 * 0.8 + 1e-4  # the returned one: a fresh start on the track
    assert int(env.state_dict()["steps"][0]) == 0


def test_a_car_standing_still_for_the_stall_time_is_stuck_and_terminates() -> None:
    config = RaceConfig(track="oval", stall_time=1.0, stall_penalty=3.0, steering_rate_weight=0.0)
    env = RCCarRace(2, config=config, seed=0)
    _place(env, s=5.0, speed=0.0)
    brake, go = torch.tensor([0.0, 0.0]), torch.tensor([0.0, 1.0])
    for step in range(1, 51):  # car 0 holds a speed setpoint of 0 at rest, car 1 drives off
        _, reward, terminated, truncated, info = env.step(torch.stack((brake, go)))
        assert not truncated.any() and not info[INFO_OFF_TRACK].any()
        assert info[INFO_STALLED].tolist() == [step == 50, False]
    assert terminated.tolist() == [True, False] and reward[0].item() == pytest.approx(-3.0)
    assert not info[INFO_SUCCESS][0]
    never = RCCarRace(1, config=dataclasses.replace(config, stall_time=0.0), seed=0)
    _place(never, s=5.0, speed=0.0)
    assert not any(never.step(brake.unsqueeze(0))[2].item() for _ in range(60))


def test_lap_times_and_counts_of_cars_driven_around_the_track(circle: str) -> None:
    env = RCCarRace(3, config=RaceConfig(track=circle), seed=0)
    driver = PurePursuit()
    laps: list[list[tuple[int, float]]] = [[], [], []]
    for _ in range(600):
        _, _, terminated, _, info = env.step(driver(env))
        assert not terminated.any()
        for i in torch.nonzero(~torch.isnan(info[INFO_LAP_TIME])).flatten().tolist():
            laps[i].append((int(info[INFO_LAPS][i]), float(info[INFO_LAP_TIME][i])))
        if (env.laps >= 2).all():
            break
    assert [[count for count, _ in car] for car in laps] == [[1, 2]] * 3
    first, flying = [car[0][1] for car in laps], [car[1][1] for car in laps]
    # Pure pursuit aims at 70 % of the friction limit, sqrt(0.7 mu g r) = 3.8 m/s on the 12.57 m circle, and
    # drives a little outside the center line (understeer, the look-ahead): up to 20 % slower laps.
    ideal = 2 * math.pi * 2.0 / math.sqrt(0.7 * env.params.friction * env.params.gravity * 2.0)
    assert all(ideal < lap_time < 1.2 * ideal for lap_time in flying)
    # The first lap starts from at most 2 m/s: slower; flying laps repeat closely.
    assert max(flying) < min(first) and max(flying) - min(flying) < 0.05


def test_a_lap_time_is_the_interpolated_time_of_one_track_length_of_progress(circle: str) -> None:
    env = RCCarRace(1, config=RaceConfig(track=circle), seed=0)
    _place(env, s=3.0, speed=3.0)  # progress counts from here: the episode has just begun
    driver, distance, before, steps = PurePursuit(), 0.0, 0.0, 0
    while steps < 300:
        _, _, _, _, info = env.step(driver(env))
        steps += 1
        before, distance = distance, distance + float(info[INFO_PROGRESS][0])
        if int(info[INFO_LAPS][0]) == 1:
            break
    assert before < env.track.length <= distance
    crossing = (steps - 1 + (env.track.length - before) / (distance - before)) * env.dt
    assert float(info[INFO_LAP_TIME][0]) == pytest.approx(crossing, abs=1e-3)


def test_success_needs_the_time_limit_on_track_and_enough_laps(circle: str) -> None:
    driver = PurePursuit()
    for laps, expected in ((1, True), (2, False)):
        env = RCCarRace(4, config=RaceConfig(track=circle, episode_length=5.0, success_laps=laps), seed=0)
        for _ in range(env.max_episode_steps):
            _, _, terminated, truncated, info = env.step(driver(env))
        assert truncated.all() and not terminated.any()
        assert info[INFO_SUCCESS].tolist() == [expected] * 4 and info[INFO_LAPS].tolist() == [1] * 4
        assert (env.laps == 0).all()  # the next episodes have started


def test_latency_delays_the_action_by_whole_control_steps() -> None:
    for latency in (0, 1, 3):
        randomization = RandomizationConfig(min_action_latency=latency, max_action_latency=latency)
        env = RCCarRace(1, config=RaceConfig(randomization=randomization), seed=0)
        _place(env, s=3.0, speed=2.0)
        wheel = []
        for _ in range(6):
            env.step(torch.tensor([[1.0, 0.0]]))
            wheel.append(float(env.state[0, STEER]))
        moved = [angle > 0 for angle in wheel]
        assert moved == [k >= latency for k in range(6)]
        assert env.privileged_obs[0, 2].item() == latency
    nominal = RCCarRace(1, seed=0)  # the car's own latency: 20 ms = 1 step
    assert nominal.privileged_obs[0].tolist() == pytest.approx([nominal.params.friction, 1.0, 1.0])


def test_randomized_parameters_stay_within_their_ranges_and_change_the_dynamics() -> None:
    env = RCCarRace(4000, config=RaceConfig(randomization=RANDOMIZED), seed=0)
    params = env.episode_params
    mu = env.params.friction
    assert params[:, 0].min() >= 0.7 * mu - 1e-6 and params[:, 0].max() <= 1.3 * mu + 1e-6
    assert params[:, 0].min() < 0.72 * mu and params[:, 0].max() > 1.28 * mu
    assert params[:, 1].min() >= 0.8 and params[:, 1].max() <= 1.2
    assert set(params[:, 2].tolist()) == {0.0, 1.0, 2.0, 3.0}
    torch.testing.assert_close(env.privileged_obs, params)
    # Heavier cars accelerate more slowly from rest under full throttle.
    _place(env, s=3.0)
    for _ in range(10):
        env.step(torch.tensor([[0.0, 1.0]]).expand(env.num_envs, 2))
    speed = env.state[:, VX]
    heavy, light = params[:, 1] > 1.1, params[:, 1] < 0.9
    assert speed[heavy].mean() < speed[light].mean()


def test_state_dict_round_trip_continues_the_same_stream() -> None:
    config = RaceConfig(episode_length=0.5, randomization=RANDOMIZED)
    env = RCCarRace(6, config=config, seed=3)
    actions = _random_actions(6, 60, seed=4)
    for action in actions[:20]:
        env.step(action)
    saved = env.state_dict()
    expected = [env.step(a)[0] for a in actions[20:]]
    other = RCCarRace(6, config=config, seed=99)
    other.load_state_dict(saved)
    replayed = [other.step(a)[0] for a in actions[20:]]
    for a, b in zip(expected, replayed, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_render_draws_a_fixed_size_frame_that_shows_the_car_moving() -> None:
    env = RCCarRace(2, seed=0)
    assert isinstance(env, RenderableEnv)
    first = env.render(0)
    assert first.shape == (480, 640, 3) and first.dtype == np.uint8
    assert len(np.unique(first.reshape(-1, 3), axis=0)) > 20  # track, borders, car, text: not blank
    for _ in range(25):
        env.step(torch.tensor([[0.0, 1.0], [0.0, 1.0]]))
    later, other = env.render(0), env.render(1)
    assert later.shape == other.shape == first.shape
    assert (later != first).any(axis=-1).sum() > 50 and (later != other).any()
    with pytest.raises(IndexError):
        env.render(2)


def test_registry_builds_the_task_with_overrides_and_params() -> None:
    env = make("rc_car/race", num_envs=2, seed=0, params=("randomization.friction=0.2",), track="technical")
    assert isinstance(env, RCCarRace) and env.track.name == "technical"
    assert env.config.randomization.friction == 0.2
    with pytest.raises(ValueError, match="amplitude"):
        make("rc_car/race", num_envs=1, amplitude=1.0)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"dt": 0.0}, "dt"),
        ({"substeps": 0}, "substeps"),
        ({"lookahead_points": 0}, "lookahead_points"),
        ({"init_offset": 1.5}, "init_offset"),
        ({"off_track_penalty": -1.0}, "off_track_penalty"),
        ({"success_laps": 0}, "success_laps"),
    ],
)
def test_config_rejects_bad_values(override: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(RaceConfig(), **override)
    with pytest.raises(ValueError, match="max_action_latency"):
        RandomizationConfig(min_action_latency=2, max_action_latency=1)
    with pytest.raises(ValueError, match="half-ranges"):
        RandomizationConfig(friction=1.0)
