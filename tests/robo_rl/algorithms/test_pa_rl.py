"""PA-RL (issue 54, item 4): the action optimization (the best of the base policy's samples by the critic, then
normalized gradient steps on it) and the policy improvement by the flow's own loss, with a critic whose optimum is
known by hand: Q(s, a) = -|a - a*|^2, a* = (0.5, -0.3)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from robo_rl.algorithms.pa_rl import PARL, PARLConfig
from robo_rl.storage.replay import Transitions

BEST = torch.tensor([0.5, -0.3])


class Bowl(nn.Module):
    """A two-member 'ensemble' whose value is -|a - a*|^2 whatever the observation."""

    def forward(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        return -(actions - BEST).square().sum(-1).expand(2, -1)


def _learner(**settings: object) -> PARL:
    torch.manual_seed(0)
    config = PARLConfig(flow_hidden=(32, 32), critic_hidden=(32, 32), **settings)  # type: ignore[arg-type]
    return PARL(3, 3, -torch.ones(2), torch.ones(2), config)


def test_the_optimized_action_is_the_best_sample_then_climbs_the_critic() -> None:
    learner = _learner(num_samples=16, num_kept=4, gradient_steps=0)
    obs = torch.zeros(64, 3)
    torch.manual_seed(1)
    sampled = learner.optimize_actions(obs, Bowl())
    torch.manual_seed(1)
    samples = learner.actor.sample(obs.repeat_interleave(16, dim=0)).reshape(64, 16, 2)
    best = samples[torch.arange(64), (-(samples - BEST).square().sum(-1)).argmax(dim=1)]
    torch.testing.assert_close(sampled, best)  # gradient_steps 0: the best of the 16 samples
    climbing = _learner(num_samples=16, num_kept=4, gradient_steps=5, action_step_size=0.05)
    torch.manual_seed(1)
    optimized = climbing.optimize_actions(obs, Bowl())
    before, after = (best - BEST).norm(dim=-1), (optimized - BEST).norm(dim=-1)
    # five steps of 0.05 toward a* (or onto it, within one step): never farther than the best sample
    assert bool((after <= before + 1e-6).all()) and bool((after <= torch.clamp(before - 0.25, min=0.0) + 0.05).all())


def test_the_flow_learns_the_optimized_actions_by_flow_matching() -> None:
    """The policy improvement: flow-matching steps on the optimized actions move the flow's deterministic action
    toward a*, from wherever the untrained flow puts it."""
    learner = _learner(num_samples=8, num_kept=2, gradient_steps=3, action_step_size=0.1, actor_learning_rate=3e-3)
    learner.critic = Bowl()  # type: ignore[assignment]  # the critic whose optimum is known
    obs = torch.randn(128, 3, generator=torch.Generator().manual_seed(2))
    batch = Transitions(
        obs=obs, critic_obs=obs, actions=torch.zeros(128, 2), rewards=torch.zeros(128), costs=torch.zeros(128),
        next_obs=obs, next_critic_obs=obs, terminated=torch.zeros(128, dtype=torch.bool),
        truncated=torch.zeros(128, dtype=torch.bool), intervened=torch.zeros(128, dtype=torch.bool),
        is_demo=torch.zeros(128, dtype=torch.bool),
    )  # fmt: skip
    with torch.no_grad():
        start = float((learner.actor.deterministic(obs) - BEST).norm(dim=-1).mean())
    for _ in range(300):
        learner._update_actor(batch)
    with torch.no_grad():
        end = float((learner.actor.deterministic(obs) - BEST).norm(dim=-1).mean())
    assert end < 0.15 and end < 0.3 * start


def test_a_privileged_critic_is_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match="pa_rl acts with its critic"):
        PARL(3, 5, -torch.ones(2), torch.ones(2), PARLConfig())


@pytest.mark.parametrize("chunk", [1, 4])
def test_a_run_trains_and_exports_the_distilled_flow(tmp_path: Path, chunk: int) -> None:
    """Single actions and action chunks of 4 (the flow and the critic over the whole chunk)."""
    from robo_rl.cli.main import main

    flags = ["--set", "off_policy.learning_starts=64", "--set", "off_policy.loop.eval_interval=0"]
    flags += ["--set", f"task.action_chunk={chunk}"]
    flags += ["--set", "off_policy.critic_warmup_steps=0"]  # the flow learns from the start here
    flags += ["--set", "off_policy.loop.eval_episodes=4", "--max-iterations", "40", "--quiet"]
    assert main(["train", "point_obstacle_pa_rl", *flags, "--runs-root", str(tmp_path), "--export"]) == 0
    run = next((tmp_path / "point_obstacle_pa_rl").iterdir())
    assert (run / "policy.onnx").is_file() and (run / "metrics.jsonl").read_text().count("optimization_gain") > 0
