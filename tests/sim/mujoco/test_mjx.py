"""The optional MJX backend (`backend="mjx"`): skipped without JAX; a clear error when selected without it."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from robo_rl.envs import INFO_FINAL_OBS, check_step_result
from robo_rl.sim import make


def _has_mjx() -> bool:
    if importlib.util.find_spec("jax") is None:
        return False
    try:
        from mujoco import mjx  # noqa: F401
    except ImportError:
        return False
    return True


def _require_mjx() -> None:
    pytest.importorskip("jax")
    pytest.importorskip("mujoco.mjx")


def _random_actions(env: object, steps: int, seed: int) -> torch.Tensor:
    spec = env.action_spec  # type: ignore[attr-defined]
    low, high = spec.low_tensor(), spec.high_tensor()
    n = env.num_envs  # type: ignore[attr-defined]
    return low + (high - low) * torch.rand(steps, n, spec.dim, generator=torch.Generator().manual_seed(seed))


@pytest.mark.skipif(_has_mjx(), reason="JAX and MJX are installed")
def test_selecting_mjx_without_jax_raises_a_clear_error() -> None:
    with pytest.raises(ImportError, match="'mjx' physics backend needs jax and mujoco-mjx"):
        make("mujoco/cartpole_swingup", 2, seed=0, backend="mjx")


@pytest.mark.parametrize("name", ["mujoco/cartpole_swingup", "mujoco/arm_reach"])
def test_mjx_follows_the_rollout_backend(name: str) -> None:
    _require_mjx()
    # float32 physics in JAX: equal to the float64 C backend up to rounding over 50 steps (1 s).
    rollout = make(name, 4, seed=3)
    mjx = make(name, 4, seed=3, backend="mjx")
    torch.testing.assert_close(mjx.reset(seed=5), rollout.reset(seed=5), rtol=0, atol=1e-6)
    for action in _random_actions(rollout, 50, seed=0):
        expected, result = rollout.step(action), mjx.step(action)
        check_step_result(mjx, result)
        torch.testing.assert_close(result[0], expected[0], rtol=0, atol=2e-3)
        torch.testing.assert_close(result[1], expected[1], rtol=0, atol=2e-3)


def test_mjx_auto_resets_and_resumes() -> None:
    _require_mjx()
    env = make("mujoco/arm_reach", 3, seed=1, backend="mjx", episode_length=0.1)
    actions = _random_actions(env, 2 * env.max_episode_steps, seed=2)
    saved = env.state_dict()
    for action in actions[: env.max_episode_steps]:
        obs, _, _, truncated, info = env.step(action)
    assert truncated.all() and not torch.equal(obs, info[INFO_FINAL_OBS])
    assert obs[:, 4:8].abs().max() == 0.0  # restarted at rest
    env.load_state_dict(saved)
    again = [env.step(action)[0] for action in actions[: env.max_episode_steps]]
    torch.testing.assert_close(again[-1], obs, rtol=0, atol=0)


def test_mjx_position_mode_tracks_a_constant_joint_target() -> None:
    _require_mjx()
    env = make("mujoco/arm_reach", 1, seed=0, backend="mjx", action_mode="position", episode_length=10.0)
    target = torch.tensor([[0.8, 0.9, -1.4, 0.7]])
    for _ in range(int(2.0 / env.dt)):
        obs, *_ = env.step(target)
    torch.testing.assert_close(obs[:, :4], target, rtol=0, atol=1e-3)
