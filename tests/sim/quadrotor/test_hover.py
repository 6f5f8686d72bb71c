"""QuadrotorHover: contract, batching, seeding, auto-reset, success, randomization plumbing, resume, devices."""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pytest
import torch

from robo_rl.envs import INFO_PRIVILEGED_OBS, INFO_SUCCESS, check_step_result
from robo_rl.sim import make
from robo_rl.sim.gymnasium_adapter import GymnasiumEnv, check_task
from robo_rl.sim.quadrotor import (
    CurriculumConfig,
    HoverConfig,
    QuadrotorHover,
    RandomizationConfig,
    pack_state,
    quat_to_rotmat,
)
from robo_rl.sim.quadrotor.randomization import EPISODE_NAMES

DEVICES = [
    "cpu",
    pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")),
]
ALL_RANDOMIZATION = RandomizationConfig(
    mass=0.2,
    inertia=0.2,
    thrust_coefficient=0.1,
    torque_coefficient=0.1,
    motor_time_constant=0.3,
    max_action_latency=2,
    position_noise=0.01,
    velocity_noise=0.02,
    angular_velocity_noise=0.05,
    disturbance_force=0.05,
    disturbance_torque=2e-6,
)
STILL = {
    "init_position_range": 0.0,
    "init_attitude_range": 0.0,
    "init_velocity_range": 0.0,
    "init_angular_velocity_range": 0.0,
}
"""Config overrides that start every episode exactly at the target, level, at rest."""
POSITION_ERROR, ROTATION, VELOCITY, ANGULAR_VELOCITY = slice(0, 3), slice(3, 12), slice(12, 15), slice(15, 18)


def _hover_actions(env: QuadrotorHover) -> torch.Tensor:
    return torch.tensor([env.hover_action], device=env.device).expand(env.num_envs, 4)


def _state_at(position: tuple[float, float, float], n: int, env: QuadrotorHover) -> torch.Tensor:
    """`(n, 17)` states at `position`, level, at rest, rotors at the hover speed."""

    def rows(*values: float) -> torch.Tensor:
        return torch.tensor([values], device=env.device).expand(n, len(values))

    rotor = rows(*[env.params.hover_rotor_speed] * 4)
    return pack_state(rows(*position), rows(1.0, 0.0, 0.0, 0.0), rows(0, 0, 0), rows(0, 0, 0), rotor).T


def _random_actions(env: QuadrotorHover, steps: int, seed: int, scale: float = 0.1) -> torch.Tensor:
    noise = torch.rand(steps, env.num_envs, 4, generator=torch.Generator().manual_seed(seed)) * 2 - 1
    return (torch.tensor(env.hover_action) + scale * noise).to(env.device)


def test_specs_describe_observation_action_and_privileged_parts() -> None:
    env = QuadrotorHover(3, seed=0)
    assert env.obs_spec.dim == 22 and env.action_spec.dim == 4 and env.privileged_obs_spec.dim == 18
    assert env.obs_spec.names[:3] == ("position_error_x", "position_error_y", "position_error_z")
    assert env.obs_spec.names[3] == "rotation_00" and env.obs_spec.names[-4:][0] == "previous_action_0_0"
    assert env.obs_spec.units[VELOCITY.start] == "m/s" and env.obs_spec.units[ANGULAR_VELOCITY.start] == "rad/s"
    assert env.action_spec.low == (-1.0,) * 4 and env.action_spec.high == (1.0,) * 4
    assert env.privileged_obs_spec.names[:14] == EPISODE_NAMES
    assert env.dt == 0.01 and env.max_episode_steps == 500
    longer = QuadrotorHover(2, config=HoverConfig(action_history=3, action_mode="ctbr"), seed=0)
    assert longer.obs_spec.dim == 30 and longer.action_spec.names[0] == "collective_thrust"


@pytest.mark.parametrize(
    ("action_mode", "integrator", "substeps"), [("motor", "rk4", 1), ("ctbr", "semi_implicit_euler", 4)]
)
def test_step_result_meets_the_contract(action_mode: str, integrator: str, substeps: int) -> None:
    config = HoverConfig(
        action_mode=action_mode, integrator=integrator, substeps=substeps, randomization=ALL_RANDOMIZATION
    )
    env = QuadrotorHover(5, config=config, seed=0)
    obs = env.reset(seed=1)
    assert obs.shape == (5, 22) and env.privileged_obs.shape == (5, 18)
    for action in _random_actions(env, 20, seed=0, scale=1.0):
        result = env.step(action)
        check_step_result(env, result)
        _, reward, _, _, info = result
        assert reward.shape == (5,) and info["success"].dtype == torch.bool and info["tracking_error"].shape == (5,)
        torch.testing.assert_close(info["privileged_obs"], env.privileged_obs, rtol=0, atol=0)


@pytest.mark.parametrize("name", ["quadrotor/hover", "quadrotor/track"])
def test_gymnasium_checker_passes(name: str) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_task(name)
    unexpected = [str(w.message) for w in caught if "infinity" not in str(w.message)]
    assert unexpected == []


@pytest.mark.parametrize("name", ["quadrotor/hover", "quadrotor/track"])
def test_gymnasium_adapter_resets_reproducibly(name: str) -> None:
    env = GymnasiumEnv.from_task(name)
    action = env.action_space.sample()
    first = [env.reset(seed=123)[0], env.reset()[0], env.step(action)[0]]
    again = [env.reset(seed=123)[0], env.reset()[0], env.step(action)[0]]
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], first[1])
    assert first[0] in env.observation_space


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"action_mode": "rpm"}, "action_mode"),
        ({"integrator": "euler"}, "integrator"),
        ({"dt": 0.0}, "dt"),
        ({"substeps": 0}, "substeps"),
        ({"position_weight": -1.0}, "position_weight"),
    ],
)
def test_config_rejects_bad_values(override: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        HoverConfig(**override)


def test_integration_step_must_resolve_the_motor_lag() -> None:
    with pytest.raises(ValueError, match="substeps"):
        QuadrotorHover(1, config=HoverConfig(frame="px4_x500", dt=0.02))
    QuadrotorHover(1, config=HoverConfig(frame="px4_x500", dt=0.02, substeps=2), seed=0)


def test_registry_builds_both_tasks_with_overrides() -> None:
    env = make("quadrotor/hover", num_envs=4, seed=0, action_mode="ctbr", episode_length=1.0)
    assert isinstance(env, QuadrotorHover) and env.max_episode_steps == 100
    assert env.action_spec.names == ("collective_thrust", "roll_rate", "pitch_rate", "yaw_rate")
    track = make("quadrotor/track", num_envs=2, seed=0, amplitude=0.5, frame="px4_x500")
    assert track.obs_spec.dim == 25
    with pytest.raises(ValueError, match="amplitude"):
        make("quadrotor/hover", num_envs=1, amplitude=0.5)


def test_batched_stepping_equals_stepping_each_env_alone() -> None:
    n, steps = 6, 50
    config = HoverConfig(episode_length=10.0)
    generator = torch.Generator().manual_seed(3)
    batch = QuadrotorHover(n, config=config, seed=0)
    states = batch.state
    states[:, 0:3] = (torch.rand(n, 3, generator=generator) - 0.5) * 0.6
    states[:, 3:7] = torch.nn.functional.normalize(torch.tensor([1.0, 0, 0, 0]) + 0.1 * torch.randn(n, 4), dim=-1)
    states[:, 7:13] = torch.randn(n, 6, generator=generator) * 0.5
    batch.set_state(states)
    actions = _random_actions(batch, steps, seed=4, scale=0.02)
    results = [batch.step(a) for a in actions]
    assert not any((r[2] | r[3]).any() for r in results), "resets draw different random numbers: avoid them"
    batched = torch.stack([r[0] for r in results])
    for i in range(n):
        alone = QuadrotorHover(1, config=config, seed=100 + i)
        alone.set_state(states[i : i + 1])
        single = torch.stack([alone.step(a[i : i + 1])[0] for a in actions])
        torch.testing.assert_close(single[:, 0], batched[:, i], rtol=0, atol=1e-5)


def _rollout(env: QuadrotorHover, actions: torch.Tensor) -> torch.Tensor:
    return torch.stack([torch.cat((step[0], step[1].unsqueeze(-1)), -1) for step in map(env.step, actions)])


def test_same_seed_same_randomization_and_trajectories_different_seed_differs() -> None:
    config = HoverConfig(episode_length=0.5, randomization=ALL_RANDOMIZATION)
    actions = _random_actions(QuadrotorHover(8, config=config, seed=0), 150, seed=5, scale=0.5)
    runs, episodes = [], []
    for seed in (7, 7, 8):
        env = QuadrotorHover(8, config=config)
        first = env.reset(seed=seed)
        episodes.append(env.episode_params)
        runs.append(torch.cat((first.unsqueeze(0), _rollout(env, actions)[..., :-1])))
    torch.testing.assert_close(episodes[0], episodes[1], rtol=0, atol=0)
    torch.testing.assert_close(runs[0], runs[1], rtol=0, atol=0)
    assert not torch.allclose(episodes[0], episodes[2]) and not torch.allclose(runs[0], runs[2])
    assert (episodes[0][:, 0] != 1.0).all(), "mass is randomized per env"
    assert len(set(episodes[0][:, 0].tolist())) == 8


def test_constructor_seed_equals_reset_seed() -> None:
    config = HoverConfig(randomization=ALL_RANDOMIZATION)
    env = QuadrotorHover(4, config=config)
    torch.testing.assert_close(env.reset(seed=11), QuadrotorHover(4, config=config, seed=11).reset(seed=11))
    from_constructor = QuadrotorHover(4, config=config, seed=11)
    env.reset(seed=11)
    torch.testing.assert_close(env.state, from_constructor.state, rtol=0, atol=0)


def test_initial_states_lie_within_the_configured_ranges() -> None:
    env = QuadrotorHover(2000, seed=0)
    state = env.state
    assert state[:, 0:3].abs().max() <= 0.5 and state[:, 0:3].abs().max() > 0.45
    tilt = torch.acos(quat_to_rotmat(state[:, 3:7])[:, 2, 2].clamp(-1, 1))
    angle = 2 * torch.acos(state[:, 3].clamp(-1, 1))
    assert angle.max() <= math.radians(30) + 1e-5 and tilt.max() > math.radians(25)
    assert state[:, 7:10].abs().max() <= 1.0 and state[:, 10:13].abs().max() <= 2.0
    torch.testing.assert_close(state[:, 13:17], torch.full((2000, 4), env.params.hover_rotor_speed))


def test_crash_terminates_and_auto_resets_with_final_obs() -> None:
    env = QuadrotorHover(4, seed=0)
    states = env.state
    states[1, 0] = 3.0  # beyond max_position_error = 2 m
    env.set_state(states)
    before_rotor = env.privileged_obs[1, 14:].clone()
    obs, reward, terminated, truncated, info = env.step(_hover_actions(env))
    assert terminated.tolist() == [False, True, False, False] and not truncated.any()
    assert info["final_obs"][1, 0].item() == pytest.approx(3.0, abs=0.05)
    assert obs[1, POSITION_ERROR].abs().max() <= 0.5, "the returned obs starts the next episode"
    keep = torch.tensor([True, False, True, True])
    torch.testing.assert_close(obs[keep], info["final_obs"][keep], rtol=0, atol=0)
    torch.testing.assert_close(info["final_privileged_obs"][1, 14:], before_rotor, rtol=1e-3, atol=0)
    assert not info["success"].any()
    assert reward[1] < reward[keep].min() - 4.0, "the crash penalty is charged"


@pytest.mark.parametrize(
    ("override", "column", "value"),
    [({}, 3, 0.0), ({"floor_height": -0.5}, 2, -0.6), ({}, 10, 36.0)],  # upside down, below the floor, spinning
)
def test_other_crash_conditions(override: dict, column: int, value: float) -> None:
    env = QuadrotorHover(1, config=HoverConfig(**STILL, **override), seed=0)
    state = env.state
    state[0, column] = value
    if column == 3:
        state[0, 3:7] = torch.tensor([0.0, 1.0, 0.0, 0.0])  # rolled by pi
    env.set_state(state)
    assert env.step(_hover_actions(env))[2].item()


def test_truncation_after_max_episode_steps_and_reward_at_the_target() -> None:
    env = QuadrotorHover(3, config=HoverConfig(**STILL, episode_length=0.5), seed=0)
    for t in range(50):
        _, reward, terminated, truncated, info = env.step(_hover_actions(env))
        assert not terminated.any() and bool(truncated.all()) is (t == 49)
        torch.testing.assert_close(
            reward, torch.full((3,), env.config.alive_reward), rtol=0, atol=1e-6
        )  # alive reward, no cost
    assert info["success"].all() and env.episode_time.eq(0).all()


def _success_after(env: QuadrotorHover, positions: list[tuple[float, float, float]]) -> tuple[bool, bool]:
    """Place the quad at each position for one second in turn; returns (truncated, success) at the end."""
    for position in positions:
        env.set_state(_state_at(position, 1, env))
        for _ in range(100):
            _, _, terminated, truncated, info = env.step(_hover_actions(env))
            assert not terminated.any()
    return bool(truncated[0]), bool(info["success"][0])


@pytest.mark.parametrize(
    ("positions", "success"),
    [
        ([(0.0, 0.0, 0.0)], True),
        ([(0.05, 0.05, 0.0)], True),  # 7 cm off
        ([(0.3, 0.0, 0.0)], False),
        ([(1.0, 0.0, 0.0), (0.0, 0.0, 0.0)], True),  # only the last second counts
        ([(0.0, 0.0, 0.0), (0.0, 0.2, 0.0)], False),
    ],
)
def test_success_is_mean_position_error_over_the_last_second(positions: list, success: bool) -> None:
    env = QuadrotorHover(1, config=HoverConfig(**STILL, episode_length=len(positions) * 1.0), seed=0)
    assert _success_after(env, positions) == (True, success)


def test_observation_holds_rotation_matrix_and_action_history() -> None:
    env = QuadrotorHover(4, config=HoverConfig(action_history=2), seed=0)
    quaternion = env.state[:, 3:7]
    actions = _random_actions(env, 2, seed=1)
    env.step(actions[0])
    obs = env.step(actions[1])[0]
    torch.testing.assert_close(obs[:, -8:-4], actions[1], rtol=0, atol=0)
    torch.testing.assert_close(obs[:, -4:], actions[0], rtol=0, atol=0)
    expected = quat_to_rotmat(env.state[:, 3:7]).reshape(4, 9)
    torch.testing.assert_close(obs[:, ROTATION], expected, rtol=0, atol=1e-6)
    assert not torch.allclose(quat_to_rotmat(quaternion).reshape(4, 9), expected)


def test_randomized_mass_and_thrust_change_the_hover_acceleration() -> None:
    config = HoverConfig(**STILL, randomization=RandomizationConfig(mass=0.3, thrust_coefficient=0.2))
    env = QuadrotorHover(64, config=config, seed=0)
    episode = env.episode_params
    mass_scale, thrust_scale = episode[:, 0], episode[:, 4]
    obs = env.step(_hover_actions(env))[0]
    # Hover action: thrust = c_t scale x nominal weight on a mass of m scale x nominal mass (constant for one step).
    expected = 9.81 * (thrust_scale / mass_scale - 1) * 0.01
    torch.testing.assert_close(obs[:, 14], expected, rtol=1e-3, atol=1e-5)
    assert (mass_scale - 1).abs().max() <= 0.3 and (mass_scale - 1).abs().max() > 0.25


def test_disturbances_accelerate_as_recorded_in_the_privileged_observation() -> None:
    config = HoverConfig(**STILL, randomization=RandomizationConfig(disturbance_force=0.2, disturbance_torque=1e-5))
    env = QuadrotorHover(64, config=config, seed=0)
    acceleration, angular = env.privileged_obs[:, 8:11], env.privileged_obs[:, 11:14]
    assert acceleration.abs().max() <= 0.2 * 9.81 and acceleration.abs().max() > 0.15 * 9.81
    obs = env.step(_hover_actions(env))[0]
    torch.testing.assert_close(obs[:, VELOCITY], acceleration * 0.01, rtol=2e-2, atol=1e-4)
    torch.testing.assert_close(obs[:, ANGULAR_VELOCITY], angular * 0.01, rtol=1e-2, atol=1e-4)


def test_action_latency_delays_the_rotor_response_by_whole_steps() -> None:
    env = QuadrotorHover(64, config=HoverConfig(**STILL, randomization=RandomizationConfig(max_action_latency=3)))
    env.reset(seed=0)
    latency = env.privileged_obs[:, 7]
    assert set(latency.tolist()) == {0.0, 1.0, 2.0, 3.0}
    hover_speed = env.params.hover_rotor_speed / env.params.max_rotor_speed
    full = torch.ones(64, 4)
    for t in range(1, 5):
        env.step(full)
        rotor = env.privileged_obs[:, 14:].min(-1).values
        torch.testing.assert_close(rotor > hover_speed + 0.01, latency < t)


def test_observation_noise_has_the_configured_spread() -> None:
    noise = RandomizationConfig(position_noise=0.05, velocity_noise=0.1, angular_velocity_noise=0.2)
    env = QuadrotorHover(4000, config=HoverConfig(**STILL, randomization=noise), seed=0)
    obs = env.step(_hover_actions(env))[0]
    for columns, std in ((POSITION_ERROR, 0.05), (VELOCITY, 0.1), (ANGULAR_VELOCITY, 0.2)):
        assert obs[:, columns].std().item() == pytest.approx(std, rel=0.05)
    torch.testing.assert_close(obs[:, ROTATION], torch.eye(3).reshape(1, 9).expand(4000, 9), rtol=0, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_state_dict_round_trip_continues_identically(device: str) -> None:
    config = HoverConfig(episode_length=0.3, randomization=ALL_RANDOMIZATION)
    env = QuadrotorHover(16, device=device, config=config, seed=5)
    actions = _random_actions(env, 120, seed=9, scale=0.5)
    _rollout(env, actions[:45])
    saved = env.state_dict()
    expected = _rollout(env, actions[45:])
    resumed = QuadrotorHover(16, device=device, config=config, seed=123)
    resumed.load_state_dict(saved)
    torch.testing.assert_close(_rollout(resumed, actions[45:]), expected, rtol=0, atol=0)


@pytest.mark.parametrize("device", DEVICES)
def test_device_trajectory_matches_cpu(device: str) -> None:
    trajectories = []
    for dev in ("cpu", device):
        env = QuadrotorHover(32, device=dev, config=HoverConfig(episode_length=10.0), seed=0)
        env.set_state(QuadrotorHover(32, seed=1).state.to(dev))
        obs = torch.stack([env.step(a)[0] for a in _random_actions(env, 50, seed=2)])
        assert obs.device.type == torch.device(dev).type
        trajectories.append(obs.cpu())
    torch.testing.assert_close(trajectories[1], trajectories[0], rtol=0, atol=1e-4)


def test_compiled_step_matches_eager_in_one_graph() -> None:
    """`HoverConfig(compile=True)` fuses the step with torch.compile: one graph, no graph break, the same
    trajectories, resets, randomization and curriculum (a tensor fraction) as eager stepping."""
    from torch._dynamo.utils import counters

    curriculum = CurriculumConfig(steps=1000, initial_fraction=0.5)
    config = HoverConfig(episode_length=0.3, randomization=ALL_RANDOMIZATION, curriculum=curriculum)
    compiled_config = dataclasses.replace(config, compile=True)
    counters.clear()
    results = []
    for cfg in (config, compiled_config):
        env = QuadrotorHover(32, config=cfg, seed=4)
        steps = [env.step(a) for a in _random_actions(env, 80, seed=6, scale=0.5)]
        results.append(
            [torch.stack([s[i] for s in steps]).float() for i in range(4)]
            + [torch.stack([s[4][key] for s in steps]).float() for key in (INFO_SUCCESS, INFO_PRIVILEGED_OBS)]
        )
        assert env.curriculum_fraction == pytest.approx(0.5 + 0.5 * 80 / 1000)
    assert counters["stats"]["unique_graphs"] == 1 and not counters["graph_break"]
    assert results[0][2].sum() + results[0][3].sum() > 32  # several resets happened
    for eager, compiled in zip(*results, strict=True):
        torch.testing.assert_close(compiled, eager, rtol=1e-4, atol=1e-4)
