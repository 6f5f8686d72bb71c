"""The off-policy runner on a camera env (`double_integrator/pixels`): pixel SAC (DrQ) learns, frames are stored
with their transitions (interventions and a prior buffer of frames included), a learner process trains on them
(off_policy.actor_learner), checkpoints round trip, the run's policy is a CameraPolicy, and what does not learn
from frames yet is refused."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from robo_rl.algorithms.drq import PixelSAC
from robo_rl.algorithms.encoder_config import EncoderConfig
from robo_rl.algorithms.sac import SACConfig
from robo_rl.build import build_deployable_actor, build_runner
from robo_rl.envs import task_specs
from robo_rl.experiment import ExperimentConfig, TaskConfig
from robo_rl.hil.actor_learner import ActorLearner
from robo_rl.hil.device import TeleopCommand
from robo_rl.hil.intervention import InterventionEnv
from robo_rl.image_spec import STATE_KEY
from robo_rl.modules.camera_policy import CameraPolicy
from robo_rl.runners.evaluate import evaluate
from robo_rl.runners.loop_config import LoopConfig
from robo_rl.runners.off_policy import OffPolicyRunner
from robo_rl.runners.off_policy_config import OffPolicyRunnerConfig
from robo_rl.sim import make
from robo_rl.sim.double_integrator.pixels import CAMERA, PixelDoubleIntegrator
from robo_rl.storage.replay import ReplayBuffer, Transitions

TASK = "double_integrator/pixels"
SMALL = SACConfig(
    gamma=0.98, actor_hidden=(64, 64), critic_hidden=(64, 64), encoder=EncoderConfig(features=16, channels=16)
)


def pixel_env(num_envs: int, seed: int = 0) -> PixelDoubleIntegrator:
    env = make(TASK, num_envs, seed=seed, image_size=16)
    assert isinstance(env, PixelDoubleIntegrator)
    return env


def algorithm(env: PixelDoubleIntegrator, cfg: SACConfig = SMALL) -> PixelSAC:
    bounds = (env.action_spec.low_tensor(), env.action_spec.high_tensor())
    return PixelSAC(env.obs_spec.dim, env.obs_spec.dim, *bounds, cfg, env.image_specs)


def runner_config(iterations: int, **changes: object) -> OffPolicyRunnerConfig:
    loop = LoopConfig(max_iterations=iterations, eval_interval=0, eval_episodes=32)
    settings = {"learning_starts": 200, "batch_size": 64, "buffer_capacity": 20_000, **changes}
    return OffPolicyRunnerConfig(loop=loop, **settings)  # type: ignore[arg-type]


@pytest.fixture
def one_thread() -> Iterator[None]:
    """Small networks run fastest in one thread, and two would compete on a loaded 2-core machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.usefixtures("one_thread")
def test_pixel_sac_learns_to_bring_the_cart_to_rest_from_pixels() -> None:
    """Mechanics, not final success: 1,200 iterations of 4 envs (4,800 env steps, 1,000 updates; 10 s on an idle
    core) bring the return far above the random policy's and above doing nothing, with the position seen only in
    the frames."""
    torch.manual_seed(0)
    env, eval_env = pixel_env(4), pixel_env(32, seed=1)
    runner = OffPolicyRunner(env, algorithm(env), runner_config(1200), seed=0, eval_env=eval_env)
    result = runner.learn()
    assert result.final_eval is not None
    trained = result.final_eval.mean_return
    generator = torch.Generator().manual_seed(0)
    random = evaluate(eval_env, lambda obs: torch.rand(32, 1, generator=generator) * 4 - 2, seed=7).mean_return
    still = evaluate(eval_env, lambda obs: torch.zeros(32, 1), seed=7).mean_return
    assert random < still < 0
    assert trained > 0.6 * still, (trained, still, random)  # well above doing nothing, far above random


def test_the_runner_stores_each_step_frames_with_its_transition() -> None:
    """Within an episode a transition's next frames are the next transition's frames; across an episode's end
    they are the final frame (`info["final_obs"]`), not the first frame of the next episode."""
    env = pixel_env(3)
    runner = OffPolicyRunner(env, algorithm(env), runner_config(10, learning_starts=1000), seed=0)
    assert isinstance(runner.obs, dict)
    first = runner.obs[CAMERA].clone()
    steps = env.max_episode_steps + 5
    for _ in range(steps):
        runner.step()
    stored = runner.buffer.stored()
    assert stored.images is not None and stored.next_images is not None
    frames = stored.images[CAMERA].view(steps, 3, *env.image_specs[0].shape)
    next_frames = stored.next_images[CAMERA].view_as(frames)
    assert torch.equal(frames[0], first)
    last = env.max_episode_steps - 1  # the step that truncates every env's first episode
    for t in range(steps - 1):
        paired = torch.equal(next_frames[t], frames[t + 1])
        assert paired == (t != last), t
    assert bool(stored.truncated.view(steps, 3)[last].all())
    assert torch.equal(stored.next_obs.view(steps, 3, 1)[:-1][:last], stored.obs.view(steps, 3, 1)[1 : last + 1])


class EveryOtherStep:
    """A stand-in operator: takes over env 0 on every other step, pushing with +1 N."""

    def __init__(self, num_envs: int) -> None:
        self.num_envs, self.calls = num_envs, 0

    def poll(self, obs: torch.Tensor) -> TeleopCommand:
        self.calls += 1
        active = torch.zeros(self.num_envs, dtype=torch.bool)
        active[0] = self.calls % 2 == 0
        return TeleopCommand(torch.ones(self.num_envs, 1), active)

    def episode_reset(self, done: torch.Tensor) -> None:
        pass


def test_interventions_and_a_prior_buffer_of_frames_feed_the_rlpd_mix(tmp_path: Path) -> None:
    """Demonstrations with frames in a prior buffer file, operator takeovers flagged and added to it with their
    frames, and batches drawn half from it: every sampled row, frames included, is a row of one of the buffers."""
    demo_env = pixel_env(4, seed=3)
    demos = OffPolicyRunner(demo_env, algorithm(demo_env), runner_config(30, learning_starts=1000), seed=3)
    for _ in range(30):
        demos.step()
    demos.buffer.save(tmp_path / "demos.pt")
    env = InterventionEnv(pixel_env(4), EveryOtherStep(4))  # type: ignore[arg-type]
    cfg = runner_config(80, learning_starts=40, batch_size=32, prior_buffer=str(tmp_path / "demos.pt"))
    runner = OffPolicyRunner(env, algorithm(pixel_env(4), dataclasses.replace(SMALL, bc_weight=1.0)), cfg, seed=0)
    assert runner.prior is not None and len(runner.prior) == 120
    runner.learn()
    assert runner.gradient_steps > 0
    assert len(runner.prior) == 120 + 40  # env 0 taken over on every other of the 80 steps
    flagged = runner.prior.stored()
    assert flagged.images is not None and int(flagged.intervened.sum()) == 40
    batch = runner.sample_batch()
    prior, online = (row_keys(buffer.stored()) for buffer in (runner.prior, runner.buffer))
    keys = [row_key(batch, i) for i in range(len(batch))]
    assert all(key in prior for key in keys[:16]) and all(key in online for key in keys[16:])  # prior share first


def row_key(batch: Transitions, i: int) -> tuple[object, ...]:
    """Row `i` as one hashable value: its vectors and the bytes of its frames."""
    assert batch.images is not None and batch.next_images is not None
    return (
        tuple(batch.obs[i].tolist()),
        tuple(batch.actions[i].tolist()),
        float(batch.rewards[i]),
        tuple(batch.next_obs[i].tolist()),
        batch.images[CAMERA][i].numpy().tobytes(),
        batch.next_images[CAMERA][i].numpy().tobytes(),
    )


def row_keys(batch: Transitions) -> set[tuple[object, ...]]:
    return {row_key(batch, i) for i in range(len(batch))}


def test_checkpoints_round_trip_a_camera_run(tmp_path: Path) -> None:
    env = pixel_env(2)
    runner = OffPolicyRunner(env, algorithm(env), runner_config(60, learning_starts=40, batch_size=16), seed=0)
    runner.learn()
    path = tmp_path / "checkpoints" / "latest.pt"
    path.parent.mkdir()
    runner.save(path)
    assert not (tmp_path / "checkpoints" / "replay").exists()  # self-contained: chunk files carry no frames
    env2 = pixel_env(2)
    resumed = OffPolicyRunner(env2, algorithm(env2), runner_config(60, learning_starts=40, batch_size=16), seed=5)
    resumed.load(path)
    stored, restored = runner.buffer.stored(), resumed.buffer.stored()
    assert restored.images is not None and stored.images is not None
    assert torch.equal(restored.images[CAMERA], stored.images[CAMERA])
    assert isinstance(resumed.obs, dict) and torch.equal(resumed.obs[CAMERA], runner.obs[CAMERA])
    obs = env.reset(seed=9)
    assert torch.equal(resumed.algorithm.act(obs, True), runner.algorithm.act(obs, True))


def test_the_composition_root_builds_pixel_sac_and_its_camera_policy() -> None:
    task = TaskConfig(name=TASK, num_envs=2, config={"image_size": 16})
    cfg = ExperimentConfig(name="pixels", algo="sac", task=task, sac=SMALL, off_policy=runner_config(5))
    runner = build_runner(cfg, make, evaluate=False)
    assert isinstance(runner, OffPolicyRunner) and isinstance(runner.algorithm, PixelSAC)
    runner.learn()
    state = runner._policy_state()
    assert set(state["algorithm"]) == {"actor", "encoder", "image_specs"}
    env = make(TASK, 3, seed=1, image_size=16)
    obs = env.reset(seed=1)
    expected = runner.algorithm.actor.scaler(runner.algorithm.act(obs, deterministic=True))
    for task_or_specs in (env, task_specs(env)):  # from the env, or from what the run recorded (task.yaml)
        policy = build_deployable_actor(cfg, task_or_specs, state)
        assert isinstance(policy, CameraPolicy) and policy.specs == env.image_specs
        assert torch.allclose(policy(obs[STATE_KEY], obs[CAMERA]), expected)
    with pytest.raises(ValueError, match="does not learn from cameras"):
        build_runner(dataclasses.replace(cfg, algo="td3"), make, evaluate=False)


@pytest.mark.usefixtures("one_thread")
def test_a_learner_process_learns_from_frames_and_the_env_loop_acts_with_its_encoder() -> None:
    """off_policy.actor_learner with cameras: every step's frames reach the learner process, which trains on them,
    and what it publishes (the actor and the encoder, its fitted state normalizer included) is what the env loop
    then acts with."""
    env = pixel_env(2)
    cfg = dataclasses.replace(SMALL, normalize_obs=True, encoder=EncoderConfig(features=8, channels=8))
    settings = runner_config(60, learning_starts=16, batch_size=16, actor_learner=True)
    runner = OffPolicyRunner(env, algorithm(env, cfg), settings, seed=0)
    remote, acting = runner.remote, runner.algorithm
    assert isinstance(remote, ActorLearner) and isinstance(acting, PixelSAC)
    start = {name: tensor.clone() for name, tensor in acting.encoder.state_dict().items()}
    runner.learn()
    stats = runner.learner_stats
    assert stats is not None and remote.dropped == 0
    assert stats.received == 60 * 2
    assert stats.updates == 60 - 16 // 2 + 1  # a gradient step per step message once the buffer held 16
    remote.refresh()  # take up the learner's last publication
    assert remote.loaded_version == stats.published == stats.updates // 10
    published = acting.acting_module().state_dict()  # the actor's weights and the encoder's
    assert published.keys() == remote.shared.keys() and any(name.startswith("encoder.") for name in published)
    for name, tensor in published.items():
        assert torch.equal(tensor, remote.shared[name]), name
    encoder = acting.encoder.state_dict()
    moved = [name for name, tensor in encoder.items() if not torch.equal(tensor, start[name])]
    assert "cameras.rail.convs.0.weight" in moved and "state_normalizer.mean" in moved
    assert float(encoder["state_normalizer.count"]) == 16  # fitted in the learner, once, to its first 16


def test_what_does_not_carry_frames_yet_is_refused(tmp_path: Path) -> None:
    env = pixel_env(2)
    ros = runner_config(5, actor_learner=True, learner_transport="ros")
    with pytest.raises(ValueError, match="learner_transport=ros carries flat float vectors"):
        OffPolicyRunner(env, algorithm(env), ros, seed=0)
    ReplayBuffer(4, 1, 1, 1, "cpu").save(tmp_path / "vectors.pt")
    with pytest.raises(ValueError, match="image_specs"):
        OffPolicyRunner(env, algorithm(env), runner_config(5, prior_buffer=str(tmp_path / "vectors.pt")), seed=0)


def test_init_from_refuses_a_run_whose_recorded_cameras_differ(tmp_path: Path) -> None:
    """off_policy.init_from compares the cameras a run recorded (task.yaml) with this run's before reading weights:
    a 24 x 24 run does not start a 16 x 16 one."""
    from robo_rl.runners.off_policy_setup import load_weights
    from robo_rl.sim.double_integrator.pixels import PixelDoubleIntegrator, PixelDoubleIntegratorConfig
    from robo_rl.task_record import TaskRecord, write_task_record

    trained = PixelDoubleIntegrator(1, config=PixelDoubleIntegratorConfig(image_size=24))
    write_task_record(tmp_path, TaskRecord("double_integrator/pixels", {}, task_specs(trained)))
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "latest.pt").write_bytes(b"")
    smaller = PixelDoubleIntegrator(1, config=PixelDoubleIntegratorConfig(image_size=16))
    with pytest.raises(ValueError, match="has cameras"):  # before the (empty) checkpoint is read
        load_weights(object.__new__(PixelSAC), tmp_path, smaller)
