"""Headless rendering of the torch tasks (`RenderableEnv`): frame size, content following the state."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from robo_rl.envs import RenderableEnv
from robo_rl.sim import make


def _red_rows(frame: np.ndarray) -> np.ndarray:
    """Row indices of strongly red pixels (the pendulum rod)."""
    r, g, b = (frame[..., i].astype(int) for i in range(3))
    return np.nonzero((r > 180) & (g < 90) & (b < 90))[0]


@pytest.mark.parametrize("theta, rod_up", [(0.0, True), (math.pi, False)])
def test_pendulum_frame_shows_the_rod_where_the_state_puts_it(theta: float, rod_up: bool) -> None:
    env = make("pendulum", 3, seed=0)
    assert isinstance(env, RenderableEnv)
    env.set_state(torch.tensor([[0.0, 0.0], [theta, 0.0], [0.0, 0.0]]))
    frame = env.render(1)
    assert frame.shape == (400, 400, 3) and frame.dtype == np.uint8
    rows = _red_rows(frame)
    assert rows.size > 100
    centre = frame.shape[0] / 2
    assert (np.median(rows) < centre) == rod_up


def test_quadrotor_frames_have_a_constant_size_and_follow_the_state() -> None:
    env = make("quadrotor/hover", 2, seed=0)
    first = env.render(0)
    state = env.state
    state[0, :3] = torch.tensor([1.0, -1.0, 1.0])
    env.set_state(state)
    moved = env.render(0)
    assert first.shape == moved.shape == (480, 480, 3) and first.dtype == np.uint8
    assert np.abs(first.astype(int) - moved.astype(int)).sum() > 1000
    with pytest.raises(IndexError, match="out of range"):
        env.render(2)


def test_track_renders_through_its_hover_engine() -> None:
    env = make("quadrotor/track", 1, seed=0)
    frames = []
    for _ in range(3):
        env.step(torch.tensor([env.hover_action]))
        frames.append(env.render(0))
    assert all(f.shape == (480, 480, 3) for f in frames)
    assert np.abs(frames[0].astype(int) - frames[2].astype(int)).sum() > 0
