"""`check_step_result` on envs with cameras: dict observations, image shapes and the uint8 dtype."""

from __future__ import annotations

import pytest
import torch

from robo_rl.envs import INFO_FINAL_OBS, STATE_KEY, CameraEnv, check_step_result, image_specs_of, state_of
from robo_rl.image_spec import ImageSpec
from robo_rl.spaces import SpaceSpec


class TwoCameraEnv:
    """The smallest camera env: two constant cameras and a one-value state (a fixture for the checker)."""

    num_envs, dt, max_episode_steps = 3, 0.1, 10
    device = torch.device("cpu")
    obs_spec = SpaceSpec(("x",), (-1.0,), (1.0,), ("m",))
    action_spec = SpaceSpec(("u",), (-1.0,), (1.0,), ("",))
    privileged_obs_spec = None
    image_specs = (ImageSpec("wrist", 8, 6), ImageSpec("fixed", 4, 4, channels=1))

    def observation(self) -> dict[str, torch.Tensor]:
        obs = {STATE_KEY: torch.zeros(self.num_envs, 1)}
        obs.update({s.name: torch.zeros(self.num_envs, *s.shape, dtype=torch.uint8) for s in self.image_specs})
        return obs

    def reset(self, seed: int | None = None) -> dict[str, torch.Tensor]:
        return self.observation()

    def step(self, action: torch.Tensor):
        flags = torch.zeros(self.num_envs, dtype=torch.bool)
        obs = self.observation()
        return obs, torch.zeros(self.num_envs), flags, flags, {INFO_FINAL_OBS: self.observation()}


def test_a_well_formed_camera_step_passes_and_the_helpers_read_it() -> None:
    env = TwoCameraEnv()
    assert isinstance(env, CameraEnv)
    assert [s.name for s in image_specs_of(env)] == ["wrist", "fixed"]
    result = env.step(torch.zeros(3, 1))
    check_step_result(env, result)
    assert state_of(result[0]).shape == (3, 1)


@pytest.mark.parametrize(
    ("break_it", "message"),
    [
        (lambda obs: obs.pop("fixed"), r"obs: expected keys \['fixed', 'state', 'wrist'\]"),
        (lambda obs: obs.update(wrist=torch.zeros(3, 8, 6, 3)), r"obs\[wrist\]: expected dtype torch.uint8"),
        (lambda obs: obs.update(wrist=torch.zeros(3, 3, 8, 6, dtype=torch.uint8)), r"obs\[wrist\]: expected shape"),
        (lambda obs: obs.update(fixed=torch.zeros(3, 4, 4, 3, dtype=torch.uint8)), r"obs\[fixed\]: expected shape"),
    ],
)
def test_a_broken_camera_observation_is_named(break_it, message: str) -> None:
    env = TwoCameraEnv()
    obs, reward, terminated, truncated, info = env.step(torch.zeros(3, 1))
    break_it(obs)
    with pytest.raises(ValueError, match=message):
        check_step_result(env, (obs, reward, terminated, truncated, info))


def test_a_camera_env_that_returns_a_bare_tensor_or_a_bad_final_obs_is_refused() -> None:
    env = TwoCameraEnv()
    obs, reward, terminated, truncated, info = env.step(torch.zeros(3, 1))
    with pytest.raises(ValueError, match="obs: an env with cameras returns a dict"):
        check_step_result(env, (obs[STATE_KEY], reward, terminated, truncated, info))
    info[INFO_FINAL_OBS]["wrist"] = info[INFO_FINAL_OBS]["wrist"].float()
    with pytest.raises(ValueError, match=r"final_obs\[wrist\]: expected dtype torch.uint8"):
        check_step_result(env, (obs, reward, terminated, truncated, info))
