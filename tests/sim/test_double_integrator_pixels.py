"""`double_integrator/pixels`: a camera env by the contract, whose frames show the cart's position (and nothing
else does), drawn deterministically without GL."""

from __future__ import annotations

import pytest
import torch

from robo_rl.envs import (
    INFO_FINAL_OBS,
    INFO_FINAL_PRIVILEGED_OBS,
    INFO_PRIVILEGED_OBS,
    CameraEnv,
    check_step_result,
    image_specs_of,
)
from robo_rl.image_spec import STATE_KEY
from robo_rl.sim import make
from robo_rl.sim.double_integrator.pixels import (
    CAMERA,
    TARGET_LEVEL,
    PixelDoubleIntegrator,
    PixelDoubleIntegratorConfig,
)


def test_steps_pass_the_camera_contract_through_episode_ends() -> None:
    env = make("double_integrator/pixels", 5, seed=0)
    assert isinstance(env, CameraEnv)
    assert [spec.name for spec in image_specs_of(env)] == [CAMERA] and env.obs_spec.names == ("v",)
    env.reset(seed=0)
    for _ in range(env.max_episode_steps + 2):
        result = env.step(torch.rand(5, 1) * 4 - 2)
        check_step_result(env, result)
    assert isinstance(result[4][INFO_FINAL_OBS], dict)


def test_the_frame_shows_the_position_and_the_state_does_not() -> None:
    env = PixelDoubleIntegrator(3, config=PixelDoubleIntegratorConfig(image_size=24))
    frames = env.draw(torch.tensor([-1.0, 0.0, 0.7]))
    assert frames.shape == (3, 24, 24, 1) and frames.dtype == torch.uint8
    peaks = frames[:, 12, :, 0].float().argmax(dim=1)  # a row through the cart's blob
    assert peaks.tolist()[0] < peaks.tolist()[1] < peaks.tolist()[2]
    assert frames[1, 0, :, 0].max() == TARGET_LEVEL  # the target mark at the origin, in the top rows
    shifted = env.draw(torch.tensor([-1.0, 0.02, 0.7]))
    assert not torch.equal(shifted[1], frames[1])  # sub-pixel moves change the frame
    obs = env.reset(seed=0)
    assert obs[STATE_KEY].shape == (3, 1)


def test_frames_are_a_function_of_the_seed() -> None:
    a, b = (make("double_integrator/pixels", 4, seed=3) for _ in range(2))
    first, second = a.reset(seed=3), b.reset(seed=3)
    assert torch.equal(first[CAMERA], second[CAMERA])
    action = torch.full((4, 1), 0.5)
    assert torch.equal(a.step(action)[0][CAMERA], b.step(action)[0][CAMERA])


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="image_size"):
        PixelDoubleIntegratorConfig(image_size=4)


def test_the_privileged_position_is_the_carts_and_only_the_critic_gets_it() -> None:
    from robo_rl.sim.double_integrator import DoubleIntegrator

    env = PixelDoubleIntegrator(5, config=PixelDoubleIntegratorConfig(privileged_position=True), seed=3)
    cart = DoubleIntegrator(5, seed=3)  # the same carts observed by their state [x, v]
    obs, truth = env.reset(), cart.reset()
    assert obs[STATE_KEY].shape == (5, 1) and torch.equal(obs[STATE_KEY][:, 0], truth[:, 1])
    assert env.privileged_obs is not None and torch.equal(env.privileged_obs[:, 0], truth[:, 0])
    ended = False
    for _ in range(env.max_episode_steps + 1):  # through an episode end: the final position is the ended episode's
        action = torch.rand(5, 1) * 4 - 2
        result, (truth, *_, cart_info) = env.step(action), cart.step(action)
        check_step_result(env, result)
        info = result[4]
        assert torch.equal(info[INFO_PRIVILEGED_OBS][:, 0], truth[:, 0])
        assert torch.equal(info[INFO_FINAL_PRIVILEGED_OBS][:, 0], cart_info[INFO_FINAL_OBS][:, 0])
        ended |= bool((result[2] | result[3]).any())
    assert ended and PixelDoubleIntegrator(5).privileged_obs_spec is None
