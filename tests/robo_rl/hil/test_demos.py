"""Demonstrations: recorded from the simulated human to .npz, loaded back checked, cloned into an actor."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from robo_rl.algorithms.sac import SAC
from robo_rl.api.configs import preset
from robo_rl.cli.main import main
from robo_rl.envs import critic_obs_dim
from robo_rl.hil.demos import load_demos, read_meta
from robo_rl.hil.pretrain import behaviour_clone
from robo_rl.runners.evaluate import evaluate_held_out
from robo_rl.runners.off_policy import OffPolicyRunner
from robo_rl.runners.off_policy_config import OFF_POLICY_LOOP, OffPolicyRunnerConfig
from robo_rl.sim import make


@pytest.fixture(scope="module")
def demos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("demos") / "hover.npz"
    assert main(["record-demos", "quadrotor/hover", "--episodes", "10", "-o", str(path)]) == 0
    return path


def test_demo_file_round_trip_and_schema(demos: Path) -> None:
    meta = read_meta(demos)
    env = make("quadrotor/hover", num_envs=1)
    assert meta["schema"] == "robo_rl.demos/1" and meta["episodes"] == 10 and meta["task"] == "quadrotor/hover"
    assert meta["obs_names"] == list(env.obs_spec.names)
    transitions = load_demos(demos, env)
    with np.load(demos) as raw:
        np.testing.assert_array_equal(transitions.actions.numpy(), raw["actions"])
    assert len(transitions) == 5000 and bool(transitions.is_demo.all()) and not bool(transitions.intervened.any())
    assert float(transitions.actions.abs().max()) <= 1.0  # normalized actions


def test_demos_of_another_task_are_refused(demos: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="obs_names differ"):
        load_demos(demos, make("rc_car/race", num_envs=1))
    other = tmp_path / "x.npz"
    np.savez(other, obs=np.zeros(3))
    with pytest.raises(ValueError, match="not a robo_rl demonstration file"):
        load_demos(other, make("quadrotor/hover", num_envs=1))


def test_behaviour_cloning_ten_demos_makes_the_actor_hover(demos: Path) -> None:
    env = make("quadrotor/hover", num_envs=1)
    torch.manual_seed(0)
    sac = SAC(
        22,
        critic_obs_dim(env),
        env.action_spec.low_tensor(),
        env.action_spec.high_tensor(),
        preset("quadrotor_hover_sac").sac,
    )
    evaluation_env = make("quadrotor/hover", num_envs=50, seed=7)
    before = evaluate_held_out(evaluation_env, sac.actor.deterministic_actor().eval(), 0)
    losses = behaviour_clone(sac.actor, load_demos(demos, env), steps=1500)
    after = evaluate_held_out(evaluation_env, sac.actor.deterministic_actor().eval(), 0)
    sampled = evaluate_held_out(evaluation_env, SampledActor(sac.actor).eval(), 0)
    assert losses[-1] < losses[0] - 10  # negative log-likelihood: the spread shrinks to the demonstrator's
    # 44 of 50 on the identified Crazyflie (the bare 2023 model, whose propellers spin down as fast as they spin
    # up, gave 50 of 50): cloning has no integral action to take up what the clone gets slightly wrong.
    assert before.success_rate == 0.0 and after.success_rate >= 0.8
    assert sampled.success_rate >= 0.8  # the stochastic policy SAC collects data with hovers too


class SampledActor(torch.nn.Module):
    """obs → env action sampled from a squashed Gaussian actor (what SAC's data collection executes)."""

    def __init__(self, actor: torch.nn.Module) -> None:
        super().__init__()
        self.actor = actor

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.actor.scaler(self.actor.sample(obs)[0])


def test_runner_pretrains_from_a_demo_file_and_wsrl_drops_it(demos: Path) -> None:
    env = make("quadrotor/hover", num_envs=4, seed=0)
    sac = SAC(
        22,
        critic_obs_dim(env),
        env.action_spec.low_tensor(),
        env.action_spec.high_tensor(),
        preset("quadrotor_hover_sac").sac,
    )
    cfg = OffPolicyRunnerConfig(prior_buffer=str(demos), bc_pretrain_steps=20, keep_prior=False, warmup="policy")
    runner = OffPolicyRunner(env, sac, cfg, seed=0)
    assert len(runner.bc_losses) == 20 and runner.prior is None and runner.sampler is runner.buffer
    kept = OffPolicyRunner(env, sac, OffPolicyRunnerConfig(prior_buffer=str(demos)), seed=0)
    assert kept.prior is not None and len(kept.prior) == 5000
    with pytest.raises(ValueError, match="need a prior_buffer"):
        OffPolicyRunnerConfig(bc_pretrain_steps=5)
    with pytest.raises(ValueError, match="set bc_pretrain_steps"):
        OffPolicyRunnerConfig(prior_buffer=str(demos), keep_prior=False)


def test_critic_warmup_keeps_the_pretrained_actor_still(demos: Path) -> None:
    env = make("quadrotor/hover", num_envs=4, seed=0)
    sac = SAC(
        22,
        critic_obs_dim(env),
        env.action_spec.low_tensor(),
        env.action_spec.high_tensor(),
        preset("quadrotor_hover_sac").sac,
    )
    cfg = OffPolicyRunnerConfig(
        loop=replace(OFF_POLICY_LOOP, max_iterations=3),
        prior_buffer=str(demos),
        learning_starts=0,
        batch_size=4,
        critic_warmup_steps=6,
    )
    runner = OffPolicyRunner(env, sac, cfg, seed=0)
    actor_before = [p.detach().clone() for p in sac.actor.parameters()]
    critic_before = [p.detach().clone() for p in sac.critic.parameters()]
    runner.learn()  # 3 iterations × 1 update: critic only
    assert runner.gradient_steps == 3
    assert all(torch.equal(a, b) for a, b in zip(actor_before, sac.actor.parameters(), strict=True))
    assert not all(torch.equal(a, b) for a, b in zip(critic_before, sac.critic.parameters(), strict=True))
    runner.train_step()
    runner.train_step()
    runner.train_step()  # gradient steps 3, 4, 5: still the critic; then the 7th (index 6) moves the actor
    assert all(torch.equal(a, b) for a, b in zip(actor_before, sac.actor.parameters(), strict=True))
    runner.train_step()
    assert not all(torch.equal(a, b) for a, b in zip(actor_before, sac.actor.parameters(), strict=True))
