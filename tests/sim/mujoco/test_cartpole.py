"""mujoco/cartpole_swingup: physics, contract, Gymnasium checker, seeds, auto-reset, reward, success, render."""

from __future__ import annotations

import math
from collections.abc import Callable

import mujoco
import numpy as np
import pytest
import torch

from robo_rl.envs import INFO_FINAL_OBS, INFO_SUCCESS, RenderableEnv, check_step_result
from robo_rl.sim import make
from robo_rl.sim.mujoco import CartpoleSwingup, CartpoleSwingupConfig

DEVICES = [
    "cpu",
    pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")),
]
NAME = "mujoco/cartpole_swingup"


def _forces(steps: int, n: int, seed: int) -> torch.Tensor:
    return (torch.rand(steps, n, 1, generator=torch.Generator().manual_seed(seed)) * 2 - 1) * 10.0


def test_model_accelerations_match_the_cart_pole_equations() -> None:
    # Lagrange's equations of a cart (mass M, position x) carrying a pole (mass m, centre of mass l_c from the
    # pivot, inertia I_c about it, angle theta from upright, positive towards +x), with viscous joint damping:
    #   (M + m) x'' + m l_c cos(theta) theta'' = F + m l_c sin(theta) theta'^2 - b_x x'
    #   m l_c cos(theta) x'' + (I_c + m l_c^2) theta'' = m g l_c sin(theta) - b_theta theta'
    model = CartpoleSwingup(1, seed=0).model
    cart, pole = model.body("cart").id, model.body("pole").id
    big_m, m, l_c = model.body_mass[cart], model.body_mass[pole], model.body_ipos[pole][2]
    i_c, g = model.body_inertia[pole][1], -model.opt.gravity[2]
    b_x, b_theta = model.dof_damping
    assert (big_m, m, l_c, g) == pytest.approx((1.0, 0.1, 0.5, 9.81))
    data = mujoco.MjData(model)
    for theta, x_dot, theta_dot, force in [(0.0, 0.0, 0.0, 3.0), (math.pi, 1.0, -2.0, -5.0), (0.7, -0.5, 4.0, 0.0)]:
        data.qpos[:], data.qvel[:], data.ctrl[:] = (0.2, theta), (x_dot, theta_dot), force
        mujoco.mj_forward(model, data)
        mass = np.array([[big_m + m, m * l_c * math.cos(theta)], [m * l_c * math.cos(theta), i_c + m * l_c**2]])
        rhs = np.array(
            [
                force + m * l_c * math.sin(theta) * theta_dot**2 - b_x * x_dot,
                m * g * l_c * math.sin(theta) - b_theta * theta_dot,
            ]
        )
        np.testing.assert_allclose(data.qacc, np.linalg.solve(mass, rhs), rtol=1e-9, atol=1e-9)


def test_task_steps_equal_plain_mj_step_per_env() -> None:
    n, frame_skip = 5, 2
    env = CartpoleSwingup(n, config=CartpoleSwingupConfig(frame_skip=frame_skip), seed=0)
    start = env.state.numpy()
    datas = []
    for row in start:
        data = mujoco.MjData(env.model)
        data.qpos[:], data.qvel[:] = row[:2], row[2:]
        datas.append(data)
    for force in _forces(60, n, seed=1):
        obs, *_ = env.step(force)
        for i, data in enumerate(datas):
            data.ctrl[:] = force[i].double().numpy()
            mujoco.mj_step(env.model, data, frame_skip)
        expected = np.array([np.concatenate((d.qpos, d.qvel)) for d in datas])
        np.testing.assert_allclose(env.state.numpy(), expected, rtol=0, atol=1e-9)
    position, angle = expected[:, 0], expected[:, 1]
    np.testing.assert_allclose(obs[:, 0].numpy(), position, atol=1e-6)
    np.testing.assert_allclose(obs[:, 1].numpy(), np.cos(angle), atol=1e-6)
    np.testing.assert_allclose(obs[:, 2].numpy(), np.sin(angle), atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_step_result_follows_the_contract(device: str) -> None:
    env = make(NAME, 4, device=device, seed=0)
    assert isinstance(env, RenderableEnv)
    assert env.obs_spec.dim == 5 and env.action_spec.dim == 1 and env.action_spec.is_bounded
    assert env.dt == pytest.approx(0.01) and env.max_episode_steps == 1000
    assert env.reset(seed=1).device.type == torch.device(device).type
    result = env.step(torch.zeros(4, 1, device=device))
    check_step_result(env, result)
    assert result[4][INFO_SUCCESS].dtype == torch.bool


def test_gymnasium_env_checker_passes(checked_task: Callable[[str], list[str]]) -> None:
    assert checked_task(NAME) == []


def test_seeds_reproduce_and_differ() -> None:
    env = CartpoleSwingup(8, seed=0)
    forces = _forces(20, 8, seed=2)

    def rollout(seed: int) -> torch.Tensor:
        return torch.stack([env.reset(seed=seed)] + [env.step(f)[0] for f in forces])

    first, again, other = rollout(3), rollout(3), rollout(4)
    torch.testing.assert_close(first, again, rtol=0, atol=0)
    assert not torch.equal(first[0], other[0])
    # Initial states are hanging down within the configured ranges.
    c = CartpoleSwingupConfig()
    assert (first[0, :, 0].abs() <= c.init_position_range).all()
    assert (first[0, :, 1] <= -math.cos(c.init_angle_range) + 1e-6).all()
    assert not torch.equal(first[0, 0], first[0, 1])  # envs differ from one another


def test_truncation_auto_resets_with_final_obs() -> None:
    n, steps = 6, 5
    short = CartpoleSwingup(n, config=CartpoleSwingupConfig(episode_length=steps * 0.01), seed=7)
    long = CartpoleSwingup(n, seed=7)  # same seed: same initial states, no time limit within the test
    assert short.max_episode_steps == steps
    for t, force in enumerate(_forces(steps, n, seed=3)):
        obs, _, terminated, truncated, info = short.step(force)
        expected = long.step(force)[0]
        assert not terminated.any()
        if t < steps - 1:
            assert not truncated.any()
            torch.testing.assert_close(info[INFO_FINAL_OBS], obs, rtol=0, atol=0)
    assert truncated.all()
    torch.testing.assert_close(info[INFO_FINAL_OBS], expected, rtol=0, atol=0)
    assert not torch.equal(obs, expected)
    assert (obs[:, 1] < -0.99).all()  # the new episodes start hanging down again
    for force in _forces(steps, n, seed=4):
        truncated = short.step(force)[3]
    assert truncated.all()  # the step counters restarted


def test_upright_centred_rest_scores_the_maximum_reward() -> None:
    env = CartpoleSwingup(4, seed=0)
    env.set_state(
        torch.tensor([[0.0, 0.0, 0.0, 0.0], [0.0, 0.3, 0.0, 0.0], [0.5, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    )
    _, reward, *_ = env.step(torch.tensor([[0.0], [0.0], [0.0], [10.0]]))
    assert reward[0].item() == 1.0  # upright, centred, at rest, no force: exactly the maximum
    c = CartpoleSwingupConfig()
    assert (reward[1:] < 1.0).all() and (reward >= 0).all()
    # The full-force penalty: 1 - control_weight, times factors within rounding of 1 after one step.
    assert reward[3].item() == pytest.approx(1 - c.control_weight, abs=1e-3)


def test_success_needs_balance_over_the_final_window() -> None:
    config = CartpoleSwingupConfig(episode_length=0.5, success_window=0.2)
    env = CartpoleSwingup(3, config=config, seed=0)
    # Upright at rest stays upright (an exact equilibrium); hanging does not count; off-centre does not count.
    env.set_state(torch.tensor([[0.0, 0.0, 0.0, 0.0], [0.0, math.pi, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]]))
    for _ in range(env.max_episode_steps):
        *_, truncated, info = env.step(torch.zeros(3, 1))
    assert truncated.all()
    assert info[INFO_SUCCESS].tolist() == [True, False, False]


def test_an_energy_pumping_controller_swings_up_within_the_force_limit() -> None:
    # Pump the pole's energy (0 upright at rest) towards 0, then balance with a PD law near upright: the 10 N
    # limit suffices, the final second scores near the maximum reward and every episode counts as a success.
    env = CartpoleSwingup(8, seed=0)
    model = env.model
    m, l_c = model.body_mass[model.body("pole").id], model.body_ipos[model.body("pole").id][2]
    inertia = model.body_inertia[model.body("pole").id][1] + m * l_c**2
    env.reset(seed=1)
    rewards = []
    for _ in range(env.max_episode_steps):
        x, angle, x_dot, rate = env.state.numpy().T
        energy = 0.5 * inertia * rate**2 + m * 9.81 * l_c * (np.cos(angle) - 1)
        pump = 20 * energy * np.sign(rate * np.cos(angle)) - 2 * x - 2 * x_dot
        balance = 60 * np.arctan2(np.sin(angle), np.cos(angle)) + 12 * rate + 4 * x + 5 * x_dot
        force = np.where(np.cos(angle) > 0.9, balance, pump)
        _, reward, _, truncated, info = env.step(torch.tensor(force, dtype=torch.float32).reshape(-1, 1))
        rewards.append(reward)
    assert truncated.all() and info[INFO_SUCCESS].all()
    assert torch.stack(rewards[-100:]).mean() > 0.95


def test_render_returns_a_fixed_size_frame_that_shows_the_state() -> None:
    env = CartpoleSwingup(2, seed=0)
    env.set_state(torch.tensor([[0.0, math.pi, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0]]))
    hanging, tilted = env.render(0), env.render(1)
    assert hanging.shape == tilted.shape == (480, 640, 3) and hanging.dtype == np.uint8
    assert hanging.std() > 10  # not blank
    assert np.abs(hanging.astype(int) - tilted.astype(int)).sum() > 0
    env.close()


def test_state_dict_resumes_the_same_stream() -> None:
    env = CartpoleSwingup(4, config=CartpoleSwingupConfig(episode_length=0.05), seed=5)
    forces = _forces(12, 4, seed=6)
    for force in forces[:3]:
        env.step(force)
    saved = env.state_dict()
    first = [env.step(f)[0] for f in forces[3:]]
    env.load_state_dict(saved)
    again = [env.step(f)[0] for f in forces[3:]]
    torch.testing.assert_close(torch.stack(first), torch.stack(again), rtol=0, atol=0)


@pytest.mark.parametrize(
    "field,value", [("frame_skip", 0), ("episode_length", 0.0), ("control_weight", 1.5), ("backend", "gpu")]
)
def test_config_rejects_bad_values_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        CartpoleSwingupConfig(**{field: value})
