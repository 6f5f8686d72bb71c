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
    """`(n, 17)` states at `position`, level, at rest, motors at the hover command."""

    def rows(*values: float) -> torch.Tensor:
        return torch.tensor([values], device=env.device).expand(n, len(values))

    rotor = rows(*[env.params.hover_command] * 4)
    return pack_state(rows(*position), rows(1.0, 0.0, 0.0, 0.0), rows(0, 0, 0), rows(0, 0, 0), rotor).T


def _random_actions(env: QuadrotorHover, steps: int, seed: int, scale: float = 0.1) -> torch.Tensor:
    noise = torch.rand(steps, env.num_envs, 4, generator=torch.Generator().manual_seed(seed)) * 2 - 1
    return (torch.tensor(env.hover_action) + scale * noise).to(env.device)


def test_specs_describe_observation_action_and_privileged_parts() -> None:
    env = QuadrotorHover(3, seed=0)
    assert env.obs_spec.dim == 22 and env.action_spec.dim == 4 and env.privileged_obs_spec.dim == 22
    assert env.obs_spec.names[:3] == ("position_error_x", "position_error_y", "position_error_z")
    assert env.obs_spec.names[3] == "rotation_00" and env.obs_spec.names[-4:][0] == "previous_action_0_0"
    assert env.obs_spec.units[VELOCITY.start] == "m/s" and env.obs_spec.units[ANGULAR_VELOCITY.start] == "rad/s"
    assert env.action_spec.low == (-1.0,) * 4 and env.action_spec.high == (1.0,) * 4
    assert env.privileged_obs_spec.names[:18] == EPISODE_NAMES
    assert env.privileged_obs_spec.names[18:] == tuple(f"motor_state_{i}" for i in range(4))
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
    assert obs.shape == (5, 22) and env.privileged_obs.shape == (5, 22)
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
    torch.testing.assert_close(state[:, 13:17], torch.full((2000, 4), env.params.hover_command))


def test_crash_terminates_and_auto_resets_with_final_obs() -> None:
    env = QuadrotorHover(4, seed=0)
    states = env.state
    states[1, 0] = 3.0  # beyond max_position_error = 2 m
    env.set_state(states)
    before_rotor = env.privileged_obs[1, 18:].clone()
    obs, reward, terminated, truncated, info = env.step(_hover_actions(env))
    assert terminated.tolist() == [False, True, False, False] and not truncated.any()
    assert info["final_obs"][1, 0].item() == pytest.approx(3.0, abs=0.05)
    assert obs[1, POSITION_ERROR].abs().max() <= 0.5, "the returned obs starts the next episode"
    keep = torch.tensor([True, False, True, True])
    torch.testing.assert_close(obs[keep], info["final_obs"][keep], rtol=0, atol=0)
    torch.testing.assert_close(info["final_privileged_obs"][1, 18:], before_rotor, rtol=1e-3, atol=0)
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


@pytest.mark.parametrize("backend", ["torch", "numba"])
def test_reward_floor_keeps_a_flying_step_at_the_floor_and_charges_the_crash_after_it(backend: str) -> None:
    """Worked by hand with the default weights (alive 2, |e|^2 and |e| at 1 each), at rest with the hover command so
    that every other term is 0: 0.5 m off, 2 - 0.25 - 0.5 = 1.25 with or without the floor; 1.5 m off, 2 - 2.25 - 1.5
    = -1.75, floored to 0; 2.5 m off (past max_position_error 2: a crash), 2 - 6.25 - 2.5 - 20 = -26.75, floored
    to 0 - 20."""
    if backend == "numba":
        pytest.importorskip("numba")
    positions = [(0.5, 0.0, 0.0), (0.0, 1.5, 0.0), (0.0, 0.0, -2.5)]
    expected = {None: [1.25, -1.75, -26.75], 0.0: [1.25, 0.0, -20.0]}
    for floor, rewards in expected.items():
        config = HoverConfig(**STILL, crash_penalty=20.0, reward_floor=floor, backend=backend)  # type: ignore[arg-type]
        env = QuadrotorHover(3, config=config, seed=0)
        state = torch.cat([_state_at(position, 1, env) for position in positions])
        env.set_state(state)
        _, reward, terminated, _, _ = env.step(_hover_actions(env))
        assert terminated.tolist() == [False, False, True]
        torch.testing.assert_close(reward, torch.tensor(rewards), rtol=0, atol=2e-4)


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
    acceleration, angular = env.privileged_obs[:, 12:15], env.privileged_obs[:, 15:18]
    assert acceleration.abs().max() <= 0.2 * 9.81 and acceleration.abs().max() > 0.15 * 9.81
    obs = env.step(_hover_actions(env))[0]
    torch.testing.assert_close(obs[:, VELOCITY], acceleration * 0.01, rtol=2e-2, atol=1e-4)
    torch.testing.assert_close(obs[:, ANGULAR_VELOCITY], angular * 0.01, rtol=1e-2, atol=1e-4)


def test_action_latency_delays_the_rotor_response_by_whole_steps() -> None:
    env = QuadrotorHover(64, config=HoverConfig(**STILL, randomization=RandomizationConfig(max_action_latency=3)))
    env.reset(seed=0)
    latency = env.privileged_obs[:, EPISODE_NAMES.index("action_latency")]
    assert set(latency.tolist()) == {0.0, 1.0, 2.0, 3.0}
    hover = env.params.hover_command
    full = torch.ones(64, 4)
    for t in range(1, 5):
        env.step(full)
        motor = env.privileged_obs[:, 18:].min(-1).values
        torch.testing.assert_close(motor > hover + 0.01, latency < t)


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
    """The same episodes on the CPU and on `device`, up to each env's first end: a crashed env starts a new episode
    drawn from the device's own random stream (CPU and CUDA generators differ), so what follows is not comparable.
    (On an H100, 2026-11-27, one of 32 envs crashed within the 50 steps and its next episode differed.)"""
    trajectories, ends = [], []
    for dev in ("cpu", device):
        env = QuadrotorHover(32, device=dev, config=HoverConfig(episode_length=10.0), seed=0)
        env.set_state(QuadrotorHover(32, seed=1).state.to(dev))
        steps = [env.step(a) for a in _random_actions(env, 50, seed=2)]
        obs = torch.stack([step[0] for step in steps])
        assert obs.device.type == torch.device(dev).type
        trajectories.append(obs.cpu())
        ends.append(torch.stack([step[2] | step[3] for step in steps]).cpu())
    assert torch.equal(ends[1], ends[0]), "an env ended at another step on the device"
    running = ends[0].cumsum(0) == 0  # (steps, envs): before the env's first end
    assert running.float().mean() > 0.8, "too few steps left to compare"
    torch.testing.assert_close(trajectories[1][running], trajectories[0][running], rtol=0, atol=1e-4)


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


def _true_thrust_to_weight(env: QuadrotorHover) -> torch.Tensor:
    """`(N,)` 4 thrust(u = 1) / (m g) of every env's plant."""
    dynamics = env._dynamics
    return 4 * dynamics.thrust_curve.sum(0) / (dynamics.mass * env.params.gravity)


def _hover_commands(env: QuadrotorHover) -> torch.Tensor:
    """`(N,)` motor command at which each env's plant carries its weight (rising root of c2 u^2 + c1 u + c0 = mg/4)."""
    c0, c1, c2 = env._dynamics.thrust_curve.double()
    quarter_weight = env._dynamics.mass.double() * env.params.gravity / 4
    return (-c1 + (c1 * c1 - 4 * c2 * (c0 - quarter_weight)).sqrt()) / (2 * c2)


def test_thrust_to_weight_randomization_spans_its_range_and_the_hover_commands() -> None:
    randomization = RandomizationConfig(thrust_to_weight=(1.4, 2.3), mass=0.2)
    env = QuadrotorHover(4000, config=HoverConfig(**STILL, randomization=randomization), seed=0)
    episode = env.episode_params
    ratio = _true_thrust_to_weight(env)
    torch.testing.assert_close(ratio, episode[:, EPISODE_NAMES.index("thrust_to_weight")])
    assert ratio.min() >= 1.4 - 1e-5 and ratio.max() <= 2.3 + 1e-5
    assert ratio.min() < 1.42 and ratio.max() > 2.28
    # The curve is k ((1 - b) u + b u^2): no constant term, quadratic share b in the default (0.5, 1).
    curve = env._dynamics.thrust_curve
    share = curve[2] / (curve[1] + curve[2])
    assert curve[0].abs().max() == 0.0
    torch.testing.assert_close(share, episode[:, EPISODE_NAMES.index("thrust_curve_quadratic_share")])
    assert share.min() >= 0.5 - 1e-6 and share.max() <= 1.0 + 1e-6
    # Hover commands: from 0.558 (ratio 2.3, b 0.5: u^2 + u = 2 / 2.3) to 0.845 (ratio 1.4, b 1: u^2 = 1 / 1.4).
    hover = _hover_commands(env)
    assert 0.5581 - 1e-3 <= hover.min() < 0.58 and 0.82 < hover.max() <= 0.8452 + 1e-3
    # The plant really has these curves: at its own hover command (motors already there) an env does not move.
    state = env.state
    state[:, 13:17] = hover.float().unsqueeze(-1)
    env.set_state(state)
    action = (2 * hover.float() - 1).unsqueeze(-1).expand(4000, 4)  # motor mode on [0, 1]: u = (a + 1) / 2
    obs = env.step(action)[0]
    assert obs[:, VELOCITY].abs().max() < 1e-4


TRUE_RATIO_FACTORS = ("thrust_to_weight", "battery_thrust_scale", "thrust_scale")


def test_thrust_to_weight_with_battery_sag_and_thrust_scale() -> None:
    """The drawn ratio is the fresh battery's and nominal propellers': sag and the thrust scale act on top."""
    randomization = RandomizationConfig(thrust_to_weight=(1.4, 2.3), battery_sag=0.2, thrust_coefficient=0.1)
    env = QuadrotorHover(2000, config=HoverConfig(randomization=randomization), seed=1)
    episode = env.episode_params
    ratio, battery, scale = (episode[:, EPISODE_NAMES.index(name)] for name in TRUE_RATIO_FACTORS)
    torch.testing.assert_close(_true_thrust_to_weight(env), ratio * battery * scale)
    assert (battery - 1).abs().max() > 0.15 and (scale - 1).abs().max() > 0.08


def test_battery_sag_scales_the_thrust_down_by_up_to_the_sag() -> None:
    env = QuadrotorHover(2000, config=HoverConfig(**STILL, randomization=RandomizationConfig(battery_sag=0.3)), seed=0)
    battery = env.episode_params[:, EPISODE_NAMES.index("battery_thrust_scale")]
    assert battery.min() >= 0.7 and battery.max() <= 1.0 and battery.min() < 0.71 and battery.max() > 0.99
    nominal = torch.tensor(env.params.thrust_curve).unsqueeze(-1)
    torch.testing.assert_close(env._dynamics.thrust_curve, nominal * battery)
    torch.testing.assert_close(env._dynamics.mass, torch.full((2000,), env.params.mass))
    # At the nominal hover action a sagged battery sinks at g (battery - 1), as the curve is scaled alike.
    obs = env.step(_hover_actions(env))[0]
    torch.testing.assert_close(obs[:, 14], 9.81 * (battery - 1) * 0.01, rtol=1e-3, atol=1e-5)
    assert (obs[:, 14] <= 1e-6).all()


def test_inertia_scale_draws_each_axis_within_its_range() -> None:
    env = QuadrotorHover(2000, config=HoverConfig(randomization=RandomizationConfig(inertia_scale=(0.8, 3.0))), seed=0)
    nominal = torch.tensor(env.params.inertia).unsqueeze(-1)
    ratio = env._dynamics.inertia / nominal
    names = [EPISODE_NAMES.index(f"inertia_{axis}_scale") for axis in "xyz"]
    torch.testing.assert_close(ratio, env.episode_params[:, names].T)
    assert ratio.min() >= 0.8 - 1e-6 and ratio.max() <= 3.0 + 1e-6
    assert ratio.min() < 0.81 and ratio.max() > 2.99
    assert (ratio[0] - ratio[1]).abs().max() > 1.0, "the axes are drawn independently"
    assert env.privileged_obs_spec.low[names[0]] == 0.8 and env.privileged_obs_spec.high[names[2]] == 3.0


def test_motor_rise_and_fall_time_constants_are_drawn_within_their_ranges() -> None:
    randomization = RandomizationConfig(motor_rise_time_constant=(0.03, 0.08), motor_fall_time_constant=(0.1, 0.4))
    env = QuadrotorHover(2000, config=HoverConfig(randomization=randomization), seed=0)
    rise, fall = env._dynamics.motor_rise_time_constant, env._dynamics.motor_fall_time_constant
    assert 0.03 - 1e-6 <= rise.min() < 0.031 and 0.079 < rise.max() <= 0.08 + 1e-6
    assert 0.1 - 1e-6 <= fall.min() < 0.103 and 0.397 < fall.max() <= 0.4 + 1e-6
    episode = env.episode_params
    torch.testing.assert_close(
        rise, env.params.motor_rise_time_constant * episode[:, EPISODE_NAMES.index("motor_rise_time_constant_scale")]
    )
    torch.testing.assert_close(
        fall, env.params.motor_fall_time_constant * episode[:, EPISODE_NAMES.index("motor_fall_time_constant_scale")]
    )
    with pytest.raises(ValueError, match="substeps"):  # a 5 ms rise needs dt / substeps below it
        QuadrotorHover(1, config=HoverConfig(randomization=RandomizationConfig(motor_rise_time_constant=(0.005, 0.05))))


INTEGRAL = slice(18, 21)


def test_position_integral_observation_hand_computed_with_clipping_and_reset() -> None:
    limit = 0.01
    config = HoverConfig(**STILL, position_integral_limit=limit, episode_length=0.3)
    env = QuadrotorHover(1, config=config, seed=0)
    assert env.obs_spec.dim == 25 and env.obs_spec.names[INTEGRAL] == _xyz_names("position_error_integral")
    assert env.obs_spec.low[18] == -limit and env.obs_spec.high[20] == limit and env.obs_spec.units[18] == "m*s"
    first = env.reset(seed=0)
    assert first[0, INTEGRAL].tolist() == [0.0, 0.0, 0.0]  # starts at the target: e_0 = 0
    offset = (0.1, -0.2, 0.05)
    env.set_state(_state_at(offset, 1, env))
    # Hovering in place: e_k = offset, so I_k = clip(k dt offset) = clip(k (0.001, -0.002, 0.0005)) at +-0.01:
    # x saturates at k = 10, y at k = 5, z never within the 30-step episode (0.015 at k = 30).
    for k in range(1, 30):
        obs = env.step(_hover_actions(env))[0]
        expected = [min(0.001 * k, 0.01), max(-0.002 * k, -0.01), min(0.0005 * k, 0.01)]
        assert obs[0, INTEGRAL].tolist() == pytest.approx(expected, abs=2e-7), k
        assert obs[0, POSITION_ERROR].tolist() == pytest.approx(list(offset), abs=1e-5)
    obs, _, terminated, truncated, info = env.step(_hover_actions(env))
    assert bool(truncated[0]) and not bool(terminated[0])
    assert info["final_obs"][0, INTEGRAL].tolist() == pytest.approx([0.01, -0.01, 0.01], abs=2e-7)  # z: 0.015 -> 0.01
    assert obs[0, INTEGRAL].tolist() == [0.0, 0.0, 0.0]  # the new episode starts at the target: I_0 = dt e_0 = 0


def _xyz_names(prefix: str) -> tuple[str, ...]:
    return tuple(f"{prefix}_{axis}" for axis in "xyz")


def test_position_integral_follows_the_observed_noisy_errors_across_resets() -> None:
    limit = 0.02
    noise = RandomizationConfig(position_noise=0.05)
    config = HoverConfig(position_integral_limit=limit, episode_length=0.2, randomization=noise)
    env = QuadrotorHover(64, config=config, seed=0)
    obs = env.reset(seed=4)
    # First observation of an episode: I_0 = clip(dt e_0) with e_0 the observed (noisy) error.
    torch.testing.assert_close(obs[:, INTEGRAL], (0.01 * obs[:, POSITION_ERROR]).clamp(-limit, limit))
    integral, saturated, resets = obs[:, INTEGRAL].clone(), 0, 0
    for action in _random_actions(env, 45, seed=3, scale=0.3):
        obs, _, terminated, truncated, info = env.step(action)
        done = terminated | truncated
        final = info["final_obs"]
        expected_final = (integral + 0.01 * final[:, POSITION_ERROR]).clamp(-limit, limit)
        torch.testing.assert_close(final[:, INTEGRAL], expected_final, rtol=0, atol=1e-7)
        restart = (0.01 * obs[:, POSITION_ERROR]).clamp(-limit, limit)
        expected = torch.where(done.unsqueeze(-1), restart, expected_final)
        torch.testing.assert_close(obs[:, INTEGRAL], expected, rtol=0, atol=1e-7)
        integral = obs[:, INTEGRAL].clone()
        saturated += int((integral.abs() == limit).sum())
        resets += int(done.sum())
    assert saturated > 0 and resets >= 64 * 2


def test_position_integral_survives_a_state_dict_round_trip() -> None:
    config = HoverConfig(position_integral_limit=0.05, episode_length=0.3, randomization=ALL_RANDOMIZATION)
    env = QuadrotorHover(8, config=config, seed=2)
    actions = _random_actions(env, 60, seed=1, scale=0.3)
    _rollout(env, actions[:20])
    saved = env.state_dict()
    expected = _rollout(env, actions[20:])
    resumed = QuadrotorHover(8, config=config, seed=9)
    resumed.load_state_dict(saved)
    torch.testing.assert_close(_rollout(resumed, actions[20:]), expected, rtol=0, atol=0)
