"""checkpoints/best.pt: the policy of the best evaluation, what eval and export load by default."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import torch

from robo_rl.api.configs import preset
from robo_rl.api.runs import load_trained
from robo_rl.build import build_runner
from robo_rl.runners.best_policy import BEST_CHECKPOINT, BEST_KEY, BestPolicy
from robo_rl.runners.evaluate import EvalResult
from robo_rl.runners.run_dir import RunDirectory
from robo_rl.sim import make


def _evaluation(success: float | None, mean_return: float) -> EvalResult:
    successes = None if success is None else tuple(i < round(10 * success) for i in range(10))
    return EvalResult(returns=(mean_return,) * 10, lengths=(5,) * 10, successes=successes)


def test_success_rate_decides_then_return_and_ties_keep_the_earlier_policy(tmp_path: Path) -> None:
    best, written = BestPolicy(), []

    def offer(success: float | None, mean_return: float, iteration: int) -> bool:
        state = lambda: written.append(iteration) or {"policy": {"w": torch.tensor(float(iteration))}}  # noqa: E731
        return best.offer(_evaluation(success, mean_return), iteration, state, tmp_path)

    assert offer(0.5, -10.0, 1)
    assert offer(0.7, -50.0, 2)  # a higher success rate wins over a lower return
    assert not offer(0.6, 0.0, 3)
    assert not offer(0.7, -50.0, 4)  # a tie keeps iteration 2
    assert offer(0.7, -40.0, 5)
    assert written == [1, 2, 5]  # the policy is only serialized when it is the best
    saved = torch.load(tmp_path / BEST_CHECKPOINT, weights_only=False)
    assert saved["iteration"] == 5 and float(saved["policy"]["w"]) == 5.0
    assert saved[BEST_KEY] == {"iteration": 5, "success_rate": 0.7, "mean_return": -40.0}
    restored = BestPolicy()
    restored.load_state_dict(best.state_dict())
    assert not restored.offer(_evaluation(0.7, -45.0), 6, lambda: {}, None)


def test_tasks_without_success_compare_returns() -> None:
    best = BestPolicy()
    assert best.offer(_evaluation(None, -300.0), 1, dict, None)
    assert not best.offer(_evaluation(None, -400.0), 2, dict, None)
    assert best.offer(_evaluation(None, -200.0), 3, dict, None)
    assert best.iteration == 3 and best.success_rate is None


def test_ppo_run_keeps_its_best_evaluation_and_eval_loads_it(tmp_path: Path) -> None:
    base = preset("pendulum_ppo")
    cfg = replace(
        base,
        task=replace(base.task, num_envs=32),
        runner=replace(
            base.runner,
            loop=replace(base.runner.loop, max_iterations=12, eval_interval=1, eval_episodes=8, target_return=None),
        ),
    )
    runner = build_runner(cfg, make)
    runner.run = RunDirectory.create(tmp_path, "x", 0, "{}\n", "test")
    (runner.run.path / "config.yaml").write_text(_yaml(cfg))
    result = runner.learn()
    rows = [json.loads(line) for line in (runner.run.path / "metrics.jsonl").read_text().splitlines()]
    returns = [row["eval_return"] for row in rows]
    best_iteration = rows[max(range(len(rows)), key=lambda i: (returns[i], -i))]["iteration"]
    assert result.best_iteration == best_iteration
    assert best_iteration < 12, "the test needs a run whose last evaluation is not its best"
    saved = torch.load(runner.run.checkpoints / BEST_CHECKPOINT, weights_only=False)
    assert saved["iteration"] == best_iteration
    assert abs(saved[BEST_KEY]["mean_return"] - max(returns)) < 1e-9
    trained = load_trained(runner.run.path)
    assert trained.checkpoint.name == BEST_CHECKPOINT and trained.iteration == best_iteration
    latest = load_trained(runner.run.path, runner.run.latest_checkpoint)
    assert latest.iteration == 12


def _yaml(cfg: object) -> str:
    import yaml

    from robo_rl.config import to_dict

    return yaml.safe_dump(to_dict(cfg), sort_keys=False)


def test_off_policy_best_pt_holds_the_actor_that_eval_rebuilds(tmp_path: Path) -> None:
    from robo_rl.api.configs import preset

    base = preset("pendulum_sac")
    cfg = replace(
        base,
        task=replace(base.task, num_envs=4),
        off_policy=replace(
            base.off_policy,
            loop=replace(base.off_policy.loop, max_iterations=120, eval_interval=30, eval_episodes=4),
            learning_starts=40,
            batch_size=32,
        ),
    )
    runner = build_runner(cfg, make)
    runner.run = RunDirectory.create(tmp_path, "x", 0, "{}\n", "test")
    (runner.run.path / "config.yaml").write_text(_yaml(cfg))
    result = runner.learn()
    saved = torch.load(runner.run.checkpoints / BEST_CHECKPOINT, weights_only=False)
    assert saved["iteration"] == result.best_iteration and set(saved) >= {"algorithm", BEST_KEY}
    assert "buffer" not in saved  # the actor only, not the replay buffer
    trained = load_trained(runner.run.path)
    assert trained.iteration == result.best_iteration
    expected = runner.algorithm.actor.state_dict() if result.best_iteration == 120 else saved["algorithm"]["actor"]
    compared = [name for name in trained.actor.state_dict() if name in expected]
    assert compared
    assert all(torch.equal(trained.actor.state_dict()[name], expected[name]) for name in compared)


def test_a_best_pt_newer_than_the_resumed_checkpoint_stays_the_best(tmp_path: Path) -> None:
    """A crash between best.pt and latest.pt: the resumed run must not overwrite best.pt with a worse policy."""
    written = BestPolicy()
    written.offer(_evaluation(0.6, 1.0), 10, lambda: {"policy": {}}, tmp_path)  # in the older latest.pt
    older = written.state_dict()
    written.offer(_evaluation(0.9, 1.0), 20, lambda: {"policy": {}}, tmp_path)  # then best.pt, then the crash
    resumed = BestPolicy()
    resumed.load_state_dict(older, tmp_path)
    assert resumed.iteration == 20
    assert not resumed.offer(_evaluation(0.8, 5.0), 30, lambda: {"policy": {}}, tmp_path)
    assert torch.load(tmp_path / BEST_CHECKPOINT, weights_only=False)["iteration"] == 20
    (tmp_path / BEST_CHECKPOINT).write_bytes(b"truncated")
    damaged = BestPolicy()
    damaged.load_state_dict(older, tmp_path)  # a damaged best.pt is not a best to keep
    assert damaged.iteration == 10
