"""The peg insertion through its cameras (mujoco/peg_insert_pixels): the camera env contract, final frames of finished
episodes, determinism, and frames that show the block and the peg."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from robo_rl.envs import INFO_FINAL_OBS, STATE_KEY, CameraEnv, check_step_result, image_specs_of
from robo_rl.image_spec import CameraIntrinsics
from robo_rl.sim import make, make_expert
from robo_rl.sim.mujoco.peg_insert import PegInsert, PegInsertConfig
from robo_rl.sim.mujoco.peg_pixels import PEG_PIXELS, PegInsertPixels

SIZE = 32


def _env(episode_length: float = 15.0, num_envs: int = 2, seed: int = 0) -> PegInsertPixels:
    config = replace(PEG_PIXELS, image_size=SIZE, episode_length=episode_length, num_threads=0)
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
