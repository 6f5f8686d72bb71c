"""Demonstrations and RLPD wiring: `collect_demonstrations` records expert transitions, the off-policy runner
mixes them 50/50 into every batch, and the prior buffer survives a checkpoint."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from robo_rl.algorithms.sac import SAC, SACConfig
from robo_rl.envs import INFO_FINAL_OBS
from robo_rl.modules.actor_critic import ActionScaler
from robo_rl.runners.collect import collect_demonstrations
from robo_rl.runners.off_policy import OffPolicyRunner
from robo_rl.runners.off_policy_config import OffPolicyRunnerConfig
from robo_rl.sim import make
from robo_rl.storage.replay import ReplayBuffer


def _energy_pumping(obs: torch.Tensor) -> torch.Tensor:
    """A scripted swing-up expert in env units (N*m), pushing along the angular velocity."""
    return 2.0 * torch.sign(obs[:, 2:3] + 1e-3)


def _demo_file(tmp_path: Path, transitions: int = 300) -> Path:
    env = make("pendulum", num_envs=3, max_episode_steps=50)
    path = tmp_path / "demos.pt"
    collect_demonstrations(env, _energy_pumping, transitions, seed=0).buffer.save(path)
    return path


def _sac_runner(cfg: OffPolicyRunnerConfig, obs_dim: int = 3) -> OffPolicyRunner:
    env = make("pendulum", num_envs=2, seed=0)
    torch.manual_seed(0)
    sac = SAC(obs_dim, obs_dim, env.action_spec.low_tensor(), env.action_spec.high_tensor(), SACConfig())
    return OffPolicyRunner(env, sac, cfg, seed=0)


def test_action_scaler_normalize_inverts_the_scaling() -> None:
    scaler = ActionScaler(torch.tensor([-2.0, 0.0]), torch.tensor([2.0, 10.0]))
    normalized = torch.tensor([[-1.0, 1.0], [0.25, -0.5]])
    assert torch.allclose(scaler.normalize(scaler(normalized)), normalized)
    assert scaler.normalize(torch.tensor([[5.0, -3.0]])).tolist() == [[1.0, -1.0]]


def test_collect_records_flagged_normalized_expert_transitions() -> None:
    env = make("pendulum", num_envs=3, max_episode_steps=50)
    demos = collect_demonstrations(env, _energy_pumping, num_transitions=301, seed=0)
    stored = demos.buffer.stored()
    assert len(demos.buffer) == 303  # whole batched steps: ceil(301 / 3) * 3
    assert bool(stored.is_demo.all()) and not bool(stored.intervened.any())
    assert stored.actions.abs().eq(1.0).all()  # +-2 N*m is the edge of the [-1, 1] space
    assert demos.episodes == 6 and demos.mean_return is not None
    # Every 50th step of each env is a time-out whose next_obs is the final obs, not the reset obs.
    assert int(stored.truncated.sum()) == 6 and not bool(stored.terminated.any())


def test_collect_whole_episodes_stores_each_env_s_first_episodes_only() -> None:
    """`episodes_per_env`: envs whose episodes end at different steps (pendulum time limits of 50 steps, the
    collection asked for 160 steps per env) each store exactly their first two episodes, and collection stops once
    all have them (without it every env goes on into a third, part-recorded episode)."""
    env = make("pendulum", num_envs=3, max_episode_steps=50)
    demos = collect_demonstrations(env, _energy_pumping, 480, seed=0, episodes_per_env=2)
    stored = demos.buffer.stored()
    assert len(demos.buffer) == 300 and demos.episodes == 6
    assert int(stored.truncated.sum()) == 6 and bool(stored.truncated[-3:].all())
    everything = collect_demonstrations(make("pendulum", num_envs=3, max_episode_steps=50), _energy_pumping, 480, 0)
    assert len(everything.buffer) == 480 and everything.episodes == 9


def test_collect_is_reproducible_by_seed_and_noise_changes_actions() -> None:
    def run(seed: int, noise: float) -> torch.Tensor:
        env = make("pendulum", num_envs=2)
        return collect_demonstrations(env, _energy_pumping, 40, seed=seed, noise_std=noise).buffer.stored().actions

    assert torch.equal(run(1, 0.3), run(1, 0.3))
    assert not torch.equal(run(1, 0.3), run(2, 0.3))
    assert run(1, 0.3).abs().lt(1.0).any() and run(1, 0.0).abs().eq(1.0).all()


def test_collect_next_obs_of_a_time_out_is_the_final_obs() -> None:
    env = make("pendulum", num_envs=1, max_episode_steps=4)
    demos = collect_demonstrations(env, _energy_pumping, 4, seed=3)
    reference = make("pendulum", num_envs=1, max_episode_steps=4)
    obs = reference.reset(seed=3)
    for _ in range(4):
        obs, *_, info = reference.step(_energy_pumping(obs))
    assert torch.equal(demos.buffer.stored().next_obs[-1], info[INFO_FINAL_OBS][0])


def test_runner_batches_are_half_demonstrations(tmp_path: Path) -> None:
    cfg = OffPolicyRunnerConfig(batch_size=64, learning_starts=0, prior_buffer=str(_demo_file(tmp_path)))
    runner = _sac_runner(cfg)
    for _ in range(40):
        runner.step()
    for _ in range(5):
        batch = runner.sample_batch()
        assert len(batch) == 64 and int(batch.is_demo.sum()) == 32
    assert runner.prior is not None and len(runner.prior) == 300 and runner.prior.capacity == cfg.buffer_capacity


def test_runner_without_prior_samples_online_only() -> None:
    runner = _sac_runner(OffPolicyRunnerConfig(batch_size=32, learning_starts=0))
    for _ in range(20):
        runner.step()
    assert not bool(runner.sample_batch().is_demo.any())


def test_prior_buffer_is_restored_from_a_checkpoint(tmp_path: Path) -> None:
    cfg = OffPolicyRunnerConfig(batch_size=16, learning_starts=0, prior_buffer=str(_demo_file(tmp_path)))
    runner = _sac_runner(cfg)
    for _ in range(10):
        runner.step()
    runner.train_step()
    runner.save(tmp_path / "ckpt.pt")
    # The demonstration file changes (or disappears) after the run started: the checkpoint's copy wins.
    ReplayBuffer(5, 3, 3, 1, "cpu").save(tmp_path / "demos.pt")
    with pytest.raises(ValueError, match="holds no transitions"):
        _sac_runner(cfg)
    _demo_file(tmp_path, transitions=30)
    resumed = _sac_runner(cfg)
    resumed.load(tmp_path / "ckpt.pt")
    assert runner.prior is not None and resumed.prior is not None and len(resumed.prior) == 300
    assert torch.equal(resumed.prior.stored().obs, runner.prior.stored().obs)
    assert torch.equal(resumed.sample_batch().obs, runner.sample_batch().obs)


def test_prior_buffer_errors_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"off_policy\.prior_buffer"):
        _sac_runner(OffPolicyRunnerConfig(prior_buffer=str(tmp_path / "missing.pt")))
    ReplayBuffer(5, 4, 4, 1, "cpu").save(tmp_path / "wide.pt")
    with pytest.raises(ValueError, match="obs_dim 4, the task needs 3"):
        _sac_runner(OffPolicyRunnerConfig(prior_buffer=str(tmp_path / "wide.pt")))
    with pytest.raises(ValueError, match="prior_fraction"):
        OffPolicyRunnerConfig(prior_fraction=1.5)


def test_normalize_obs_is_fitted_to_the_prior_buffer_before_behaviour_cloning(tmp_path: Path) -> None:
    """SAC's `normalize_obs` with a prior buffer: the normalizers hold the demonstrations' mean and variance from
    the runner's construction on (so behaviour cloning and the first updates see normalized inputs)."""
    path = _demo_file(tmp_path)
    env = make("pendulum", num_envs=2, seed=0)
    sac = SAC(3, 3, env.action_spec.low_tensor(), env.action_spec.high_tensor(), SACConfig(normalize_obs=True))
    OffPolicyRunner(env, sac, OffPolicyRunnerConfig(prior_buffer=str(path), bc_pretrain_steps=5), seed=0)
    demos = ReplayBuffer.load(path).stored()
    for normalizer in (sac.actor.obs_normalizer, sac.critic.obs_normalizer, sac.target_critic.obs_normalizer):
        torch.testing.assert_close(normalizer.mean, demos.obs.mean(0))
        torch.testing.assert_close(normalizer.var, demos.obs.var(0, unbiased=False))
