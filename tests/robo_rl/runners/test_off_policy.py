"""Off-policy training: SAC and TD3 learn the pendulum, resume is exact (replay buffer included), time-outs
store the final observation, and the trained actors export to ONNX."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from robo_rl.algorithms.sac import SAC, SACConfig
from robo_rl.algorithms.td3 import TD3, TD3Config
from robo_rl.envs import INFO_FINAL_OBS, task_specs
from robo_rl.export.onnx import PolicyMetadata, export_onnx, onnx_parity
from robo_rl.runners.off_policy import OffPolicyRunner
from robo_rl.runners.off_policy_config import OFF_POLICY_LOOP, OffPolicyRunnerConfig
from robo_rl.runners.run_dir import RunDirectory
from robo_rl.sim import make
from robo_rl.task_record import TaskRecord, write_task_record

SMALL = (64, 64)


def _algorithm(name: str, seed: int, hidden: tuple[int, ...] = SMALL) -> SAC | TD3:
    env = make("pendulum", num_envs=1)
    low, high = env.action_spec.low_tensor(), env.action_spec.high_tensor()
    torch.manual_seed(seed)
    if name == "sac":
        return SAC(3, 3, low, high, SACConfig(actor_hidden=hidden, critic_hidden=hidden))
    return TD3(3, 3, low, high, TD3Config(actor_hidden=hidden, critic_hidden=hidden))


def _runner(name: str, cfg: OffPolicyRunnerConfig, seed: int = 0, max_episode_steps: int = 200) -> OffPolicyRunner:
    env = make("pendulum", num_envs=1, seed=seed, max_episode_steps=max_episode_steps)
    eval_env = make("pendulum", num_envs=cfg.loop.eval_episodes, seed=seed + 7)
    return OffPolicyRunner(env, _algorithm(name, seed), cfg, seed, eval_env=eval_env)


@pytest.mark.slow
# SAC's budget was 8,000 steps, which CI met before; on the 2026-11-26 VM its seed 0 (at the earlier commit too, in a
# fresh venv) was at -503 after 8,000 steps and reached -200 within 12,000.
@pytest.mark.parametrize(("name", "max_steps"), [("sac", 12_000), ("td3", 12_000)])
def test_learns_pendulum_within_a_step_budget(name: str, max_steps: int) -> None:
    cfg = OffPolicyRunnerConfig(
        loop=replace(
            OFF_POLICY_LOOP, max_iterations=max_steps, target_return=-200.0, eval_interval=1_000, eval_episodes=20
        ),
        learning_starts=1_000,
        batch_size=64,
    )
    result = _runner(name, cfg).learn()
    assert result.final_eval is not None
    assert result.reached_target, f"{name}: eval return {result.final_eval.mean_return:.0f} after {max_steps} steps"


def _flat_state(runner: OffPolicyRunner) -> dict[str, torch.Tensor]:
    tensors = {f"p.{k}": v for k, v in runner.algorithm.actor.state_dict().items()}
    tensors |= {f"q.{k}": v for k, v in runner.algorithm.critic.state_dict().items()}
    tensors |= {f"b.{k}": v for k, v in runner.buffer.state_dict().items() if isinstance(v, torch.Tensor)}
    return tensors


@pytest.mark.parametrize("name", ["sac", "td3"])
def test_resume_through_a_checkpoint_is_exact(name: str, tmp_path: Path) -> None:
    def cfg(iterations: int) -> OffPolicyRunnerConfig:
        return OffPolicyRunnerConfig(
            loop=replace(OFF_POLICY_LOOP, max_iterations=iterations, eval_interval=0),
            learning_starts=50,
            batch_size=16,
            buffer_capacity=120,
        )  # the ring buffer wraps before the checkpoint

    straight = _runner(name, cfg(260))
    straight.learn()
    first = _runner(name, cfg(130))
    first.learn()
    first.save(tmp_path / "ckpt.pt")
    resumed = _runner(name, cfg(260))
    resumed.load(tmp_path / "ckpt.pt")
    assert len(resumed.buffer) == 120 and resumed.iteration == 130
    resumed.learn()
    a, b = _flat_state(straight), _flat_state(resumed)
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key


def test_time_out_transitions_store_the_final_observation() -> None:
    cfg = OffPolicyRunnerConfig(loop=replace(OFF_POLICY_LOOP, max_iterations=5, eval_interval=0), learning_starts=100)
    runner = _runner("sac", cfg, max_episode_steps=5)
    for _ in range(4):
        runner.step()
    before = runner.env.state_dict()
    runner.step()  # the 5th step truncates the episode and auto-resets the env
    stored = runner.buffer.stored()
    assert bool(stored.truncated[-1]) and not bool(stored.terminated[-1])
    # Replay the stored action from the saved state: next_obs must be that step's final obs...
    runner.env.load_state_dict(before)
    _, _, _, _, info = runner.env.step(runner.algorithm.actor.scaler(stored.actions[-1:]))
    torch.testing.assert_close(stored.next_obs[-1], info[INFO_FINAL_OBS][0])
    # ...not the first obs of the new episode, which is what the env returned and the runner now holds.
    assert not torch.allclose(stored.next_obs[-1], runner.obs[0])
    assert torch.equal(stored.next_obs[:-1], stored.obs[1:])  # within the episode, next_obs chains to obs


@pytest.mark.parametrize("name", ["sac", "td3"])
def test_trained_actor_exports_to_onnx_with_parity(name: str, tmp_path: Path) -> None:
    runner = _runner(
        name,
        OffPolicyRunnerConfig(
            loop=replace(OFF_POLICY_LOOP, max_iterations=80, eval_interval=0), learning_starts=40, batch_size=16
        ),
    )
    runner.learn()
    env = runner.env
    actor = runner.algorithm.actor.deterministic_actor()
    metadata = PolicyMetadata(env.obs_spec, env.action_spec, env.dt, "pendulum", "test", "test")
    path = export_onnx(actor, metadata, tmp_path / "policy.onnx")
    obs = torch.randn(500, 3) * 4
    assert onnx_parity(actor, path, obs) <= 1e-5
    with torch.no_grad():
        actions = actor(obs)
    assert actions.abs().max() <= 2.0  # within the torque bounds
    torch.testing.assert_close(actions, 2.0 * runner.algorithm.act(obs, deterministic=True))


def test_checkpoints_follow_save_interval_off_the_log_cadence(tmp_path: Path) -> None:

    loop = replace(OFF_POLICY_LOOP, max_iterations=160, eval_interval=0, save_interval=70)
    cfg = OffPolicyRunnerConfig(loop=loop, learning_starts=50, batch_size=16)
    runner = _runner("td3", cfg)
    runner.run = RunDirectory.create(tmp_path, "x", 0, "{}\n", "test")
    saved_at: list[int] = []
    save = runner.save

    def recording_save(path: Path) -> None:
        saved_at.append(runner.iteration)
        save(path)

    runner.save = recording_save  # type: ignore[method-assign]
    runner.learn()
    assert saved_at == [70, 140, 160]  # every save_interval, then the final checkpoint
    assert runner.run.latest_checkpoint.is_file()


def test_init_from_starts_with_another_run_s_weights_and_checks_the_names(tmp_path: Path) -> None:
    cfg = OffPolicyRunnerConfig(
        loop=replace(OFF_POLICY_LOOP, max_iterations=120, eval_interval=0), learning_starts=50, batch_size=16
    )
    trained = _runner("sac", cfg)
    trained.learn()
    trained.save(tmp_path / "run" / "checkpoints" / "latest.pt")
    fresh = _runner(
        "sac",
        OffPolicyRunnerConfig(loop=replace(OFF_POLICY_LOOP, eval_interval=0), init_from=str(tmp_path / "run")),
        seed=1,
    )
    pairs = ((fresh.algorithm.actor, trained.algorithm.actor), (fresh.algorithm.critic, trained.algorithm.critic))
    for ours, theirs in pairs:
        for key, value in theirs.state_dict().items():
            assert torch.equal(ours.state_dict()[key], value), key
    assert len(fresh.buffer) == 0 and fresh.iteration == 0  # weights only, a new run
    env = make("pendulum", num_envs=1)
    renamed = replace(env.obs_spec, names=("x", "y", "z"))
    write_task_record(tmp_path / "run", TaskRecord("pendulum", {}, replace(task_specs(env), obs=renamed)))
    with pytest.raises(ValueError, match="observation names"):
        _runner(
            "sac",
            OffPolicyRunnerConfig(loop=replace(OFF_POLICY_LOOP, eval_interval=0), init_from=str(tmp_path / "run")),
        )
    with pytest.raises(FileNotFoundError, match="init_from"):
        _runner(
            "sac",
            OffPolicyRunnerConfig(loop=replace(OFF_POLICY_LOOP, eval_interval=0), init_from=str(tmp_path / "nowhere")),
        )


def test_a_learner_on_the_ros_graph_needs_the_actor_learner_split() -> None:
    with pytest.raises(ValueError, match="actor_learner=true"):
        OffPolicyRunnerConfig(learner_transport="ros")
    with pytest.raises(ValueError, match="needs the robot through ROS"):  # a simulator has no ROS link
        _runner(
            "sac",
            OffPolicyRunnerConfig(
                loop=replace(OFF_POLICY_LOOP, eval_interval=0), learner_transport="ros", actor_learner=True
            ),
        )


@pytest.mark.parametrize(
    ("num_envs", "ratio", "iterations", "expected"), [(4, 0.5, 10, 20), (4, 0.1, 10, 4), (8, 1 / 3, 3, 8)]
)
def test_update_to_data_sets_gradient_steps_per_stored_transition(
    num_envs: int, ratio: float, iterations: int, expected: int
) -> None:
    cfg = OffPolicyRunnerConfig(
        loop=replace(OFF_POLICY_LOOP, eval_interval=0), learning_starts=0, batch_size=8, update_to_data=ratio
    )
    env = make("pendulum", num_envs=num_envs, seed=0)
    runner = OffPolicyRunner(env, _algorithm("td3", 0), cfg, 0)
    runner.step()  # enough stored for the first batch
    for _ in range(iterations):
        runner._train_iteration()
    assert runner.gradient_steps == expected
    assert 0.0 <= runner.update_credit < 1.0
    with pytest.raises(ValueError, match="update_to_data"):
        OffPolicyRunnerConfig(update_to_data=-1.0)
    with pytest.raises(ValueError, match="learner process"):
        OffPolicyRunnerConfig(update_to_data=0.5, actor_learner=True)


def test_sac_normalize_obs_fits_once_to_the_first_data_and_exports_inside_the_actor(tmp_path: Path) -> None:
    """SAC's `normalize_obs`: the actor's and critics' normalizers take the mean and std of the online buffer at the
    first update (no prior buffer here), then stay fixed; the exported actor normalizes the same way."""
    env = make("pendulum", num_envs=1, seed=0)
    low, high = env.action_spec.low_tensor(), env.action_spec.high_tensor()
    torch.manual_seed(0)
    sac = SAC(3, 3, low, high, SACConfig(actor_hidden=SMALL, critic_hidden=SMALL, normalize_obs=True))
    cfg = OffPolicyRunnerConfig(
        loop=replace(OFF_POLICY_LOOP, max_iterations=60, eval_interval=0), learning_starts=40, batch_size=16
    )
    runner = OffPolicyRunner(env, sac, cfg, 0)
    assert sac.needs_normalizers
    runner.learn()
    assert not sac.needs_normalizers
    first = runner.buffer.stored().obs[:40]  # what the buffer held at the first update (iteration 40)
    for normalizer in (sac.actor.obs_normalizer, sac.critic.obs_normalizer, sac.target_critic.obs_normalizer):
        torch.testing.assert_close(normalizer.mean, first.mean(0))
        torch.testing.assert_close(normalizer.var, first.var(0, unbiased=False))
    sac.fit_normalizers(runner.buffer.stored())  # fitted: a second call changes nothing
    torch.testing.assert_close(sac.critic.obs_normalizer.mean, first.mean(0))
    actor = sac.actor.deterministic_actor()
    metadata = PolicyMetadata(env.obs_spec, env.action_spec, env.dt, "pendulum", "test", "test")
    obs = torch.randn(200, 3) * 4
    assert onnx_parity(actor, export_onnx(actor, metadata, tmp_path / "policy.onnx"), obs) <= 1e-5
    # the critics see the normalized observation
    q = sac.critic(obs, torch.zeros(200, 1))
    plain = sac.critic.obs_normalizer(obs)
    sac.critic.obs_normalizer = torch.nn.Identity()
    torch.testing.assert_close(q, sac.critic(plain, torch.zeros(200, 1)))
