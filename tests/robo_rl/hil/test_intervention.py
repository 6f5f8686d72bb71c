"""InterventionEnv flags and replaces actions exactly where the device is active; the runner stores them."""

from __future__ import annotations

from dataclasses import replace

import torch

from robo_rl.hil import INFO_EXECUTED_ACTION, INFO_INTERVENED, InterventionEnv, TeleopCommand
from robo_rl.runners.off_policy_config import OFF_POLICY_LOOP
from robo_rl.sim import make
from robo_rl.storage.replay import FIELD_NAMES, select_transitions


class ScheduledDevice:
    """Takes over env k on steps where (step + k) % 3 == 0, with action 0.5 × (k + 1)."""

    def __init__(self, num_envs: int) -> None:
        self.num_envs, self.steps, self.resets = num_envs, 0, 0

    def poll(self, obs: torch.Tensor) -> TeleopCommand:
        index = torch.arange(self.num_envs)
        active = (self.steps + index) % 3 == 0
        self.steps += 1
        action = (0.5 * (index + 1)).clamp(max=2.0).unsqueeze(1)
        return TeleopCommand(action, active, {})

    def episode_reset(self, done: torch.Tensor) -> None:
        self.resets += int(done.sum())


def test_wrapper_executes_the_operators_action_only_where_active() -> None:
    env = InterventionEnv(make("pendulum", num_envs=4, seed=0), ScheduledDevice(4))
    twin = make("pendulum", num_envs=4, seed=0)
    env.reset(seed=1)
    twin.reset(seed=1)
    generator = torch.Generator().manual_seed(0)
    for step in range(30):
        policy = torch.rand(4, 1, generator=generator) * 4 - 2
        obs, _, _, _, info = env.step(policy)
        active = (step + torch.arange(4)) % 3 == 0
        expected = torch.where(active.unsqueeze(1), (0.5 * (torch.arange(4) + 1)).clamp(max=2.0).unsqueeze(1), policy)
        assert torch.equal(info[INFO_INTERVENED], active)
        assert torch.equal(info[INFO_EXECUTED_ACTION], expected)
        twin_obs = twin.step(expected)[0]
        assert torch.equal(obs, twin_obs)  # the simulator really got the executed action
    stats = env.intervention_stats()
    assert abs(stats["intervention_rate"] - 40 / 120) < 1e-9
    assert env.obs_spec == twin.obs_spec and env.num_envs == 4  # everything else is the wrapped env's


def test_episode_statistics_count_finished_episodes() -> None:
    env = InterventionEnv(make("pendulum", num_envs=2, seed=0, params=("max_episode_steps=6",)), ScheduledDevice(2))
    env.reset(seed=0)
    for _ in range(12):
        env.step(torch.zeros(2, 1))
    stats = env.intervention_stats()
    # 4 finished episodes of 6 steps, each with takeovers on a third of its steps.
    assert env.finished_episodes == 4 and stats["episodes_intervened"] == 1.0
    assert abs(stats["episode_intervention_rate"] - 8 / 24) < 1e-9
    assert env.teleop.resets == 2 + 4  # the reset, then every finished episode


def test_off_policy_runner_stores_executed_actions_flagged_and_copies_them_to_the_prior_buffer() -> None:
    from robo_rl.algorithms.sac import SAC, SACConfig
    from robo_rl.runners.off_policy import OffPolicyRunner
    from robo_rl.runners.off_policy_config import OffPolicyRunnerConfig

    inner = make("pendulum", num_envs=4, seed=0)
    low, high = inner.action_spec.low_tensor(), inner.action_spec.high_tensor()
    torch.manual_seed(0)
    sac = SAC(3, 3, low, high, SACConfig(actor_hidden=(16,), critic_hidden=(16,)))
    cfg = OffPolicyRunnerConfig(
        loop=replace(OFF_POLICY_LOOP, max_iterations=30, eval_interval=0), learning_starts=20, batch_size=32
    )
    runner = OffPolicyRunner(InterventionEnv(inner, ScheduledDevice(4)), sac, cfg, seed=0)
    assert runner.prior is None
    runner.learn()
    stored = runner.buffer.stored()
    assert int(stored.intervened.sum()) == 40  # a third of 30 × 4 transitions
    operator = (0.5 * (torch.arange(4) + 1)).clamp(max=2.0).repeat(30)[stored.intervened.bool()]
    # Stored normalized: the pendulum's torque bound is 2, so action a is stored as a / 2.
    torch.testing.assert_close(stored.actions[stored.intervened.bool(), 0], operator / 2.0)
    # Dual storage: the prior buffer holds exactly the intervened transitions of the online buffer, in order, every
    # field equal (the online buffer keeps them too).
    assert runner.prior is not None and len(runner.prior) == 40
    prior, intervened = runner.prior.stored(), select_transitions(stored, stored.intervened.bool())
    for name in FIELD_NAMES:
        assert torch.equal(getattr(prior, name), getattr(intervened, name)), name
    assert bool(prior.intervened.all()) and not bool(prior.is_demo.any())
    # RLPD: exactly the first half of every batch comes from the intervention buffer, the rest from online data.
    batch = runner.sample_batch()
    prior_rows = {tuple(row) for row in prior.obs.tolist()}
    assert [tuple(row) in prior_rows for row in batch.obs[:16].tolist()] == [True] * 16
    assert bool(batch.intervened[:16].all())
    online_rows = {tuple(row) for row in stored.obs.tolist()}
    assert all(tuple(row) in online_rows for row in batch.obs[16:].tolist())


def test_interventions_stay_in_the_online_buffer_alone_when_asked() -> None:
    """`off_policy.interventions_to_prior=false`: the takeovers are stored (flagged) like the policy's own steps,
    and no prior buffer appears, so batches are online data only."""
    from robo_rl.algorithms.sac import SAC, SACConfig
    from robo_rl.runners.off_policy import OffPolicyRunner
    from robo_rl.runners.off_policy_config import OffPolicyRunnerConfig

    inner = make("pendulum", num_envs=4, seed=0)
    sac = SAC(3, 3, inner.action_spec.low_tensor(), inner.action_spec.high_tensor(), SACConfig(actor_hidden=(16,)))
    loop = replace(OFF_POLICY_LOOP, max_iterations=30, eval_interval=0)
    cfg = OffPolicyRunnerConfig(loop=loop, learning_starts=20, batch_size=32, interventions_to_prior=False)
    runner = OffPolicyRunner(InterventionEnv(inner, ScheduledDevice(4)), sac, cfg, seed=0)
    runner.learn()
    assert int(runner.buffer.stored().intervened.sum()) == 40 and runner.prior is None


class EstopAt(ScheduledDevice):
    """ScheduledDevice whose e-stop button is pressed on poll `press` (reported once)."""

    def __init__(self, num_envs: int, press: int) -> None:
        super().__init__(num_envs)
        self.press = press

    def poll(self, obs: torch.Tensor) -> TeleopCommand:
        command = super().poll(obs)
        return TeleopCommand(command.action, command.active, {"estop": True} if self.steps == self.press else {})


def test_the_operators_estop_ends_training_with_a_checkpoint(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from robo_rl.algorithms.sac import SAC, SACConfig
    from robo_rl.runners.off_policy import OffPolicyRunner
    from robo_rl.runners.off_policy_config import OffPolicyRunnerConfig
    from robo_rl.runners.run_dir import RunDirectory

    inner = make("pendulum", num_envs=2, seed=0)
    low, high = inner.action_spec.low_tensor(), inner.action_spec.high_tensor()
    sac = SAC(3, 3, low, high, SACConfig(actor_hidden=(16,), critic_hidden=(16,)))
    cfg = OffPolicyRunnerConfig(
        loop=replace(OFF_POLICY_LOOP, max_iterations=500, eval_interval=0), learning_starts=20, batch_size=16
    )
    run = RunDirectory.create(tmp_path, "estop", 0, "{}", "test")
    env = InterventionEnv(inner, EstopAt(2, press=37))
    result = OffPolicyRunner(env, sac, cfg, seed=0, run=run).learn()
    assert result.estop and result.iterations == 37 and not result.reached_target
    assert env.estop and run.latest_checkpoint.is_file()
