"""PyBullet racecar goal task: contract, Gymnasium checker, batching, seeding, auto-reset, physics, rendering."""

from __future__ import annotations

import gc
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from robo_rl.envs import BatchedEnv, RenderableEnv, check_step_result
from robo_rl.sim import make
from robo_rl.sim.gymnasium_adapter import check_task
from robo_rl.sim.pybullet import RacecarGoal, RacecarGoalConfig
from robo_rl.sim.pybullet.racecar_goal import planar_features
from robo_rl.sim.pybullet.racecar_world import RAW_DIM, WHEELBASE

TASK = "pybullet/racecar_goal"
DEVICES = [
    "cpu",
    pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")),
]
AHEAD = {"goal_bearing_range": 0.0, "init_speed_range": 0.0}
"""Goal straight ahead of a car at rest."""
GOAL_FORWARD, GOAL_LEFT, FORWARD_SPEED, LATERAL_SPEED, YAW_RATE, STEERING = range(6)


def _random_actions(steps: int, num_envs: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    unit = torch.rand(steps, num_envs, 2, generator=generator) * 2 - 1
    return unit * torch.tensor([2.0, 0.5])


def _constant(num_envs: int, speed: float, steering: float) -> torch.Tensor:
    return torch.tensor([[speed, steering]]).repeat(num_envs, 1)


def _distance(obs: torch.Tensor) -> torch.Tensor:
    return obs[:, :2].double().norm(dim=-1)


def _yaw(env: RacecarGoal) -> float:
    x, y, z, w = env.raw_states()[0, 3:7].double().tolist()
    return math.atan2(2 * (x * y + z * w), 1 - 2 * (y * y + z * z))


def test_package_does_not_shadow_the_real_pybullet() -> None:
    import pybullet

    import robo_rl.sim.pybullet as backend

    assert pybullet.__name__ == "pybullet" and callable(pybullet.connect)
    assert Path(backend.__file__).parent not in Path(pybullet.__file__).resolve().parents
    env = make(TASK, 1, seed=0)
    assert pybullet.getConnectionInfo(physicsClientId=env.client_ids[0])["isConnected"] == 1


def test_gymnasium_env_checker_passes() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_task(TASK)
    # Actions are in SI units (not normalized) and observations are unbounded: advice, not API violations.
    advisory = ("symmetric and normalized space", "is -infinity", "is infinity")
    assert [str(w.message) for w in caught if not any(a in str(w.message) for a in advisory)] == []


@pytest.mark.parametrize("device", DEVICES)
def test_step_result_meets_the_contract(device: str) -> None:
    env = make(TASK, 3, device=device, seed=0)
    assert isinstance(env, BatchedEnv) and isinstance(env, RenderableEnv)
    result = env.step(_constant(3, 1.0, 0.2).to(device))
    check_step_result(env, result)
    assert result[0].device.type == torch.device(device).type and result[0].dtype == torch.float32
    assert result[4]["success"].dtype == torch.bool and result[4]["success"].device.type == torch.device(device).type
    assert env.obs_spec.names == (
        "goal_forward",
        "goal_left",
        "forward_speed",
        "lateral_speed",
        "yaw_rate",
        "steering_angle",
    )
    assert env.obs_spec.units == ("m", "m", "m/s", "m/s", "rad/s", "rad")
    assert env.action_spec.names == ("speed", "steering_angle") and env.action_spec.units == ("m/s", "rad")
    assert env.action_spec.low == (-2.0, -0.5) and env.action_spec.high == (2.0, 0.5)
    assert env.dt == pytest.approx(0.05) and env.max_episode_steps == 200 and env.privileged_obs_spec is None


def test_actions_are_clipped_to_the_bounds() -> None:
    outcomes = []
    for action in ((5.0, 3.0), (2.0, 0.5)):
        env = make(TASK, 2, seed=4)
        outcomes.append([env.step(_constant(2, *action))[0] for _ in range(5)])
    for beyond, at_bound in zip(*outcomes, strict=True):
        torch.testing.assert_close(beyond, at_bound, atol=0, rtol=0)


def test_batch_equals_separate_envs_seeded_seed_plus_index() -> None:
    config = RacecarGoalConfig(episode_length=0.5, goal_distance_range=(0.5, 1.0))
    batch = RacecarGoal(3, config=config, seed=11)
    singles = [RacecarGoal(1, config=config, seed=11 + i) for i in range(3)]
    actions = _random_actions(25, 3, seed=1)
    done_count = 0
    for action in actions:
        batched = batch.step(action)
        separate = [single.step(action[i : i + 1]) for i, single in enumerate(singles)]
        for k in range(4):
            torch.testing.assert_close(batched[k], torch.cat([s[k] for s in separate]), atol=0, rtol=0)
        for key in ("final_obs", "success"):
            torch.testing.assert_close(batched[4][key], torch.cat([s[4][key] for s in separate]), atol=0, rtol=0)
        done_count += int((batched[2] | batched[3]).sum())
    assert done_count >= 6, "the comparison covers auto-resets"


def test_same_seed_same_stream_and_reset_forgets_the_past() -> None:
    config = RacecarGoalConfig(episode_length=0.5)
    actions = _random_actions(30, 4, seed=2)
    runs = []
    for seed in (3, 3, 4):
        env = RacecarGoal(4, config=config, seed=seed)
        first = env.reset(seed=seed)
        runs.append(torch.stack([first, *[env.step(a)[0] for a in actions]]))
    torch.testing.assert_close(runs[0], runs[1], atol=0, rtol=0)
    assert not torch.allclose(runs[0], runs[2])
    # After 30 steps of physics in the same clients, reseeding reproduces the first episode exactly.
    again = torch.stack([env.reset(seed=4), *[env.step(a)[0] for a in actions[:5]]])
    torch.testing.assert_close(again, runs[2][:6], atol=0, rtol=0)


def test_time_limit_truncates_and_auto_resets_with_final_obs() -> None:
    low, high = 1.0, 3.0
    env = make(TASK, 4, seed=5, episode_length=0.25, goal_distance_range=(low, high))
    for t in range(5):
        obs, _, terminated, truncated, info = env.step(torch.zeros(4, 2))
        assert not terminated.any()
        if t < 4:
            assert not truncated.any()
            torch.testing.assert_close(info["final_obs"], obs, atol=0, rtol=0)
    assert truncated.all() and not info["success"].any()
    assert (obs - info["final_obs"]).abs().amax() > 1e-2, "the returned obs starts a new episode"
    # A fresh episode: car near the origin, at most init_speed_range fast, goal at a distance within the range.
    assert ((_distance(obs) > low - 0.01) & (_distance(obs) < high + 0.01)).all()
    assert (obs[:, FORWARD_SPEED].abs() <= 0.5 + 1e-3).all()
    assert not env.step(torch.zeros(4, 2))[3].any(), "step counters restart after the reset"


def test_reaching_the_goal_terminates_with_success_and_the_goal_reward() -> None:
    config = RacecarGoalConfig(goal_distance_range=(0.6, 0.6), **AHEAD)
    env = RacecarGoal(2, config=config, seed=0)
    previous, steps = env.reset(seed=0), 0
    for steps in range(1, 40):  # noqa: B007 (the count is checked after the loop)
        obs, reward, terminated, truncated, info = env.step(_constant(2, 1.0, 0.0))
        if terminated.any():
            break
        previous = obs
    # ~0.4 m to cover at ~1 m/s: about 8 steps of 0.05 s (plus the start from rest).
    assert terminated.all() and info["success"].all() and not truncated.any() and 7 <= steps <= 14
    final = info["final_obs"]
    assert (_distance(final) <= config.goal_radius).all()
    expected = config.progress_weight * (_distance(previous) - _distance(final)) - config.time_penalty
    torch.testing.assert_close(reward.double(), expected + config.goal_reward, atol=1e-4, rtol=0)
    torch.testing.assert_close(_distance(obs), torch.full((2,), 0.6, dtype=torch.float64), atol=0.01, rtol=0)


def test_leaving_the_goal_behind_is_a_crash() -> None:
    config = RacecarGoalConfig(goal_distance_range=(1.0, 1.0), max_goal_distance=1.3, **AHEAD)
    env = RacecarGoal(1, config=config, seed=0)
    previous = env.reset(seed=0)
    for _ in range(20):
        obs, reward, terminated, _, info = env.step(_constant(1, -2.0, 0.0))
        if terminated.any():
            break
        previous = obs
    assert terminated.all() and not info["success"].any()
    final = info["final_obs"]
    assert (_distance(final) > 1.3).all()
    expected = config.progress_weight * (_distance(previous) - _distance(final)) - config.time_penalty
    torch.testing.assert_close(reward.double(), expected - config.crash_penalty, atol=1e-4, rtol=0)


@pytest.mark.parametrize("speed", [1.0, -1.0])
def test_driving_straight_covers_speed_times_time(speed: float) -> None:
    config = RacecarGoalConfig(goal_distance_range=(3.0, 3.0), max_goal_distance=5.9, **AHEAD)
    env = RacecarGoal(2, config=config, seed=1)
    start, start_yaw = env.reset(seed=1), _yaw(env)
    trace = [start] + [env.step(_constant(2, speed, 0.0))[0] for _ in range(40)]
    # Wheels roll at speed / radius; after the first second the car moves at about that speed.
    torch.testing.assert_close(trace[-1][:, FORWARD_SPEED], torch.full((2,), speed), atol=0.05, rtol=0)
    covered = trace[20][:, GOAL_FORWARD] - trace[40][:, GOAL_FORWARD]  # 1 s at 1 m/s: 1 m
    torch.testing.assert_close(covered, torch.full((2,), speed), atol=0.05, rtol=0)
    # Wheel spin while accelerating from rest yaws the car a little; then it runs straight.
    assert abs(math.remainder(_yaw(env) - start_yaw, 2 * math.pi)) < 0.1
    assert (trace[-1][:, LATERAL_SPEED].abs() < 0.05).all() and (trace[-1][:, YAW_RATE].abs() < 0.05).all()


@pytest.mark.parametrize("steering", [0.3, -0.3])
def test_steering_turns_at_about_the_bicycle_model_rate(steering: float) -> None:
    env = make(TASK, 1, seed=2, init_speed_range=0.0)
    action = _constant(1, 1.0, steering)
    for _ in range(20):
        env.step(action)
    turned, kinematic, yaw = 0.0, 0.0, _yaw(env)
    for _ in range(40):  # 2 s
        obs = env.step(action)[0][0]
        turned += math.remainder(_yaw(env) - yaw, 2 * math.pi)
        yaw = _yaw(env)
        kinematic += obs[FORWARD_SPEED].item() * math.tan(obs[STEERING].item()) / WHEELBASE * env.dt
    assert obs[STEERING].item() == pytest.approx(steering, abs=0.02)
    assert math.copysign(1.0, turned) == math.copysign(1.0, steering), "positive steering turns left"
    # A kinematic bicycle turns by v tan(steering) / wheelbase per s; tyre slip makes the car turn a bit less.
    assert 0.75 * abs(kinematic) < abs(turned) < 1.05 * abs(kinematic)


def test_planar_features_match_hand_computed_geometry() -> None:
    raw = np.zeros((2, RAW_DIM))
    # Car 0 at (1, 1) heading +y (yaw 90 deg), moving at 2 m/s along +y, turning at 0.5 rad/s, steered 0.1 / 0.3.
    raw[0, 0:3] = (1.0, 1.0, 0.0)
    raw[0, 3:7] = (0.0, 0.0, math.sin(math.pi / 4), math.cos(math.pi / 4))
    raw[0, 7:10] = (0.0, 2.0, 0.0)
    raw[0, 12] = 0.5
    raw[0, 13:15] = (0.1, 0.3)
    # Car 1 at the origin heading +x, rolled by 60 deg about x.
    raw[1, 3:7] = (math.sin(math.pi / 6), 0.0, 0.0, math.cos(math.pi / 6))
    goals = np.array([[-2.0, 4.0], [1.0, -1.0]])
    features = planar_features(raw, goals)
    # Car 0: the goal is 3 m ahead (+y) and 3 m to its right (-x, left is -x when heading +y).
    np.testing.assert_allclose(features.obs[0], [3.0, 3.0, 2.0, 0.0, 0.5, 0.2], atol=1e-12)
    np.testing.assert_allclose(features.obs[1, :2], [1.0, -1.0], atol=1e-12)
    np.testing.assert_allclose(features.distance, [math.sqrt(18.0), math.sqrt(2.0)], atol=1e-12)
    np.testing.assert_allclose(features.up_z, [1.0, 0.5], atol=1e-12)


def test_render_returns_fixed_size_frames_that_follow_the_car() -> None:
    env = make(TASK, 2, seed=3, init_speed_range=0.0)
    first = env.render(1)
    assert first.shape == (240, 320, 3) and first.dtype == np.uint8
    assert first.std() > 10 and len(np.unique(first.reshape(-1, 3), axis=0)) > 20, "a scene, not a blank frame"
    for _ in range(10):
        env.step(_constant(2, 2.0, 0.3))
    moved = env.render(1)
    assert moved.shape == first.shape
    assert np.abs(moved.astype(int) - first.astype(int)).mean() > 1.0, "the ground moves past the chase camera"
    small = make(TASK, 1, seed=3, render_width=64, render_height=48)
    assert small.render().shape == (48, 64, 3)
    with pytest.raises(IndexError, match="out of range"):
        env.render(2)


def _red_mask(frame: np.ndarray) -> np.ndarray:
    r, g, b = (frame[..., i].astype(int) for i in range(3))
    return (r > 80) & (r > 2.5 * np.maximum(g, b))


def test_chase_camera_looks_where_the_car_heads() -> None:
    masks = []
    for distance in (1.0, 5.0):
        env = make(TASK, 1, seed=3, goal_distance_range=(distance, distance), **AHEAD)
        masks.append(_red_mask(env.render()))
    near, far = masks
    # The red goal disc 1 m ahead is large in the frame; 5 m ahead only the car's few red parts remain, about.
    assert near.sum() > 2 * far.sum()
    # The disc is beyond the car, not between the camera and the car (the bottom third of the frame).
    assert near[2 * near.shape[0] // 3 :].sum() == 0


def test_close_and_garbage_collection_release_the_clients() -> None:
    import pybullet

    def connected(client: int) -> bool:
        return bool(pybullet.getConnectionInfo(physicsClientId=client)["isConnected"])

    env = make(TASK, 2, seed=0)
    clients = env.client_ids
    assert all(connected(c) for c in clients)
    env.close()
    env.close()
    assert not any(connected(c) for c in clients) and env.client_ids == [-1, -1]
    collected = make(TASK, 2, seed=0)
    clients = collected.client_ids
    del collected
    gc.collect()
    assert not any(connected(c) for c in clients)


def test_registry_params_reach_the_config() -> None:
    env = make(TASK, 2, seed=0, params=["frame_skip=2", "time_step=0.005", "episode_length=1.0"])
    assert isinstance(env, RacecarGoal)
    assert env.dt == pytest.approx(0.01) and env.max_episode_steps == 100


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("time_step", 0.0),
        ("frame_skip", 0),
        ("frame_skip", 2.0),
        ("num_solver_iterations", 0),
        ("max_speed", 6.0),
        ("max_steering_angle", 1.2),
        ("init_speed_range", -0.1),
        ("goal_bearing_range", 4.0),
        ("goal_distance_range", (0.1, 1.0)),
        ("goal_distance_range", (2.0, 1.0)),
        ("goal_distance_range", (1.0, 7.0)),
        ("progress_weight", -1.0),
        ("render_width", 0),
        ("episode_length", 0.01),
    ],
)
def test_config_rejects_bad_values_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        RacecarGoalConfig(**{field: value})


def test_rejects_bad_num_envs_and_seed() -> None:
    for num_envs in (0, 1025):  # 1025: beyond PyBullet's 1024 clients, refused before connecting any
        with pytest.raises(ValueError, match="num_envs"):
            RacecarGoal(num_envs)
    env = RacecarGoal(1, seed=0)
    with pytest.raises(ValueError, match="seed"):
        env.reset(seed=-1)
