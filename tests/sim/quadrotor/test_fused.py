"""The numba hover step against the torch one: the same transitions (to float rounding) from the same states and
actions, resets from the same equations given the kernel's own uniform draws, and a sound counter-based generator."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from robo_rl.envs import INFO_FINAL_OBS, INFO_FINAL_PRIVILEGED_OBS, INFO_PRIVILEGED_OBS, INFO_SUCCESS
from robo_rl.sim.quadrotor import HoverConfig, QuadrotorHover
from robo_rl.sim.quadrotor.curriculum import CurriculumConfig
from robo_rl.sim.quadrotor.randomization import THRUST_SCALE, RandomizationConfig

fused = pytest.importorskip("robo_rl.sim.quadrotor.fused", reason="numba is not installed")

N = 256


def _pair(config: HoverConfig, seed: int = 0) -> tuple[QuadrotorHover, QuadrotorHover]:
    torch_env = QuadrotorHover(N, config=config, seed=seed)
    numba_env = QuadrotorHover(N, config=dataclasses.replace(config, backend="numba"), seed=seed)
    return torch_env, numba_env


def _sync(source: QuadrotorHover, target: QuadrotorHover) -> None:
    """Give `target` the physical state, episode parameters and bookkeeping of `source`."""
    for name in ("_state", "_history", "_steps", "_error_sum", "_integral", "_episode"):
        setattr(target, name, getattr(source, name).clone())
    target._apply_episode()


# The identified Crazyflie's numbers with linear drag and an idle command: every term of the equations is on.
DRAG_FRAME = """
mass: 0.0306
arm_length: 0.03959797974644667
inertia: [9.416556729130406e-06, 9.644051701582312e-06, 1.745951732253285e-05]
thrust_curve: [0.00352526, 0.01437313, 0.09223048]
torque_to_thrust: 0.004665
motor_rise_time_constant: 0.05545454545454546
motor_fall_time_constant: 0.24939393939393945
min_command: 0.05
linear_drag: [0.01, 0.02, 0.03]
"""


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"integrator": "semi_implicit_euler", "substeps": 2, "action_history": 2},
        {"floor_height": -0.2, "action_history": 0, "episode_length": 0.3, "max_position_error": 0.6},
        {"frame": "crazyflie_2_1_bare_2023"},
        {"frame": "px4_x500", "substeps": 2},
        {"position_integral_limit": 0.005, "episode_length": 0.3, "action_history": 2},
        {"position_integral_limit": 0.5, "integral_weight": 12.0, "reward_floor": 0.0, "crash_penalty": 20.0},
        {"randomization": RandomizationConfig(thrust_coefficient=0.3), "position_integral_limit": 0.5},
    ],
    ids=lambda changes: "-".join(f"{key}={value}" for key, value in changes.items())[:80] or "default",
)
def test_numba_steps_match_torch_steps(changes: dict) -> None:
    _check_numba_matches_torch(dataclasses.replace(HoverConfig(), **changes))


def test_numba_steps_match_torch_steps_with_drag_and_idle(tmp_path: Path) -> None:
    path = tmp_path / "drag.yaml"
    path.write_text(DRAG_FRAME)
    _check_numba_matches_torch(HoverConfig(frame=str(path)))


def test_numba_steps_match_torch_steps_with_rotor_speed_motors(tmp_path: Path) -> None:
    path = tmp_path / "speed.yaml"
    path.write_text(DRAG_FRAME + "motor_model: rotor_speed\nmotor_idle_speed: 0.3\n")
    _check_numba_matches_torch(HoverConfig(frame=str(path)))


def _check_numba_matches_torch(config: HoverConfig) -> None:
    torch_env, numba_env = _pair(config)
    assert torch_env.privileged_obs_spec.dim == numba_env.privileged_obs_spec.dim == 22
    generator = torch.Generator().manual_seed(1)
    crashes = truncations = 0
    for _ in range(40):
        _sync(torch_env, numba_env)
        action = torch.rand(N, 4, generator=generator) * 2.4 - 1.2  # beyond the bounds: clipping is checked too
        ours = numba_env.step(action)
        theirs = torch_env.step(action)
        for name, a, b in zip(("reward", "terminated", "truncated"), ours[1:4], theirs[1:4], strict=True):
            torch.testing.assert_close(a, b, atol=2e-4, rtol=1e-4, msg=name)
        for key in (INFO_FINAL_OBS, INFO_FINAL_PRIVILEGED_OBS, INFO_SUCCESS):
            torch.testing.assert_close(ours[4][key], theirs[4][key], atol=2e-4, rtol=1e-4, msg=key)
        kept = ~(theirs[2] | theirs[3])  # envs that reset differ by design (their own draws)
        torch.testing.assert_close(ours[0][kept], theirs[0][kept], atol=2e-4, rtol=1e-4)
        torch.testing.assert_close(numba_env._state[:, kept], torch_env._state[:, kept], atol=2e-3, rtol=1e-5)
        crashes += int(theirs[2].sum())
        truncations += int(theirs[3].sum())
    assert crashes > 0  # the comparison covered crashes...
    if config.episode_length < 1:
        assert truncations > 0 and bool(torch_env._steps.max() < config.max_episode_steps)  # ...and time limits


def test_resets_follow_the_torch_equations_from_the_kernel_s_draws() -> None:
    config = HoverConfig(backend="numba")
    env = QuadrotorHover(N, config=config, seed=3)
    env._steps.fill_(config.max_episode_steps - 1)  # every env's episode ends at the next step
    obs, _, terminated, truncated, info = env.step(torch.full((N, 4), env.hover_action[0]))
    assert bool((terminated | truncated).all())
    uniforms = torch.tensor(
        [[fused.uniform(env._fused_seed, env.control_steps, i, k) for i in range(N)] for k in range(12)]
    )
    draws = torch.cat((uniforms, torch.zeros(1, N))).float()  # row 12: the phase (a fixed point ignores it)
    expected = env._initial_state(draws, env.curriculum_fraction)
    torch.testing.assert_close(env._state, expected, atol=1e-5, rtol=1e-5)
    assert bool((env._steps == 0).all()) and bool((env._error_sum == 0).all())
    first = env._observe(*env._errors(), None).T
    torch.testing.assert_close(obs, first, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(env.privileged_obs, info[INFO_PRIVILEGED_OBS])


def test_a_reset_draws_the_thrust_scale_from_the_kernel_s_13th_uniform_within_the_curriculum_range() -> None:
    """Thrust randomization on the numba step: at a reset the scale is 1 + f r (2 u - 1) with u the env's 13th
    counter-based uniform (after the 12 of the initial state), r `thrust_coefficient` and f the curriculum fraction
    (the torch path's `EpisodeSampler.from_uniform`); the final privileged observation keeps the ended episode's
    scale, the next one holds the new."""
    randomization = RandomizationConfig(thrust_coefficient=0.2)
    config = HoverConfig(backend="numba", randomization=randomization, curriculum=CurriculumConfig(steps=4))
    env = QuadrotorHover(N, config=config, seed=3)
    before = env._episode[THRUST_SCALE].clone()
    assert bool((before - 1).abs().le(0.2 * 0.25 + 1e-6).all()) and before.std() > 0.01  # drawn at reset(), f 0.25
    env._steps.fill_(config.max_episode_steps - 1)  # every env's episode ends at the next step
    _, _, _, _, info = env.step(torch.full((N, 4), env.hover_action[0]))
    fraction = env.curriculum_fraction
    uniforms = torch.tensor([fused.uniform(env._fused_seed, env.control_steps, i, 12) for i in range(N)])
    expected = 1 + 0.2 * fraction * (uniforms * 2 - 1)
    torch.testing.assert_close(env._episode[THRUST_SCALE], expected.float(), atol=1e-6, rtol=0)
    torch.testing.assert_close(info[INFO_FINAL_PRIVILEGED_OBS][:, THRUST_SCALE], before)
    torch.testing.assert_close(info[INFO_PRIVILEGED_OBS][:, THRUST_SCALE], env._episode[THRUST_SCALE])


def test_counter_based_draws_are_uniform_independent_and_reproducible() -> None:
    seed, counter = 12345, 7
    values = np.array([fused.uniform(seed, counter, env, k) for env in range(2000) for k in range(12)])
    assert 0.0 <= values.min() and values.max() < 1.0
    assert abs(values.mean() - 0.5) < 0.01 and abs(values.var() - 1 / 12) < 0.003
    grid = values.reshape(2000, 12)
    correlation = np.corrcoef(grid.T)[np.triu_indices(12, 1)]
    assert np.abs(correlation).max() < 0.1  # the 12 draws of an env are not related
    other_step = np.array([fused.uniform(seed, counter + 1, env, 0) for env in range(2000)])
    assert abs(np.corrcoef(grid[:, 0], other_step)[0, 1]) < 0.1
    assert fused.uniform(seed, counter, 5, 3) == fused.uniform(seed, counter, 5, 3)
    assert fused.uniform(seed, counter, 5, 3) != fused.uniform(seed + 1, counter, 5, 3)


def test_numba_backend_resumes_exactly_and_rejects_what_it_does_not_support() -> None:
    config = HoverConfig(backend="numba", episode_length=0.2)
    env = QuadrotorHover(N, config=config, seed=0)
    actions = [torch.rand(N, 4, generator=torch.Generator().manual_seed(i)) * 2 - 1 for i in range(30)]
    for action in actions[:10]:
        env.step(action)
    saved = env.state_dict()
    first = [env.step(action)[0] for action in actions[10:]]
    resumed = QuadrotorHover(N, config=config, seed=99)
    resumed.load_state_dict(saved)
    second = [resumed.step(action)[0] for action in actions[10:]]
    for a, b in zip(first, second, strict=True):
        assert torch.equal(a, b)
    with pytest.raises(ValueError, match="action_mode='motor'"):
        HoverConfig(backend="numba", action_mode="ctbr")
    with pytest.raises(ValueError, match="randomization"):
        HoverConfig(backend="numba", randomization=dataclasses.replace(HoverConfig().randomization, mass=0.1))
    with pytest.raises(ValueError, match="observation noise"):
        HoverConfig(backend="numba", randomization=dataclasses.replace(HoverConfig().randomization, position_noise=0.1))
    with pytest.raises(ValueError, match="backend must be one of"):
        HoverConfig(backend="jax")  # type: ignore[arg-type]
    assert math.isfinite(float(first[-1].abs().max()))


def test_auto_backend_takes_numba_where_it_applies_and_torch_elsewhere() -> None:
    assert QuadrotorHover(4, config=HoverConfig(backend="auto"), seed=0)._fused is not None
    randomized = dataclasses.replace(HoverConfig().randomization, mass=0.2)
    noisy = dataclasses.replace(HoverConfig().randomization, velocity_noise=0.01)
    configs = [HoverConfig(backend="auto", randomization=r) for r in (randomized, noisy)]
    for config in (*configs, HoverConfig(backend="auto", compile=True)):
        assert QuadrotorHover(4, config=config, seed=0)._fused is None  # no error: the torch step
    from robo_rl.sim.quadrotor import QuadrotorTrack, TrackConfig

    track = QuadrotorTrack(4, config=TrackConfig(backend="auto"), seed=0)
    assert track.task._fused is None  # a moving reference: torch


@pytest.mark.parametrize("task", ["quadrotor", "rc_car"])
def test_the_serial_copy_of_a_kernel_is_the_parallel_one_to_the_bit(task: str) -> None:
    """One thread runs the kernel's serial copy, more threads the parallel one (`numba_support.Kernel`): the same
    seed and actions give bit-identical observations, rewards and resets either way (300 envs, 60 steps with
    crashes and resets), so a run's numbers do not depend on which copy stepped it."""
    from robo_rl.sim.rc_car.race import RCCarRace
    from robo_rl.sim.rc_car.race_config import RaceConfig

    def make(threads: int) -> QuadrotorHover | RCCarRace:
        env: QuadrotorHover | RCCarRace
        if task == "quadrotor":
            env = QuadrotorHover(300, config=HoverConfig(backend="numba", episode_length=0.3), seed=3)
        else:
            env = RCCarRace(300, config=RaceConfig(backend="numba"), seed=3)
        assert env.kernel_run is not None
        env.kernel_run.threads = threads
        return env

    serial, parallel = make(1), make(2)
    assert (serial.reset(seed=5) == parallel.reset(seed=5)).all()
    generator = torch.Generator().manual_seed(0)
    for _ in range(60):
        action = torch.rand(300, len(serial.action_spec.names), generator=generator) * 2 - 1
        a, b = serial.step(action), parallel.step(action)
        for x, y in zip(a[:4], b[:4], strict=True):
            assert torch.equal(x, y)
    assert torch.equal(serial.state_dict()["state"], parallel.state_dict()["state"])
    from robo_rl.sim.numba_support import numba

    assert numba.get_num_threads() == min(2, numba.config.NUMBA_NUM_THREADS)  # the last step ran the parallel copy
