"""The peg insertion through its cameras (mujoco/peg_insert_pixels): the camera env contract, final frames of finished
episodes, determinism, and frames that show the block and the peg; the state without the hole estimate, the critic's
privileged tip-to-hole offset (against MuJoCo's own sites) and demonstrations that carry it."""

from __future__ import annotations

from dataclasses import replace

import mujoco
import numpy as np
import pytest
import torch

from robo_rl.envs import (
    INFO_FINAL_OBS,
    INFO_FINAL_PRIVILEGED_OBS,
    INFO_PRIVILEGED_OBS,
    STATE_KEY,
    CameraEnv,
    check_step_result,
    image_specs_of,
)
from robo_rl.image_spec import CameraIntrinsics
from robo_rl.runners.collect import collect_demonstrations
from robo_rl.sim import make, make_expert
from robo_rl.sim.mujoco.peg_insert import PegInsert, PegInsertConfig
from robo_rl.sim.mujoco.peg_pixels import PEG_PIXELS, PegInsertPixels

SIZE = 32


def _env(episode_length: float = 15.0, num_envs: int = 2, seed: int = 0, **options: object) -> PegInsertPixels:
    config = replace(PEG_PIXELS, image_size=SIZE, episode_length=episode_length, num_threads=0, **options)
    return PegInsertPixels(num_envs, config=config, seed=seed)


def _steps(env: PegInsertPixels, count: int) -> list[tuple]:
    """`count` steps of a fixed small joint motion (the same in every env and every run)."""
    action = torch.tensor([[0.01, -0.02, 0.02, 0.0]]).repeat(env.num_envs, 1)
    return [env.step(action) for _ in range(count)]


def _bright_blue(frames: torch.Tensor) -> np.ndarray:
    """Pixels per frame of the block's lit light blue (the floor's blues are darker)."""
    f = frames.int()
    return ((f[..., 2] > 170) & (f[..., 2] > f[..., 0] + 40)).sum(dim=(1, 2)).numpy()


def test_camera_env_contract_and_final_frames_of_finished_episodes() -> None:
    env = _env(episode_length=0.3)  # 3 control steps: the third ends every episode
    assert isinstance(env, CameraEnv)
    assert [spec.name for spec in image_specs_of(env)] == ["wrist", "side"]
    obs = env.reset(seed=1)
    assert set(obs) == {STATE_KEY, "wrist", "side"} and obs["wrist"].shape == (2, SIZE, SIZE, 3)
    results = _steps(env, 3)
    for result in results:
        check_step_result(env, result)
    for result in results[:2]:
        assert not (result[2] | result[3]).any()
        for name in ("wrist", "side"):
            assert torch.equal(result[0][name], result[4][INFO_FINAL_OBS][name])
    obs, _, terminated, truncated, info = results[2]
    assert (terminated | truncated).all()
    for name in ("wrist", "side"):
        assert (obs[name] != info[INFO_FINAL_OBS][name]).flatten(1).any(dim=1).all(), "the next episode's first frame"
    # The final frames are those of the state the episode ended in: an env whose episodes last longer, from the same
    # seed and actions, is in that state after the same three steps and renders the same bytes.
    longer = _env(episode_length=15.0)
    longer.reset(seed=1)
    continued = _steps(longer, 3)[-1][0]
    for name in ("wrist", "side"):
        assert torch.equal(continued[name], info[INFO_FINAL_OBS][name])


def test_same_seed_same_bytes_and_frames_follow_the_state() -> None:
    first, second = _env(), _env()
    a, b = first.reset(seed=3), second.reset(seed=3)
    for name in ("wrist", "side"):
        assert torch.equal(a[name], b[name])
    a, b = _steps(first, 2)[-1][0], _steps(second, 2)[-1][0]
    for name in ("wrist", "side"):
        assert torch.equal(a[name], b[name])
    moved = _steps(first, 1)[-1][0]
    assert not torch.equal(moved["wrist"], a["wrist"]), "the wrist camera moves with the arm"


def _orange(frames: torch.Tensor) -> np.ndarray:
    """`(N, H, W)` bool: the peg's orange."""
    f = frames.int()
    return ((f[..., 0] > f[..., 2] + 50) & (f[..., 0] > f[..., 1] + 20)).numpy()


def test_cameras_see_the_block_and_lose_it_when_it_moves_away() -> None:
    env = _env()
    obs = env.reset(seed=0)
    peg = _orange(obs["wrist"])
    assert (peg.sum(axis=(1, 2)) > 20).all() and not peg[:, : SIZE // 2].any(), (
        "the peg in the wrist frame's lower half"
    )
    wrist, side = _bright_blue(obs["wrist"]), _bright_blue(obs["side"])
    assert (wrist > 0.15 * SIZE * SIZE).all(), "the wrist camera looks down at the block's top"
    assert (side > 0.03 * SIZE * SIZE).all(), "the side camera sees the block"
    pose = env.task.hole_pose()
    pose[:, 1] += 0.35  # the block 35 cm to the side, out of both views
    env.task.set_hole(pose)
    obs = env.step(torch.zeros(env.num_envs, 4))[0]
    assert (_bright_blue(obs["wrist"]) == 0).all()
    assert (_bright_blue(obs["side"]) < side / 4).all()


def test_specs_state_the_fovy_intrinsics_and_the_registry_builds_it() -> None:
    env = make("mujoco/peg_insert_pixels", 1, image_size=SIZE, cameras=("side",))
    (spec,) = image_specs_of(env)
    assert spec.name == "side" and spec.shape == (SIZE, SIZE, 3)
    assert spec.intrinsics == CameraIntrinsics.from_fovy(40.0, SIZE, SIZE)
    assert make("mujoco/peg_insert", 1).obs_spec.dim == env.obs_spec.dim


def test_cameras_are_refused_where_they_do_not_apply() -> None:
    with pytest.raises(ValueError, match="PegInsertPixels"):
        PegInsert(1, config=PegInsertConfig(cameras=("wrist",)))
    with pytest.raises(ValueError, match="cameras"):
        PegInsertConfig(cameras=("top",))
    with pytest.raises(ValueError, match="at least one camera"):
        PegInsertPixels(1, config=PegInsertConfig())


def test_the_scripted_operator_drives_the_camera_env() -> None:
    env = _env()
    expert = make_expert("mujoco/peg_insert_pixels", env)
    before = env.task.peg_tip_position()
    for _ in range(3):
        obs = env.step(expert.action())[0]
    assert obs["wrist"].shape == (2, SIZE, SIZE, 3)
    assert not torch.equal(env.task.peg_tip_position(), before)


def test_a_checkpoint_restores_the_frames_too() -> None:
    env = _env()
    _steps(env, 2)
    saved = env.state_dict()
    first = [result[0] for result in _steps(env, 2)]
    env.load_state_dict(saved)
    again = [result[0] for result in _steps(env, 2)]
    for a, b in zip(first, again, strict=True):
        assert all(torch.equal(a[name], b[name]) for name in ("state", "wrist", "side"))


HIDDEN = {"observe_hole_estimate": False, "privileged_hole": True}
"""The camera task whose state omits the hole estimate, the critic given the tip relative to the true hole."""
JOINT_NAMES = tuple(f"{j}_{q}" for q in ("angle", "velocity") for j in ("yaw", "shoulder", "elbow", "wrist"))


class _MujocoTipToHole:
    """The peg tip minus the hole site, per env, from MuJoCo's own kinematics of the engine's joints and blocks."""

    def __init__(self, task: PegInsert) -> None:
        self.task, self.data = task, mujoco.MjData(task.model)
        self.tip = mujoco.mj_name2id(task.model, mujoco.mjtObj.mjOBJ_SITE, "peg_tip")
        self.hole = mujoco.mj_name2id(task.model, mujoco.mjtObj.mjOBJ_SITE, "hole")

    def __call__(self) -> np.ndarray:
        engine, rows = self.task.engine, []
        for env in range(self.task.num_envs):
            self.data.qpos[:] = engine.qpos[env]
            self.data.mocap_pos[:] = engine.mocap_pos[env]
            self.data.mocap_quat[:] = engine.mocap_quat[env]
            mujoco.mj_kinematics(self.task.model, self.data)
            rows.append(self.data.site_xpos[self.tip] - self.data.site_xpos[self.hole])
        return np.array(rows)


def test_the_state_without_the_estimate_holds_the_joints_alone() -> None:
    seen, hidden = _env(), _env(**HIDDEN)
    assert seen.obs_spec.names[:8] == JOINT_NAMES and seen.obs_spec.dim == 11 and seen.privileged_obs_spec is None
    assert hidden.obs_spec.names == JOINT_NAMES and hidden.obs_spec.units == ("rad",) * 4 + ("rad/s",) * 4
    assert hidden.privileged_obs_spec is not None
    assert hidden.privileged_obs_spec.names == ("peg_tip_to_hole_x", "peg_tip_to_hole_y", "peg_tip_to_hole_z")
    obs = hidden.reset(seed=3)
    assert obs[STATE_KEY].shape == (2, 8) and set(obs) == {STATE_KEY, "wrist", "side"}
    state = _steps(hidden, 2)[-1][0][STATE_KEY]
    engine = hidden.task.engine
    np.testing.assert_allclose(state.numpy(), np.concatenate((engine.qpos, engine.qvel), axis=1), rtol=1e-6)
    # Same seed, same physics: the hidden state is the seen one without its last three entries.
    seen.reset(seed=3)
    assert torch.equal(_steps(seen, 2)[-1][0][STATE_KEY][:, :8], state)
    assert INFO_PRIVILEGED_OBS not in seen.step(torch.zeros(2, 4))[4]


def test_the_privileged_obs_is_the_tip_relative_to_the_true_hole_through_episode_ends() -> None:
    # 3 control steps an episode, a hole estimate off by 1 cm: the privileged part must follow the true hole.
    env = _env(episode_length=0.3, **HIDDEN, hole_estimate_noise=0.01)
    truth = _MujocoTipToHole(env.task)
    at_end: list[np.ndarray] = []
    keep_frames = env.task.episode_end_hook
    assert keep_frames is not None

    def hook(done: np.ndarray) -> None:
        at_end.append(truth()[done])  # the engine still holds the final states and the old holes here
        keep_frames(done)

    env.task.episode_end_hook = hook
    env.reset(seed=5)
    np.testing.assert_allclose(env.privileged_obs.numpy(), truth(), atol=1e-6)
    estimate_error = env.task.hole_estimate().numpy() - env.task.hole_pose().numpy()[:, :3]
    assert np.all(np.abs(estimate_error).max(axis=1) > 1e-3)  # so the estimate's offset would not pass
    action = torch.tensor([[0.02, -0.03, 0.03, 0.0], [-0.02, 0.02, -0.01, 0.01]])
    ends = 0
    for _ in range(7):  # two episode ends and a step after
        _, _, terminated, truncated, info = env.step(action)
        done = (terminated | truncated).numpy()
        np.testing.assert_allclose(info[INFO_PRIVILEGED_OBS].numpy(), truth(), atol=1e-6)
        assert torch.equal(env.privileged_obs, info[INFO_PRIVILEGED_OBS])
        final = info[INFO_FINAL_PRIVILEGED_OBS].numpy()
        np.testing.assert_array_equal(final[~done], info[INFO_PRIVILEGED_OBS].numpy()[~done])
        if done.any():
            ends += 1
            np.testing.assert_allclose(final[done], at_end[-1], atol=1e-6)
            assert np.abs(final[done] - info[INFO_PRIVILEGED_OBS].numpy()[done]).max() > 1e-3  # a new hole
    assert ends == 2 and len(at_end) == 2


def test_demonstrations_without_the_estimate_carry_frames_and_the_privileged_part() -> None:
    env = _env(**HIDDEN)
    expert = make_expert("mujoco/peg_insert_pixels", env)
    demos = collect_demonstrations(env, lambda _obs: expert.action(), 40, seed=2)
    stored = demos.buffer.stored()
    assert stored.obs.shape[1] == 8 and stored.critic_obs.shape[1] == 11
    assert torch.equal(stored.critic_obs[:, :8], stored.obs)
    assert stored.images is not None and stored.images["wrist"].shape[1:] == (SIZE, SIZE, 3)
    # The critic's last three are the tip relative to the true hole: the expert brings the peg down over it.
    assert stored.next_critic_obs[:, 10].min() < stored.critic_obs[:2, 10].min() - 0.01


def test_the_operator_reads_its_estimate_from_the_task_not_the_observation() -> None:
    # The same seed with and without the estimate in the observation: the same actions, the same insertions.
    successes = []
    for observe in (True, False):
        config = replace(PegInsertConfig(hole_estimate_noise=0.0005, num_threads=0), observe_hole_estimate=observe)
        env = PegInsert(8, config=config, seed=4)
        expert, won = make_expert("mujoco/peg_insert", env), np.zeros(8, dtype=bool)
        for _ in range(env.max_episode_steps):
            won |= env.step(expert.action())[4]["success"].numpy()
        successes.append(won)
    assert successes[0].sum() >= 6
    np.testing.assert_array_equal(successes[0], successes[1])
