"""The RC car race through its forward camera (rc_car/race_pixels): the camera env contract, final frames, a track
texture the camera sees where the car is, and frames that turn with the car."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
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
from robo_rl.image_spec import CameraIntrinsics
from robo_rl.sim import make_expert
from robo_rl.sim.rc_car.race import RCCarRace
from robo_rl.sim.rc_car.race_config import RaceConfig
from robo_rl.sim.rc_car.race_pixels import RACE_PIXELS, RCCarRacePixels
from robo_rl.sim.rc_car.track_scene import CAMERA_FOVY

SIZE = 32


def _env(episode_length: float = 30.0, num_envs: int = 2, track: str = "kidney") -> RCCarRacePixels:
    config = replace(RACE_PIXELS, image_size=SIZE, episode_length=episode_length, track=track)
    return RCCarRacePixels(num_envs, config=config, seed=0)


def _drive(env: RCCarRacePixels, count: int) -> list[tuple]:
    action = torch.tensor([[0.3, 0.5]]).repeat(env.num_envs, 1)
    return [env.step(action) for _ in range(count)]


def _frame_at(env: RCCarRacePixels, x: float, y: float, yaw: float) -> torch.Tensor:
    """The front camera's frame of env 0 with the car at rest at x, y (m) heading yaw (rad)."""
    state = env.task.state
    state[0] = torch.tensor([x, y, yaw, 0.0, 0.0, 0.0, 0.0])
    env.task.set_state(state)
    return env.frames()["front"][0].numpy().astype(np.int64)


def _share(frame: np.ndarray, colour: str) -> float:
    """Fraction of the frame's lower half that is asphalt grey or grass green."""
    lower = frame[SIZE // 2 :]
    r, g, b = lower[..., 0], lower[..., 1], lower[..., 2]
    if colour == "asphalt":
        match = (np.abs(r - g) < 12) & (np.abs(g - b) < 12) & (g < 150)
    else:
        match = (g > r + 25) & (g > b + 25)
    return float(match.mean())


def test_camera_env_contract_and_final_frames_of_finished_episodes() -> None:
    env = _env(episode_length=0.1)  # 5 control steps of 20 ms
    assert isinstance(env, CameraEnv)
    (spec,) = image_specs_of(env)
    assert spec.name == "front" and spec.intrinsics == CameraIntrinsics.from_fovy(CAMERA_FOVY, SIZE, SIZE)
    env.reset(seed=4)
    results = _drive(env, 5)
    for result in results:
        check_step_result(env, result)
    obs, _, terminated, truncated, info = results[-1]
    assert (truncated & ~terminated).all()
    assert (obs["front"] != info[INFO_FINAL_OBS]["front"]).flatten(1).any(dim=1).all()
    longer = _env(episode_length=30.0)
    longer.reset(seed=4)
    continued = _drive(longer, 5)[-1][0]
    assert torch.equal(continued["front"], info[INFO_FINAL_OBS]["front"]), "final frames show the final state"
    assert torch.equal(results[0][0]["front"], results[0][4][INFO_FINAL_OBS]["front"])


@pytest.mark.parametrize("name", ["kidney", "technical"])
def test_the_camera_sees_the_track_under_the_car_and_grass_beside_it(name: str) -> None:
    env = _env(track=name)
    track = env.task.track
    s = torch.linspace(0.0, track.length, 13)[:-1]  # all around the lap: a mirrored texture fails somewhere
    points, headings = track.point_at(s), track.heading_at(s)
    for (x, y), heading in zip(points.tolist(), headings.tolist(), strict=True):
        on_track = _frame_at(env, x, y, heading)
        assert _share(on_track, "asphalt") > 0.4, "along the centre line the road fills most of the lower half"
    grass = []  # a metre off each edge, same heading (sometimes another part of the lap is there)
    away = float(track.half_width_at(s[:1])) + 1.0
    for (x, y), heading in zip(points.tolist(), headings.tolist(), strict=True):
        for side in (-1.0, 1.0):
            frame = _frame_at(env, x + side * away * math.sin(heading), y - side * away * math.cos(heading), heading)
            grass.append(_share(frame, "grass") > 0.5)
    assert np.mean(grass) > 0.7, "off the track the camera sees grass"


def test_frames_change_when_the_car_turns_and_repeat_for_the_same_pose() -> None:
    env = _env()
    s = torch.tensor([3.0])
    point, heading = env.task.track.point_at(s)[0].tolist(), float(env.task.track.heading_at(s))
    straight = _frame_at(env, *point, heading)
    assert np.array_equal(straight, _frame_at(env, *point, heading))
    for turn in (0.3, -0.3):
        turned = _frame_at(env, *point, heading + turn)
        assert np.abs(turned - straight).mean() > 5.0, "a 0.3 rad turn moves the picture"
    left, right = _frame_at(env, *point, heading + 0.3), _frame_at(env, *point, heading - 0.3)
    assert np.abs(left - right).mean() > 5.0


def test_cameras_are_refused_where_they_do_not_apply() -> None:
    with pytest.raises(ValueError, match="RCCarRacePixels"):
        RCCarRace(1, config=RaceConfig(cameras=("front",)))
    with pytest.raises(ValueError, match="cameras"):
        RaceConfig(cameras=("rear",))
    with pytest.raises(ValueError, match="torch"):
        RCCarRacePixels(1, config=replace(RACE_PIXELS, backend="numba"))


def test_the_scripted_driver_drives_the_camera_env() -> None:
    env = _env()
    driver = make_expert("rc_car/race_pixels", env)
    for _ in range(5):
        obs = env.step(driver.action())[0]
    assert obs["front"].shape == (2, SIZE, SIZE, 3)
    assert (env.task.state[:, 3] > 0).all(), "driving forward"


def test_camera_state_keeps_part_of_the_state_and_makes_the_whole_of_it_privileged() -> None:
    observed = ("vx", "previous_drive_0")
    config = replace(RACE_PIXELS, image_size=SIZE, episode_length=0.1, camera_state=observed)
    env = RCCarRacePixels(2, config=config, seed=0)
    state_task = RCCarRace(2, config=replace(config, cameras=(), camera_state=(), backend="torch"), seed=0)
    names = state_task.obs_spec.names
    columns = [names.index(name) for name in observed]
    assert env.obs_spec.names == observed
    assert env.privileged_obs_spec is not None and state_task.privileged_obs_spec is not None
    assert env.privileged_obs_spec.names == names + state_task.privileged_obs_spec.names
    obs, state = env.reset(seed=3), state_task.reset(seed=3)
    torch.testing.assert_close(obs["state"], state[:, columns])
    torch.testing.assert_close(env.privileged_obs, torch.cat((state, state_task.privileged_obs), dim=-1))
    action = torch.tensor([[0.3, 0.5], [-0.2, 0.8]])
    ended = False
    for _ in range(6):  # 5 steps of 20 ms end the episode: the final observations are checked too
        result = env.step(action)
        check_step_result(env, result)
        obs, _, terminated, truncated, info = result
        state, _, _, _, state_info = state_task.step(action)
        torch.testing.assert_close(obs["state"], state[:, columns])
        torch.testing.assert_close(info[INFO_PRIVILEGED_OBS], torch.cat((state, state_task.privileged_obs), dim=-1))
        final = torch.cat((state_info[INFO_FINAL_OBS], state_info[INFO_FINAL_PRIVILEGED_OBS]), dim=-1)
        torch.testing.assert_close(info[INFO_FINAL_PRIVILEGED_OBS], final)
        torch.testing.assert_close(info[INFO_FINAL_OBS]["state"], state_info[INFO_FINAL_OBS][:, columns])
        ended |= bool((terminated | truncated).all())
    assert ended
    env.close()


def test_camera_state_refuses_unknown_names_and_a_car_without_a_camera() -> None:
    with pytest.raises(ValueError, match="speed"):
        RCCarRacePixels(1, config=replace(RACE_PIXELS, image_size=SIZE, camera_state=("speed",)), seed=0)
    with pytest.raises(ValueError, match="needs cameras"):
        RaceConfig(camera_state=("vx",))
