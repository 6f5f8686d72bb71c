"""`FromGymnasium`: a Gymnasium MuJoCo task behind the batched contract, equal to stepping Gymnasium itself; a Dict
space of a state and camera frames as a camera env, round-tripped through both adapters."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from typing import Any

import gymnasium
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env

from robo_rl.envs import INFO_FINAL_OBS, check_step_result
from robo_rl.image_spec import STATE_KEY
from robo_rl.sim import make
from robo_rl.sim.from_gymnasium import FromGymnasium, GymnasiumTaskConfig
from robo_rl.sim.gymnasium_adapter import GymnasiumEnv, GymnasiumVectorEnv

TASK = "gym/InvertedPendulum-v5"


def test_specs_come_from_the_gymnasium_spaces() -> None:
    env = make(TASK, num_envs=2, seed=0)
    reference = gymnasium.make("InvertedPendulum-v5")
    assert env.obs_spec.dim == reference.observation_space.shape[0] == 4
    assert env.action_spec.low == (-3.0,) and env.action_spec.high == (3.0,)
    assert env.max_episode_steps == reference.spec.max_episode_steps == 1000
    assert env.dt == pytest.approx(reference.unwrapped.dt)


def test_steps_equal_independent_gymnasium_envs_seeded_seed_plus_index() -> None:
    env = make(TASK, num_envs=3)
    obs = env.reset(seed=7)
    references = [gymnasium.make("InvertedPendulum-v5") for _ in range(3)]
    expected = np.stack([ref.reset(seed=7 + i)[0] for i, ref in enumerate(references)])
    np.testing.assert_allclose(obs.numpy(), expected, rtol=0, atol=1e-6)
    actions = np.random.default_rng(0).uniform(-3, 3, size=(5, 3, 1)).astype(np.float32)
    for action in actions:
        result = env.step(torch.from_numpy(action))
        check_step_result(env, result)
        for i, ref in enumerate(references):
            ref_obs, ref_reward, ref_terminated, _, _ = ref.step(action[i])
            np.testing.assert_allclose(result[4][INFO_FINAL_OBS][i].numpy(), ref_obs, atol=1e-6)
            assert result[1][i].item() == pytest.approx(ref_reward)
            assert bool(result[2][i]) == ref_terminated


def test_termination_resets_in_the_same_step_and_reports_the_last_obs() -> None:
    env = make(TASK, num_envs=2, seed=0)
    reference = gymnasium.make("InvertedPendulum-v5")
    reference.reset(seed=0)
    push = torch.full((2, 1), 3.0)  # full force topples the pole within a few steps
    for _ in range(100):
        obs, _, terminated, truncated, info = env.step(push)
        ref_obs, _, ref_terminated, _, _ = reference.step(push[0].numpy())
        if bool(terminated[0]):
            break
    assert ref_terminated and not bool(truncated[0])
    np.testing.assert_allclose(info[INFO_FINAL_OBS][0].numpy(), ref_obs, atol=1e-6)
    # The returned obs is the first of the next episode: InvertedPendulum resets near the origin.
    assert obs[0].abs().max() < 0.011 < info[INFO_FINAL_OBS][0].abs().max()


def test_time_limit_override_truncates() -> None:
    env = FromGymnasium(1, config=GymnasiumTaskConfig(env_id="InvertedPendulum-v5", max_episode_steps=3), seed=0)
    flags = [env.step(torch.zeros(1, 1))[3].item() for _ in range(3)]
    assert flags == [False, False, True] and env.max_episode_steps == 3


def test_bad_ids_and_limits_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="NoSuchEnv-v0"):
        FromGymnasium(1, config=GymnasiumTaskConfig(env_id="NoSuchEnv-v0"))
    with pytest.raises(ValueError, match="max_episode_steps"):
        GymnasiumTaskConfig(max_episode_steps=0)


# Camera tasks: a Gymnasium Dict observation space of one state Box and uint8 frames.

TINY = "robo_rl_test/TinyCamera-v0"
"""Gymnasium id of `TinyCameraEnv` (registered by the `gym_ids` fixture)."""
TINY_SPACES = {
    "proprio": gymnasium.spaces.Box(-10.0, 10.0, (2,), np.float32),
    "front": gymnasium.spaces.Box(0, 255, (6, 8, 3), np.uint8),
    "depth": gymnasium.spaces.Box(0, 255, (4, 4, 1), np.uint8),
}


class TinyCameraEnv(gymnasium.Env[dict[str, np.ndarray], np.ndarray]):
    """A point on a line, its position and velocity in `proprio`, seen by an RGB camera `front` (a bright column
    where the point is) and a grey one `depth` (one level that grows with the distance): no renderer, no GL."""

    def __init__(self, observation_space: gymnasium.spaces.Dict | None = None) -> None:
        self.metadata = {"render_modes": [], "render_fps": 10}
        self.observation_space = observation_space or gymnasium.spaces.Dict(TINY_SPACES)
        self.action_space = gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.position, self.velocity = 0.0, 0.0

    def reset(
        self, *, seed: int | None = None, options: dict[str, object] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, object]]:
        super().reset(seed=seed)
        self.position, self.velocity = float(self.np_random.uniform(-1.0, 1.0)), 0.0
        return self._observe(), {}

    def step(self, action: np.ndarray) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, object]]:
        self.velocity += 0.2 * float(np.clip(action[0], -1.0, 1.0))
        self.position += 0.1 * self.velocity
        return self._observe(), -abs(self.position), abs(self.position) > 1.5, False, {}

    def _observe(self) -> dict[str, np.ndarray]:
        front = np.zeros((6, 8, 3), np.uint8)
        front[:, int(np.clip((self.position + 1.5) / 3.0 * 8, 0, 7))] = (255, 128, 0)
        depth = np.full((4, 4, 1), int(np.clip(abs(self.position) * 100, 0, 255)), np.uint8)
        return {"proprio": np.array([self.position, self.velocity], np.float32), "front": front, "depth": depth}


@pytest.fixture
def gym_ids() -> Iterator[Callable[..., str]]:
    """Registers Gymnasium ids for a test (`register(id, entry_point, **kwargs)` returns the id); removes them after."""
    registered: list[str] = []

    def register(env_id: str, entry_point: Callable[..., gymnasium.Env[Any, Any]], **kwargs: Any) -> str:
        gymnasium.register(env_id, entry_point=entry_point, max_episode_steps=20, kwargs=kwargs)
        registered.append(env_id)
        return env_id

    register(TINY, TinyCameraEnv)
    yield register
    for env_id in registered:
        del gymnasium.registry[env_id]


def _tiny(num_envs: int) -> FromGymnasium:
    return FromGymnasium(num_envs, config=GymnasiumTaskConfig(env_id=TINY))


def _assert_same_obs(ours: dict[str, torch.Tensor], theirs: dict[str, np.ndarray], index: int, state: str) -> None:
    """Env `index` of robo_rl observation `ours` is Gymnasium's `theirs` (its state under key `state`)."""
    np.testing.assert_array_equal(ours[STATE_KEY][index].numpy(), theirs[state])
    for key in set(ours) - {STATE_KEY}:
        assert ours[key].dtype == torch.uint8
        np.testing.assert_array_equal(ours[key][index].numpy(), theirs[key])


@pytest.mark.usefixtures("gym_ids")
def test_a_dict_space_of_state_and_frames_becomes_a_camera_env_equal_to_gymnasium() -> None:
    env = _tiny(2)
    # Gymnasium's Dict sorts the keys: the cameras come in that order, the state is found by its space.
    assert [(spec.name, spec.shape) for spec in env.image_specs] == [("depth", (4, 4, 1)), ("front", (6, 8, 3))]
    assert env.obs_spec.dim == 2 and env.max_episode_steps == 20 and env.dt == pytest.approx(0.1)
    references = [gymnasium.make(TINY) for _ in range(2)]
    obs = env.reset(seed=5)
    assert isinstance(obs, dict)
    for i, reference in enumerate(references):
        _assert_same_obs(obs, reference.reset(seed=5 + i)[0], i, "proprio")
    for action in np.random.default_rng(0).uniform(-1, 1, size=(20, 2, 1)).astype(np.float32):
        result = env.step(torch.from_numpy(action))
        check_step_result(env, result)
        for i, reference in enumerate(references):
            _assert_same_obs(result[4][INFO_FINAL_OBS], reference.step(action[i])[0], i, "proprio")
    assert bool(result[3].all())  # the time limit: the final obs above were the episodes' last ones


@pytest.mark.usefixtures("gym_ids")
def test_a_camera_task_round_trips_through_both_adapters() -> None:
    single = GymnasiumEnv(_tiny(1))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(single, skip_render_check=True)
    assert [str(w.message) for w in caught] == []
    space = single.observation_space
    assert isinstance(space, gymnasium.spaces.Dict) and list(space.keys()) == [STATE_KEY, "depth", "front"]
    assert space[STATE_KEY] == TINY_SPACES["proprio"]
    assert space["front"] == TINY_SPACES["front"] and space["depth"] == TINY_SPACES["depth"]
    reference = gymnasium.make(TINY)
    obs, _ = single.reset(seed=3)
    expected, _ = reference.reset(seed=3)
    assert obs.keys() - {STATE_KEY} == expected.keys() - {"proprio"}
    np.testing.assert_array_equal(obs[STATE_KEY], expected["proprio"])
    for key in ("front", "depth"):
        assert obs[key].dtype == np.uint8
        np.testing.assert_array_equal(obs[key], expected[key])
    vector = GymnasiumVectorEnv(_tiny(3))
    batch, _ = vector.reset(seed=0)
    assert batch in vector.observation_space and batch["front"].shape == (3, 6, 8, 3)


def test_a_robo_rl_camera_task_round_trips_through_gymnasium(gym_ids: Callable[..., str]) -> None:
    task = "double_integrator/pixels"
    env_id = gym_ids("robo_rl_test/PixelCart-v0", lambda: GymnasiumEnv.from_task(task, image_size=16))
    env = FromGymnasium(2, config=GymnasiumTaskConfig(env_id=env_id, max_episode_steps=20))
    original = make(task, 1, image_size=16)
    assert [(spec.name, spec.shape) for spec in env.image_specs] == [(s.name, s.shape) for s in original.image_specs]
    assert env.obs_spec.dim == original.obs_spec.dim and env.dt == pytest.approx(original.dt)
    obs = env.reset(seed=7)
    assert isinstance(obs, dict)
    for i in range(2):
        ours = {key: value[i] for key, value in obs.items()}
        theirs = original.reset(seed=7 + i)
        assert all(torch.equal(ours[key], theirs[key][0]) for key in theirs) and ours.keys() == theirs.keys()
    check_step_result(env, env.step(torch.zeros(2, 1)))


@pytest.mark.parametrize(
    ("observation_space", "message"),
    [
        (
            {"a": gymnasium.spaces.Box(-1, 1, (2,)), "b": gymnasium.spaces.Box(-1, 1, (3,))},
            r"exactly one.*\['a', 'b'\]",
        ),
        ({"front": TINY_SPACES["front"]}, r"exactly one 1-D Box \(the state\), got keys \[\]"),
        ({"s": TINY_SPACES["proprio"], "cam": gymnasium.spaces.Box(0, 1, (6, 8, 3))}, r"obs\['cam'\].*uint8"),
        (
            {"s": TINY_SPACES["proprio"], "cam": gymnasium.spaces.Box(0, 255, (6, 8, 2), np.uint8)},
            r"obs\['cam'\].*chan",
        ),
        ({"s": TINY_SPACES["proprio"], "mode": gymnasium.spaces.Discrete(3)}, r"obs\['mode'\]"),
        ({"s": TINY_SPACES["proprio"], "state": TINY_SPACES["depth"]}, r"obs\['state'\].*other than 'state'"),
    ],
)
def test_other_dict_spaces_are_refused_naming_the_key(
    gym_ids: Callable[..., str], observation_space: dict[str, gymnasium.spaces.Space[Any]], message: str
) -> None:
    env_id = gym_ids(
        "robo_rl_test/Refused-v0", TinyCameraEnv, observation_space=gymnasium.spaces.Dict(observation_space)
    )
    with pytest.raises(ValueError, match=message):
        FromGymnasium(1, config=GymnasiumTaskConfig(env_id=env_id))
