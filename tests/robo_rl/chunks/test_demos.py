"""Demonstrations as chunks: each transition gets the next H actions of its own episode, padded at its end."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from robo_rl.chunks.demos import chunk_demos, successors
from robo_rl.hil.demos import load_demos, save_demos
from robo_rl.runners.collect import collect_demonstrations
from robo_rl.sim import make
from robo_rl.storage.replay import select_transitions

ENVS, STEPS, EPISODE = 3, 7, 5


@pytest.fixture(scope="module")
def demos(tmp_path_factory: pytest.TempPathFactory):
    """Random actions on 3 pendulums with 5-step episodes, through a demo file: rows are step-major (row r + 3
    follows row r within an episode)."""
    env = make("pendulum", num_envs=ENVS, seed=0, params=(f"max_episode_steps={EPISODE}",))
    generator = torch.Generator().manual_seed(0)
    recorded = collect_demonstrations(env, lambda o: torch.rand(len(o), 1, generator=generator) * 4 - 2, 21, seed=3)
    path = tmp_path_factory.mktemp("demos") / "pendulum.npz"
    save_demos(path, recorded.buffer, "pendulum", env, recorded.episodes, "test")
    return load_demos(Path(path), env)


def test_successors_follow_each_episode_across_interleaved_envs(demos) -> None:
    rows = torch.arange(ENVS * STEPS)
    ends_episode = (rows // ENVS + 1) % EPISODE == 0
    last_recorded = rows >= ENVS * (STEPS - 1)
    expected = torch.where(ends_episode | last_recorded, -1, rows + ENVS)
    assert demos.truncated.tolist() == ends_episode.tolist()
    assert successors(demos).tolist() == expected.tolist()
    kept = select_transitions(demos, rows != 4)  # a filtered file: row 1's successor is gone
    assert successors(kept)[:3].tolist() == [3, -1, 4]  # row 5, row 2's successor, is now row 4


def test_chunks_hold_the_next_actions_padded_with_the_last_and_macro_transitions(demos) -> None:
    chunked = chunk_demos(demos, horizon=3, execute=2)
    out, a = chunked.transitions, demos.actions[:, 0]
    assert out.actions.shape == (ENVS * STEPS, 3)
    # row 0 (env 0, step 0): steps 0, 1, 2 of its episode; row 6 (env 0, step 2): steps 2, 3, 4; row 9 (step 3):
    # steps 3, 4, then the episode ends after step 4 (the time limit): padded with step 4's action.
    assert out.actions[0].tolist() == [a[0], a[3], a[6]] and out.actions[6].tolist() == [a[6], a[9], a[12]]
    assert out.actions[9].tolist() == [a[9], a[12], a[12]] and chunked.mask[9].tolist() == [True, True, False]
    assert out.actions[15].tolist() == [a[15], a[18], a[18]]  # the recording stops after row 18
    assert out.rewards[0] == pytest.approx(float(demos.rewards[0] + demos.rewards[3]))
    assert torch.equal(out.next_obs[0], demos.next_obs[3]) and not out.truncated[0]
    assert out.rewards[12] == demos.rewards[12] and out.truncated[12]  # ends at its first step: the time limit
    assert torch.equal(out.next_obs[12], demos.next_obs[12])
    assert out.truncated[18] and out.rewards[18] == demos.rewards[18]  # not recorded further: cut, bootstrapped
    with pytest.raises(ValueError, match=r"in \[1, H=3\], got 4"):
        chunk_demos(demos, horizon=3, execute=4)
