"""Gymnasium adapters: env checker on every task, parity with the batched env, vector autoreset, SB3 training, and
camera envs as Dict observation spaces."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import gymnasium
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode
from gymnasium.wrappers.vector import RecordEpisodeStatistics

from robo_rl.envs import (
    INFO_FINAL_OBS,
    INFO_PRIVILEGED_OBS,
    ImageObs,
    check_step_result,
    image_specs_of,
)
from robo_rl.image_spec import STATE_KEY
from robo_rl.sim import default_config, make, names
from robo_rl.sim.double_integrator.pixels import CAMERA, TARGET_LEVEL
from robo_rl.sim.gymnasium_adapter import GymnasiumEnv, GymnasiumVectorEnv, check_task, space_to_box
from robo_rl.sim.pendulum import Pendulum, PendulumConfig

# check_env's advice that is about a task's choice of units, not about the API: robo_rl actions are in SI units
# (Pendulum-v1 itself triggers the first one), observations may be unbounded.
ADVISORY_WARNINGS = ("symmetric and normalized space", "is -infinity", "is infinity")
CAMERA_TASKS = ("double_integrator/pixels", "mujoco/peg_insert_pixels", "rc_car/race_pixels")
"""Camera envs: Dict observation spaces (tested below)."""
GL_FREE_CAMERA_TASKS = ("double_integrator/pixels",)
"""Camera envs whose frames need no OpenGL (drawn in torch): Gymnasium's checker steps them here."""
VECTOR_TASKS = [name for name in names() if name not in CAMERA_TASKS]
DEVICES = [
    "cpu",
    pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")),
]
WORST_STEP_COST = math.pi**2 + 0.1 * 8.0**2 + 0.001 * 2.0**2
"""Largest pendulum cost of one step (theta = pi, theta_dot = max_speed, torque = max_torque)."""


def _random_actions(steps: int, shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-2.0, 2.0, size=(steps, *shape)).astype(np.float32)


@pytest.mark.parametrize("name", VECTOR_TASKS)
def test_check_env_passes_for_every_task(name: str) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_task(name)
    # check_env reports many API problems (obs outside its space, wrong dtypes) only as warnings.
    unexpected = [str(w.message) for w in caught if not any(a in str(w.message) for a in ADVISORY_WARNINGS)]
    assert unexpected == []


@pytest.mark.parametrize("name", VECTOR_TASKS)
def test_seeded_reset_and_step_are_reproducible(name: str) -> None:
    # check_env compares seeded-reset observations only for envs with a registered spec, so check it here.
    env = GymnasiumEnv.from_task(name)
    action = env.action_space.sample()
    first = [env.reset(seed=123)[0], env.reset()[0], env.step(action)[0]]
    again = [env.reset(seed=123)[0], env.reset()[0], env.step(action)[0]]
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(env.reset(seed=456)[0], first[0])
    assert not np.array_equal(first[0], first[1])


def test_spaces_and_metadata_come_from_the_specs() -> None:
    env = GymnasiumEnv.from_task("pendulum", max_speed=4.0, dt=0.02)
    assert env.observation_space == gymnasium.spaces.Box(
        np.array([-1, -1, -4], np.float32), np.array([1, 1, 4], np.float32), dtype=np.float32
    )
    assert env.action_space == gymnasium.spaces.Box(-2.0, 2.0, shape=(1,), dtype=np.float32)
    assert env.metadata["render_fps"] == pytest.approx(50.0)
    assert env.render_mode is None
    obs, info = env.reset(seed=0)
    assert obs.dtype == np.float32 and obs.shape == (3,) and info == {}


def test_rejects_several_envs_and_render_modes() -> None:
    with pytest.raises(ValueError, match="num_envs == 1"):
        GymnasiumEnv(make("pendulum", 2, seed=0))
    with pytest.raises(ValueError, match="render_mode"):
        GymnasiumEnv(make("pendulum", 1, seed=0), render_mode="human")
    with pytest.raises(NotImplementedError, match="reset_mask"):
        GymnasiumVectorEnv.from_task("pendulum", 2).reset(options={"reset_mask": np.array([True, False])})


def test_env_matches_batched_env_and_returns_final_obs_at_truncation() -> None:
    env = GymnasiumEnv(make("pendulum", 1, seed=1))
    reference = make("pendulum", 1, seed=1)
    obs, _ = env.reset(seed=7)
    np.testing.assert_array_equal(obs, reference.reset(seed=7)[0].numpy())
    actions = _random_actions(200, (1,), seed=0)
    for t, action in enumerate(actions):
        obs, reward, terminated, truncated, _ = env.step(action)
        ref_obs, ref_reward, _, ref_truncated, ref_info = reference.step(torch.from_numpy(action).reshape(1, 1))
        assert type(reward) is float and type(terminated) is bool and type(truncated) is bool
        assert reward == ref_reward[0].item()
        assert not terminated
        assert truncated == (t == 199) == bool(ref_truncated[0])
        np.testing.assert_array_equal(obs, ref_info[INFO_FINAL_OBS][0].numpy())
    # At truncation the adapter hands back the final obs, not the batched env's already-reset one.
    assert not np.array_equal(obs, ref_obs[0].numpy())
    obs, _ = env.reset()
    np.testing.assert_array_equal(obs, reference.reset()[0].numpy())
    truncations = [env.step(action)[3] for action in actions]
    assert truncations == [False] * 199 + [True]


def test_env_puts_privileged_obs_matching_each_returned_obs_in_info(pendulum_with_angle: type[Pendulum]) -> None:
    env = GymnasiumEnv(pendulum_with_angle(1, seed=0, config=PendulumConfig(max_episode_steps=3)))
    obs, info = env.reset(seed=0)
    for action in _random_actions(3, (1,), seed=1):
        np.testing.assert_allclose(info[INFO_PRIVILEGED_OBS], [math.atan2(obs[1], obs[0]), obs[2]], atol=1e-6)
        obs, _, _, truncated, info = env.step(action)
    assert truncated
    np.testing.assert_allclose(info[INFO_PRIVILEGED_OBS], [math.atan2(obs[1], obs[0]), obs[2]], atol=1e-6)


def test_vector_env_spaces_match_gymnasium_pendulum() -> None:
    ours = GymnasiumVectorEnv.from_task("pendulum", num_envs=3)
    theirs = gymnasium.vector.SyncVectorEnv([lambda: gymnasium.make("Pendulum-v1")] * 3)
    assert ours.single_observation_space == theirs.single_observation_space
    assert ours.single_action_space == theirs.single_action_space
    assert ours.observation_space == theirs.observation_space
    assert ours.action_space == theirs.action_space
    assert ours.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    obs, info = ours.reset(seed=0)
    assert obs.shape == (3, 3) and obs.dtype == np.float32 and obs in ours.observation_space and info == {}
    obs, reward, terminated, truncated, info = ours.step(ours.action_space.sample())
    assert obs.shape == (3, 3) and reward.shape == terminated.shape == truncated.shape == (3,)
    assert terminated.dtype == truncated.dtype == np.bool_ and info == {}


def test_vector_env_info_at_autoreset_has_sync_vector_env_layout() -> None:
    ours = GymnasiumVectorEnv.from_task("pendulum", num_envs=2)
    theirs = gymnasium.vector.SyncVectorEnv(
        [lambda: gymnasium.make("Pendulum-v1")] * 2, autoreset_mode=AutoresetMode.SAME_STEP
    )
    infos = []
    for venv in (ours, theirs):
        venv.reset(seed=0)
        for _ in range(200):
            *_, truncated, info = venv.step(np.zeros((2, 1), np.float32))
        assert truncated.all()
        infos.append(info)
    ours_info, theirs_info = infos
    assert ours_info.keys() == theirs_info.keys() == {"final_obs", "_final_obs", "final_info", "_final_info"}
    for key in ("final_obs", "_final_obs", "_final_info"):
        assert ours_info[key].dtype == theirs_info[key].dtype and ours_info[key].shape == theirs_info[key].shape
    assert ours_info["final_obs"][0].shape == theirs_info["final_obs"][0].shape == (3,)
    assert theirs_info["final_info"] == {}
    # Pendulum defines success; Gymnasium's layout for a per-env value: the values and a mask of valid entries.
    assert set(ours_info["final_info"]) == {"is_success", "_is_success"}
    assert ours_info["final_info"]["_is_success"].tolist() == [True, True]


def _balanced_at_end(upright: bool) -> Pendulum:
    """A one-step pendulum episode that starts upright at rest (success) or hanging down (failure)."""
    env = Pendulum(1, config=PendulumConfig(max_episode_steps=1), seed=0)
    env.set_state(torch.tensor([[0.0 if upright else math.pi, 0.0]]))
    return env


@pytest.mark.parametrize("upright", [True, False])
def test_adapters_report_task_success_as_is_success(upright: bool) -> None:
    single = GymnasiumEnv(_balanced_at_end(upright))
    *_, truncated, info = single.step(np.zeros(1, np.float32))
    assert truncated and info["is_success"] is upright
    vector = GymnasiumVectorEnv(_balanced_at_end(upright))
    *_, info = vector.step(np.zeros((1, 1), np.float32))
    assert info["final_info"]["is_success"].tolist() == [upright]


def test_vector_env_matches_batched_env_with_staggered_episodes() -> None:
    env, reference = make("pendulum", 4, seed=3), make("pendulum", 4, seed=3)
    state = reference.state_dict()
    state["steps"] = torch.tensor([0, 50, 100, 199])  # envs finish at steps 199, 149, 99 and 0 (and 200)
    env.load_state_dict(state)
    reference.load_state_dict(state)
    # Gymnasium's episode statistics read metadata["autoreset_mode"]; with any other mode the returns differ.
    venv = RecordEpisodeStatistics(GymnasiumVectorEnv(env))
    running_return, finished_at = np.zeros(4), {i: [] for i in range(4)}
    for t, actions in enumerate(_random_actions(201, (4, 1), seed=2)):
        obs, reward, terminated, truncated, info = venv.step(actions)
        ref_obs, ref_reward, _, ref_truncated, ref_info = reference.step(torch.from_numpy(actions))
        np.testing.assert_array_equal(obs, ref_obs.numpy())
        np.testing.assert_array_equal(reward, ref_reward.numpy())
        np.testing.assert_array_equal(truncated, ref_truncated.numpy())
        assert not terminated.any()
        running_return += reward
        if not truncated.any():
            assert "final_obs" not in info and "episode" not in info
            continue
        np.testing.assert_array_equal(info["_final_obs"], truncated)
        for i in range(4):
            if truncated[i]:
                finished_at[i].append(t)
                np.testing.assert_array_equal(info["final_obs"][i], ref_info[INFO_FINAL_OBS][i].numpy())
                assert info["episode"]["r"][i] == pytest.approx(running_return[i])
                running_return[i] = 0.0
            else:
                assert info["final_obs"][i] is None
    assert finished_at == {0: [199], 1: [149], 2: [99], 3: [0, 200]}


def test_vector_env_passes_privileged_obs_and_final_privileged_obs(pendulum_with_angle: type[Pendulum]) -> None:
    batched = pendulum_with_angle(3, seed=0)
    state = batched.state_dict()
    state["steps"] = torch.tensor([0, 0, 199])
    batched.load_state_dict(state)
    venv = GymnasiumVectorEnv(batched)
    obs, _, _, truncated, info = venv.step(np.zeros((3, 1), np.float32))
    check_step_result(batched, batched.step(torch.zeros(3, 1)))
    np.testing.assert_array_equal(truncated, [False, False, True])
    angle = pendulum_with_angle.angle_obs
    np.testing.assert_array_equal(info[INFO_PRIVILEGED_OBS], angle(torch.from_numpy(obs)).numpy())
    final_obs = torch.from_numpy(info["final_obs"][2]).reshape(1, 3)
    np.testing.assert_array_equal(info["final_info"][INFO_PRIVILEGED_OBS][2], angle(final_obs)[0].numpy())
    np.testing.assert_array_equal(info["final_info"]["_privileged_obs"], truncated)


@pytest.mark.parametrize("device", DEVICES)
def test_adapters_speak_numpy_for_an_env_on_any_device(device: str) -> None:
    env = GymnasiumEnv.from_task("pendulum", device=device, max_episode_steps=2)
    venv = GymnasiumVectorEnv.from_task("pendulum", num_envs=2, device=device, max_episode_steps=2)
    obs, _ = env.reset(seed=0)
    vobs, _ = venv.reset(seed=0)
    for _ in range(2):
        obs, reward, _, truncated, _ = env.step(np.ones(1, np.float32))
        vobs, vreward, _, vtruncated, info = venv.step(np.ones((2, 1), np.float32))
    assert isinstance(obs, np.ndarray) and obs in env.observation_space and type(reward) is float and truncated
    assert isinstance(vobs, np.ndarray) and vobs in venv.observation_space and vtruncated.all()
    assert isinstance(vreward, np.ndarray) and all(isinstance(o, np.ndarray) for o in info["final_obs"])


def test_sb3_ppo_runs_on_vectorized_env() -> None:
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.logger import Logger

    venv = make_vec_env(lambda: GymnasiumEnv.from_task("pendulum"), n_envs=2, seed=0)
    model = PPO("MlpPolicy", venv, n_steps=1024, n_epochs=2, seed=0, device="cpu")
    model.set_logger(Logger(folder=None, output_formats=[]))  # SB3's default logger makes a /tmp/SB3-* folder
    model.learn(total_timesteps=2048)
    episodes = list(model.ep_info_buffer)
    assert len(episodes) == 2 * 2048 // 2 // 200  # 5 complete 200-step episodes per env
    assert all(episode["l"] == 200 for episode in episodes)
    assert all(-WORST_STEP_COST * 200 <= episode["r"] <= 0.0 for episode in episodes)


def _mean_return(env: GymnasiumEnv, policy: Callable[[np.ndarray], np.ndarray], episodes: int) -> float:
    total = 0.0
    for _ in range(episodes):
        obs, _ = env.reset()
        done = False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(policy(obs))
            total += reward
            done = terminated or truncated
    return total / episodes


@pytest.mark.slow
def test_sb3_sac_learns_pendulum_through_the_adapter() -> None:
    from stable_baselines3 import SAC
    from stable_baselines3.common.logger import Logger

    model = SAC("MlpPolicy", GymnasiumEnv.from_task("pendulum"), learning_rate=1e-3, seed=0, device="cpu")
    model.set_logger(Logger(folder=None, output_formats=[]))
    model.learn(total_timesteps=3000)
    eval_env = GymnasiumEnv.from_task("pendulum")
    eval_env.reset(seed=1)
    eval_env.action_space.seed(1)
    # 20 episodes: after 3000 steps an occasional start still fails to swing up, and 10 make the mean jumpy.
    random_return = _mean_return(eval_env, lambda _: eval_env.action_space.sample(), episodes=20)
    eval_env.reset(seed=1)
    trained_return = _mean_return(eval_env, lambda obs: model.predict(obs, deterministic=True)[0], episodes=20)
    assert random_return < -900  # sanity: the baseline is the usual ~ -1200 of a random pendulum policy
    assert trained_return > -600
    assert trained_return > random_return + 500


def test_camera_envs_have_dict_spaces_of_state_and_uint8_frames() -> None:
    # Every task with cameras by default is listed: those whose config has an image size are built (one env, no
    # frame rendered) and asked; building every task would take too long.
    sized = [name for name in names() if hasattr(default_config(name), "image_size")]
    assert [name for name in sized if image_specs_of(make(name, 1))] == sorted(CAMERA_TASKS)
    for name in CAMERA_TASKS:
        env = GymnasiumEnv.from_task(name, image_size=8)
        specs = image_specs_of(env.env)
        space = env.observation_space
        assert isinstance(space, gymnasium.spaces.Dict)
        assert list(space.keys()) == [STATE_KEY, *(spec.name for spec in specs)]
        assert space[STATE_KEY] == space_to_box(env.env.obs_spec)
        for spec in specs:
            assert space[spec.name] == gymnasium.spaces.Box(0, 255, (8, 8, spec.channels), np.uint8)


@pytest.mark.parametrize("name", GL_FREE_CAMERA_TASKS)
def test_check_env_passes_for_camera_tasks(name: str) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_task(name, image_size=16)
    unexpected = [str(w.message) for w in caught if not any(a in str(w.message) for a in ADVISORY_WARNINGS)]
    assert unexpected == []


def _assert_obs_equal(ours: object, theirs: ImageObs, index: int) -> None:
    """Gymnasium-side dict `ours` holds env `index`'s row of the batched env's observation `theirs`, same dtypes."""
    assert isinstance(ours, dict) and list(ours) == list(theirs)
    for key, value in theirs.items():
        np.testing.assert_array_equal(ours[key], value[index].numpy())
        assert ours[key].dtype == value.numpy().dtype
    assert ours[CAMERA].dtype == np.uint8


def test_camera_env_frames_equal_the_batched_env_s_for_the_same_seed() -> None:
    env = GymnasiumEnv.from_task("double_integrator/pixels", image_size=16)
    reference = make("double_integrator/pixels", 1, image_size=16)
    obs, _ = env.reset(seed=7)
    _assert_obs_equal(obs, reference.reset(seed=7), 0)
    assert obs in env.observation_space and obs[CAMERA].max() > TARGET_LEVEL  # the cart is in view
    actions = _random_actions(reference.max_episode_steps, (1,), seed=0)
    for action in actions:
        obs, _, _, truncated, _ = env.step(action)
        ref_obs, *_, ref_info = reference.step(torch.from_numpy(action).reshape(1, 1))
        _assert_obs_equal(obs, ref_info[INFO_FINAL_OBS], 0)
    # At truncation the adapter hands back the last frame of the episode, not the next episode's first.
    assert truncated and not np.array_equal(obs[CAMERA], ref_obs[CAMERA][0].numpy())


def test_camera_vector_env_batches_frames_and_reports_final_obs_dicts() -> None:
    env, reference = (make("double_integrator/pixels", 3, seed=3, image_size=16) for _ in range(2))
    state = reference.state_dict()
    state["steps"] = torch.tensor([0, 50, 99])  # envs finish at steps 99, 49 and 0
    env.load_state_dict(state)
    reference.load_state_dict(state)
    venv = GymnasiumVectorEnv(env)
    assert venv.observation_space == gymnasium.vector.utils.batch_space(venv.single_observation_space, 3)
    finished = []
    for t, actions in enumerate(_random_actions(50, (3, 1), seed=2)):
        obs, _, _, truncated, info = venv.step(actions)
        ref_obs, _, _, ref_truncated, ref_info = reference.step(torch.from_numpy(actions))
        assert obs in venv.observation_space
        for i in range(3):
            _assert_obs_equal({key: value[i] for key, value in obs.items()}, ref_obs, i)
        np.testing.assert_array_equal(truncated, ref_truncated.numpy())
        for i in np.flatnonzero(truncated):
            finished.append((t, int(i)))
            _assert_obs_equal(info["final_obs"][i], ref_info[INFO_FINAL_OBS], int(i))
            assert info["final_obs"][i] in venv.single_observation_space
    assert finished == [(0, 2), (49, 1)]
