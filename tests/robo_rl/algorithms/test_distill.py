"""Distillation into a student with memory (robo_rl.algorithms.distill): DAgger's schedule worked by hand, the replay
of the stored sequences equals what the student did while flying, and the update fits the teacher."""

from __future__ import annotations

import pytest
import torch

from robo_rl.algorithms.distill import Distillation, DistillConfig
from robo_rl.modules.actor_critic import PolicyConfig
from robo_rl.modules.recurrent import RecurrentActorCritic
from robo_rl.sim.quadrotor.airframes import AirframeDistribution
from robo_rl.sim.quadrotor.hover import HoverConfig, QuadrotorHover


def _setup(cfg: DistillConfig) -> Distillation:
    torch.manual_seed(0)
    env = QuadrotorHover(32, config=HoverConfig(airframes=AirframeDistribution(), position_integral_limit=0.5), seed=0)
    policy = PolicyConfig(actor_hidden=(32,), memory="gru", memory_size=16)
    low, high = env.action_spec.low_tensor(), env.action_spec.high_tensor()
    student = RecurrentActorCritic(env.obs_spec.dim, low, high, policy, nominal_action=torch.tensor(env.nominal_action))
    weights = torch.randn(env.obs_spec.dim + env.privileged_obs_spec.dim, 4, generator=torch.Generator().manual_seed(1))

    def teacher(x: torch.Tensor) -> torch.Tensor:  # a fixed function of what the teacher sees, within the bounds
        return torch.tanh(0.1 * x @ weights)

    return Distillation(student, teacher, env, cfg, seed=0)


def test_the_teacher_share_falls_linearly_to_zero() -> None:
    cfg = DistillConfig(teacher_start=0.8, teacher_iterations=4)
    assert [cfg.teacher_share(i) for i in range(6)] == pytest.approx([0.8, 0.6, 0.4, 0.2, 0.0, 0.0])
    assert DistillConfig(teacher_iterations=0).teacher_share(0) == 0.0


def test_the_stored_sequences_replay_the_students_own_actions() -> None:
    """With the student flying alone, replaying a rollout from its stored state and episode starts gives the actions
    it took (and episodes did start inside the rollout: crashes of a barely trained student)."""
    run = _setup(DistillConfig(num_steps=48, teacher_start=0.0))
    for _ in range(2):
        batch = run.collect()
        with torch.no_grad():
            replay = run.student.sequence(batch.obs, batch.hidden, batch.starts).mean
            stepped, h = [], batch.hidden
            for t in range(batch.obs.shape[0]):
                h = torch.where(batch.starts[t].unsqueeze(-1), torch.zeros_like(h), h)
                mean, _, h = run.student.step(batch.obs[t], h)
                stepped.append(mean)
        torch.testing.assert_close(replay, torch.stack(stepped))
    assert batch.starts.any()


def test_the_update_fits_the_teacher_on_its_sequences() -> None:
    run = _setup(DistillConfig(num_steps=16, num_epochs=1, num_minibatches=2, learning_rate=3e-3))
    batch = run.collect()
    first = run.update(batch)
    for _ in range(40):
        last = run.update(batch)
    assert last < 0.3 * first, (first, last)
