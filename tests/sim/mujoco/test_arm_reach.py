"""mujoco/arm_reach: action modes, contract, Gymnasium checker, seeds, targets, reward, success, render."""

from __future__ import annotations

import math
from collections.abc import Callable

import mujoco
import numpy as np
import pytest
import torch

from robo_rl.envs import INFO_FINAL_OBS, INFO_SUCCESS, RenderableEnv, check_step_result
from robo_rl.sim import make
from robo_rl.sim.mujoco import ArmReach, ArmReachConfig, SiteKinematics

DEVICES = [
    "cpu",
    pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")),
]
NAME = "mujoco/arm_reach"
SHOULDER = np.array([0.0, 0.0, 0.30])
"""World position of the shoulder joint in m (pedestal 0.25 m + base link 0.05 m)."""


def _random_actions(env: ArmReach, steps: int, seed: int) -> torch.Tensor:
    low, high = env.action_spec.low_tensor(), env.action_spec.high_tensor()
    return low + (high - low) * torch.rand(steps, env.num_envs, 4, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("mode", ["torque", "position"])
def test_task_steps_equal_plain_mj_step_per_env(mode: str) -> None:
    n = 4
    env = ArmReach(n, config=ArmReachConfig(action_mode=mode), seed=0)
    obs = env.reset(seed=1)
    datas = []
    for row in obs.double().numpy():
        data = mujoco.MjData(env.model)
        data.qpos[:], data.qvel[:] = row[:4], row[4:8]
        datas.append(data)
    # obs is float32: start the single envs from the exact float64 state instead.
    env.set_joint_state(torch.tensor(np.array([d.qpos for d in datas])), torch.zeros(n, 4))
    for action in _random_actions(env, 30, seed=2):
        obs, *_ = env.step(action)
        for i, data in enumerate(datas):
            data.ctrl[:] = action[i].double().numpy()
            mujoco.mj_step(env.model, data, env.config.frame_skip)
        np.testing.assert_allclose(obs[:, :4].numpy(), np.array([d.qpos for d in datas]), rtol=0, atol=1e-6)
        np.testing.assert_allclose(obs[:, 4:8].numpy(), np.array([d.qvel for d in datas]), rtol=0, atol=1e-5)
    site = env.model.site("end_effector").id
    for data in datas:
        mujoco.mj_kinematics(env.model, data)  # after mj_step, site_xpos still belongs to the previous substep
    end_effector = np.array([d.site_xpos[site] for d in datas])
    np.testing.assert_allclose(env.end_effector_position().numpy(), end_effector, atol=1e-9)
    np.testing.assert_allclose(obs[:, 11:].numpy(), env.target.numpy() - end_effector, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mode", ["torque", "position"])
def test_step_result_follows_the_contract(device: str, mode: str) -> None:
    env = make(NAME, 3, device=device, seed=0, action_mode=mode)
    assert isinstance(env, RenderableEnv)
    assert env.obs_spec.dim == 14 and env.action_spec.dim == 4 and env.action_spec.is_bounded
    assert env.action_spec.units == (("N*m",) * 4 if mode == "torque" else ("rad",) * 4)
    assert env.dt == pytest.approx(0.02) and env.max_episode_steps == 150
    result = env.step(torch.zeros(3, 4, device=device))
    check_step_result(env, result)
    assert result[0].device.type == torch.device(device).type


def test_gymnasium_env_checker_passes(checked_task: Callable[[str], list[str]]) -> None:
    assert checked_task(NAME) == []


def test_seeds_reproduce_and_differ_and_targets_lie_in_the_configured_region() -> None:
    env = ArmReach(64, seed=0)
    actions = _random_actions(env, 10, seed=3)

    def rollout(seed: int) -> torch.Tensor:
        return torch.stack([env.reset(seed=seed)] + [env.step(a)[0] for a in actions])

    first, again, other = rollout(5), rollout(5), rollout(6)
    torch.testing.assert_close(first, again, rtol=0, atol=0)
    assert not torch.equal(first[0], other[0])
    env.reset(seed=5)
    offset = env.target.numpy() - SHOULDER
    distance = np.linalg.norm(offset, axis=1)
    elevation = np.arcsin(offset[:, 2] / distance)
    azimuth = np.arctan2(offset[:, 1], offset[:, 0])
    c = ArmReachConfig()
    assert (distance >= c.target_distance_range[0] - 1e-9).all() and (distance <= c.target_distance_range[1]).all()
    assert (elevation >= c.target_elevation_range[0] - 1e-9).all()
    assert (elevation <= c.target_elevation_range[1] + 1e-9).all()
    assert (np.abs(azimuth) <= c.target_azimuth_range + 1e-9).all()
    assert len(np.unique(env.target.numpy()[:, 0])) == 64  # every env has its own target


def test_reward_at_the_target_beats_away_and_episodes_at_it_succeed() -> None:
    config = ArmReachConfig(episode_length=0.2)
    env = ArmReach(2, config=config, seed=0)
    pose = torch.tensor([[0.3, 0.4, -0.8, 0.2]] * 2, dtype=torch.float64)
    env.set_joint_state(pose, torch.zeros(2, 4))
    at_target = env.end_effector_position()[0]
    env.set_target(torch.stack((at_target, at_target + torch.tensor([0.0, 0.0, 0.1], dtype=torch.float64))))
    for _ in range(env.max_episode_steps):
        # No torque: the gravity-compensated arm at rest stays where it is.
        _, reward, _, truncated, info = env.step(torch.zeros(2, 4))
    assert truncated.all()
    assert reward[0].item() == pytest.approx(config.success_bonus, abs=1e-6)  # distance 0, no effort
    assert reward[1].item() == pytest.approx(-config.distance_weight * 0.1, abs=1e-6)
    assert info[INFO_SUCCESS].tolist() == [True, False]


def test_control_penalty_uses_the_applied_torques() -> None:
    config = ArmReachConfig(distance_weight=0.0, success_bonus=0.0, control_weight=0.5)
    env = ArmReach(1, config=config, seed=0)
    _, reward, *_ = env.step(torch.tensor([[2.5, -4.0, 10.0, 1.0]]))  # elbow clipped to its 5 N*m limit
    # sum((tau / tau_max)^2) = 0.5^2 + 0.5^2 + 1^2 + 0.5^2 = 1.75
    assert reward.item() == pytest.approx(-0.5 * 1.75, abs=1e-6)


def test_position_mode_tracks_a_constant_joint_target() -> None:
    env = ArmReach(2, config=ArmReachConfig(action_mode="position", episode_length=10.0), seed=0)
    target = torch.tensor([[0.8, 0.9, -1.4, 0.7], [-1.5, -0.3, 1.2, -0.9]])
    for _ in range(int(2.0 / env.dt)):
        obs, *_ = env.step(target)
    torch.testing.assert_close(obs[:, :4], target, rtol=0, atol=1e-3)
    assert obs[:, 4:8].abs().max() < 1e-2  # and comes to rest


def test_truncation_auto_resets_with_a_new_target_and_final_obs() -> None:
    env = ArmReach(5, config=ArmReachConfig(episode_length=0.1), seed=8)
    target = env.target
    actions = _random_actions(env, env.max_episode_steps, seed=9)
    for action in actions:
        obs, _, terminated, truncated, info = env.step(action)
    assert truncated.all() and not terminated.any()
    torch.testing.assert_close(info[INFO_FINAL_OBS][:, 8:11], target.float(), rtol=0, atol=1e-6)
    torch.testing.assert_close(obs[:, 8:11], env.target.float(), rtol=0, atol=1e-6)
    assert not torch.equal(env.target, target)
    assert obs[:, 4:8].abs().max() == 0.0  # the new episodes start at rest


def test_render_draws_the_arm_and_its_target() -> None:
    env = ArmReach(1, seed=0)
    frame = env.render(0)
    assert frame.shape == (480, 640, 3) and frame.dtype == np.uint8 and frame.std() > 10
    env.set_target(env.target + torch.tensor([[0.0, 0.0, 0.2]], dtype=torch.float64))
    moved = env.render(0)
    assert moved.shape == frame.shape and np.abs(moved.astype(int) - frame.astype(int)).sum() > 0
    env.close()


def test_state_dict_resumes_the_same_stream() -> None:
    env = ArmReach(3, config=ArmReachConfig(episode_length=0.06), seed=1)
    actions = _random_actions(env, 8, seed=2)
    env.step(actions[0])
    saved = env.state_dict()
    first = torch.stack([env.step(a)[0] for a in actions[1:]])
    env.load_state_dict(saved)
    again = torch.stack([env.step(a)[0] for a in actions[1:]])
    torch.testing.assert_close(first, again, rtol=0, atol=0)


@pytest.mark.parametrize(
    "field,value",
    [("action_mode", "velocity"), ("frame_skip", 0), ("success_distance", 0.0), ("target_elevation_range", (0.5, 2.0))],
)
def test_config_rejects_bad_values_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        ArmReachConfig(**{field: value})


def test_home_pose_is_above_the_floor() -> None:
    env = ArmReach(1, seed=0)
    env.set_joint_state(torch.tensor([ArmReachConfig().home_pose]), torch.zeros(1, 4))
    assert env.end_effector_position()[0, 2].item() > 0.1
    assert math.isclose(env.dt * env.max_episode_steps, 3.0)


def test_the_target_region_is_reachable_within_the_joint_limits() -> None:
    # Yaw turns the arm's vertical plane to any azimuth within ±target_azimuth_range (< the yaw limit), so it
    # suffices that, in that plane, every (distance, elevation) cell of the target region (1 cm x 0.04 rad) is
    # reached by some pitch configuration within the joint limits.
    env = ArmReach(1, seed=0)
    c = ArmReachConfig()
    assert c.target_azimuth_range < env.model.jnt_range[0, 1]
    low, high = env.model.jnt_range.T
    qpos = np.random.default_rng(0).uniform(low, high, size=(300_000, 4))
    qpos[:, 0] = 0.0
    offset = SiteKinematics(env.model, "end_effector")(qpos) - SHOULDER
    distance = np.linalg.norm(offset, axis=1)
    elevation = np.arctan2(offset[:, 2], offset[:, 0])
    distance_edges = np.linspace(*c.target_distance_range, 41)
    elevation_edges = np.linspace(*c.target_elevation_range, 43)
    hits = np.histogram2d(distance, elevation, bins=(distance_edges, elevation_edges))[0]
    assert hits.min() > 0
