"""A demo file of single steps (what `robo-rl record-demos` writes) as the prior buffer of a task acting in chunks:
each row becomes a chunk of its episode's next actions and the macro transition. Checked against the chunk env
itself: the same chunks, stepped by ChunkEnv from the same start, reach the stored next observations and rewards."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from robo_rl.chunks.env import ChunkEnv
from robo_rl.cli.main import main as cli
from robo_rl.hil.demos import save_demos
from robo_rl.modules.actor_critic import ActionScaler
from robo_rl.runners.collect import collect_demonstrations
from robo_rl.runners.off_policy_setup import load_prior_buffer
from robo_rl.sim import make

ENVS, HORIZON, EXECUTE = 3, 3, 2


def _pendulum(seed: int = 0):
    return make("pendulum", num_envs=ENVS, seed=seed, params=("max_episode_steps=50",))


def test_step_demos_become_the_macro_transitions_the_chunk_env_makes(tmp_path: Path) -> None:
    env = _pendulum()
    generator = torch.Generator().manual_seed(0)
    recorded = collect_demonstrations(env, lambda o: torch.rand(len(o), 1, generator=generator) * 4 - 2, 30, seed=3)
    path = tmp_path / "pendulum.npz"
    save_demos(path, recorded.buffer, "pendulum", env, recorded.episodes, "test")
    chunk_env = ChunkEnv(_pendulum(), HORIZON, EXECUTE)
    prior = load_prior_buffer(path, 100, chunk_env).stored()
    assert prior.actions.shape == (30, HORIZON)
    steps = recorded.buffer.stored()  # rows are step-major: row r + ENVS follows row r
    assert prior.actions[1].tolist() == steps.actions[[1, 1 + ENVS, 1 + 2 * ENVS], 0].tolist()

    to_env = ActionScaler(chunk_env.action_spec.low_tensor(), chunk_env.action_spec.high_tensor())  # stored: [-1, 1]
    chunk_env.reset(seed=3)  # the recording's start
    for first in (0, EXECUTE * ENVS):  # two macro steps: rows 0-2, then rows 6-8 (each env's third step)
        obs, reward, _, _, _ = chunk_env.step(to_env(prior.actions[first : first + ENVS]))
        assert torch.allclose(obs, prior.next_obs[first : first + ENVS])
        assert torch.allclose(reward, prior.rewards[first : first + ENVS])


def test_a_chunked_run_reads_recorded_demonstrations(tmp_path: Path) -> None:
    demos = tmp_path / "demos.npz"
    assert cli(["record-demos", "point/obstacle", "--episodes", "2", "-o", str(demos)]) == 0
    flags = ["--set", "task.action_chunk=4", "--set", f"off_policy.prior_buffer={demos}", "--max-iterations", "2"]
    flags += ["--set", "off_policy.learning_starts=16", "--set", "off_policy.bc_pretrain_steps=5"]
    assert cli(["train", "point_obstacle_fql", "--runs-root", str(tmp_path / "runs"), "--quiet", *flags]) == 0


def test_chunked_demos_with_camera_frames_are_refused_in_one_line(tmp_path: Path) -> None:
    task = "double_integrator/pixels"
    env = make(task, 1, seed=0, image_size=16)
    demos = collect_demonstrations(env, lambda o: torch.full((1, 1), 0.5), 10, seed=0)
    save_demos(tmp_path / "frames.npz", demos.buffer, task, env, demos.episodes, "test")
    with pytest.raises(ValueError, match=r"frames\.npz: demonstrations with camera frames cannot be chunked yet"):
        load_prior_buffer(tmp_path / "frames.npz", 100, ChunkEnv(make(task, 1, seed=0, image_size=16), HORIZON))
