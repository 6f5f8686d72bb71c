"""Demonstrations with camera frames: `robo-rl record-demos` on a camera task writes each transition's frames, and
a run's prior buffer takes them back with their transitions (RLPD from pixels); files whose cameras are not the
task's are refused; behaviour cloning before RL (`bc_pretrain_steps`) trains the actor and the camera encoder on
them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from robo_rl.algorithms.drq import PixelSAC, save_encoder
from robo_rl.algorithms.encoder_config import EncoderConfig
from robo_rl.algorithms.sac import SACConfig
from robo_rl.hil.demos import load_demo_frames, save_demos
from robo_rl.hil.pretrain import behaviour_clone
from robo_rl.image_spec import STATE_KEY
from robo_rl.runners.collect import collect_demonstrations
from robo_rl.runners.off_policy import OffPolicyRunner
from robo_rl.runners.off_policy_config import OffPolicyRunnerConfig
from robo_rl.runners.off_policy_setup import load_prior_buffer
from robo_rl.sim import make
from robo_rl.sim.double_integrator.pixels import PixelDoubleIntegrator

TASK = "double_integrator/pixels"


def push_right(obs: dict[str, torch.Tensor]) -> torch.Tensor:
    """A fixed push (the demonstrator need not be good: the frames' bookkeeping is what is tested)."""
    return torch.full((obs[STATE_KEY].shape[0], 1), 0.5)


def test_collected_frames_survive_the_demo_file_and_return_with_their_transitions(tmp_path: Path) -> None:
    env = make(TASK, 2, seed=0, image_size=16)
    demos = collect_demonstrations(env, push_right, 40, seed=3)
    path = tmp_path / "demos.npz"
    save_demos(path, demos.buffer, TASK, env, demos.episodes, "test")
    stored = demos.buffer.stored()
    assert stored.images is not None and stored.next_images is not None
    specs, frames = load_demo_frames(path)
    assert specs == env.image_specs
    (name,) = frames
    assert np.array_equal(frames[name][0], stored.images[name].numpy())
    assert np.array_equal(frames[name][1], stored.next_images[name].numpy())
    prior = load_prior_buffer(path, 100, env).stored()
    assert prior.images is not None and prior.next_images is not None
    assert torch.equal(prior.images[name], stored.images[name]) and torch.equal(prior.obs, stored.obs)
    assert not torch.equal(prior.images[name], prior.next_images[name])  # the cart moved: frames before and after


def test_a_demo_file_of_other_cameras_or_none_is_refused_for_a_camera_task(tmp_path: Path) -> None:
    small, large = make(TASK, 1, seed=0, image_size=16), make(TASK, 1, seed=0, image_size=24)
    demos = collect_demonstrations(small, push_right, 10, seed=0)
    save_demos(tmp_path / "small.npz", demos.buffer, TASK, small, demos.episodes, "test")
    with pytest.raises(ValueError, match=r"small\.npz has cameras .*'height': 16.*the task needs .*'height': 24"):
        load_prior_buffer(tmp_path / "small.npz", 100, large)
    save_demos(tmp_path / "bare.npz", demos.buffer, TASK, small, demos.episodes, "test", frames={})  # vectors only
    with pytest.raises(ValueError, match=r"bare\.npz has cameras no frames"):
        load_prior_buffer(tmp_path / "bare.npz", 100, small)


def _pixel_sac(env: PixelDoubleIntegrator, encoder: EncoderConfig) -> PixelSAC:
    """Pixel SAC with small networks and the camera encoder `encoder` for `env`."""
    cfg = SACConfig(actor_hidden=(32, 32), critic_hidden=(32, 32), encoder=encoder)
    bounds = (env.action_spec.low_tensor(), env.action_spec.high_tensor())
    return PixelSAC(env.obs_spec.dim, env.obs_spec.dim, *bounds, cfg, env.image_specs)


def _pixel_env(num_envs: int) -> PixelDoubleIntegrator:
    env = make(TASK, num_envs, seed=0, image_size=16)
    assert isinstance(env, PixelDoubleIntegrator)
    return env


def _cloned(demos: Path, encoder: EncoderConfig) -> tuple[list[float], dict[str, torch.Tensor], PixelSAC]:
    """A runner's behaviour cloning (20 steps) on `demos`: its losses, the camera encoder's weights before, the
    algorithm after."""
    env = _pixel_env(2)
    torch.manual_seed(0)
    algorithm = _pixel_sac(env, encoder)
    before = {key: value.clone() for key, value in algorithm.encoder.cameras.state_dict().items()}
    cfg = OffPolicyRunnerConfig(prior_buffer=str(demos), bc_pretrain_steps=20, batch_size=32, warmup="policy")
    runner = OffPolicyRunner(env, algorithm, cfg, seed=0)
    return runner.bc_losses, before, algorithm


def _same_weights(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[key], b[key]) for key in a)


def test_behaviour_cloning_on_frames_trains_the_camera_encoder_unless_frozen(tmp_path: Path) -> None:
    env = make(TASK, 2, seed=0, image_size=16)
    demos = collect_demonstrations(env, push_right, 200, seed=3, noise_std=0.1)
    path = tmp_path / "demos.npz"
    save_demos(path, demos.buffer, TASK, env, demos.episodes, "test")
    tiny = EncoderConfig(features=8, channels=8)
    losses, before, algorithm = _cloned(path, tiny)
    assert len(losses) == 20 and np.mean(losses[-5:]) < np.mean(losses[:5]) - 0.1
    assert not _same_weights(algorithm.encoder.cameras.state_dict(), before)
    # A frozen (pretrained) encoder stays as it was loaded; the actor still learns the demonstrations.
    save_encoder(algorithm.encoder, tmp_path / "encoder.pt")
    frozen = EncoderConfig(features=8, channels=8, weights=str(tmp_path / "encoder.pt"), freeze=True)
    losses, before, algorithm = _cloned(path, frozen)
    assert _same_weights(before, algorithm.encoder.cameras.state_dict())
    assert np.mean(losses[-5:]) < np.mean(losses[:5]) - 0.1
    bc_actor = algorithm.bc_actor()
    trainable = {id(parameter) for parameter in bc_actor.parameters() if parameter.requires_grad}
    assert trainable == {id(parameter) for parameter in algorithm.actor.parameters()}


def test_frames_are_cloned_into_the_camera_actor_and_refused_for_one_that_reads_none() -> None:
    env = _pixel_env(2)
    demos = collect_demonstrations(env, push_right, 10, seed=0).buffer.stored()
    algorithm = _pixel_sac(env, EncoderConfig(features=8, channels=8))
    with pytest.raises(ValueError, match="carry camera frames"):
        behaviour_clone(algorithm.actor, demos, 1)
    # The camera actor reads them, and cloning it moves the algorithm's own policy (shared weights).
    obs = env.reset(seed=1)
    acted = algorithm.act(obs, deterministic=True)
    behaviour_clone(algorithm.bc_actor(), demos, 5)
    assert not torch.equal(algorithm.act(obs, deterministic=True), acted)


def test_record_demos_on_the_peg_camera_task_writes_the_operator_s_frames(tmp_path: Path) -> None:
    out = tmp_path / "peg.npz"
    command = [sys.executable, "-m", "robo_rl.cli.main", "record-demos", "mujoco/peg_insert_pixels", "--episodes", "1"]
    command += [
        "--whole-episodes",
        "--seed",
        "7",
        "--param",
        "image_size=16",
        "--param",
        "num_threads=1",
        "-o",
        str(out),
    ]
    subprocess.run(command, check=True, capture_output=True, env={**os.environ, "MUJOCO_GL": "egl"}, timeout=600)
    specs, frames = load_demo_frames(out)
    assert [spec.name for spec in specs] == ["wrist", "side"] and specs[0].shape == (16, 16, 3)
    wrist_before, wrist_after = frames["wrist"]
    assert wrist_before.shape[0] > 5 and np.array_equal(wrist_before[1:], wrist_after[:-1])  # one episode, in order


def test_the_simulated_operator_corrects_a_pixel_policy_on_the_peg_with_its_demonstrations(tmp_path: Path) -> None:
    """peg_insert_hil's setup (RLPD + demonstrations + the operator's corrections) on the camera task: the operator
    reads the state beside the frames, takes over, and its steps are stored with their frames."""
    demos = tmp_path / "peg.npz"
    cli = [sys.executable, "-m", "robo_rl.cli.main"]
    params = ["--param", "image_size=16", "--param", "num_threads=1"]
    record = [*cli, "record-demos", "mujoco/peg_insert_pixels", "--episodes", "1", "--whole-episodes", *params]
    environment = {**os.environ, "MUJOCO_GL": "egl"}
    subprocess.run([*record, "-o", str(demos)], check=True, capture_output=True, env=environment, timeout=600)
    settings = ["task.name=mujoco/peg_insert_pixels", "task.config.image_size=16", "task.config.cameras=[wrist,side]"]
    settings += [f"off_policy.prior_buffer={demos}", "off_policy.learning_starts=30", "off_policy.batch_size=16"]
    settings += ["off_policy.loop.eval_interval=0", "sac.encoder.channels=8"]
    train = [*cli, "train", "peg_insert_hil", "--max-iterations", "150", "--quiet", "--runs-root", str(tmp_path)]
    train += [item for setting in settings for item in ("--set", setting)]
    subprocess.run(train, check=True, capture_output=True, env=environment, timeout=600)
    (metrics,) = tmp_path.glob("peg_insert_hil/*/metrics.jsonl")
    last = json.loads(metrics.read_text().splitlines()[-1])
    assert last["env_steps"] == 150 and last["intervention_rate_total"] > 0.0
