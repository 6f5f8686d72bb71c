"""The training loop both runners share (robo_rl.runners.loop): the checkpoint state they have in common, CUDA's
random state included; the stop conditions; each runner's cadence; the same collectives on every rank."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch

from robo_rl.algorithms.ppo import PPO
from robo_rl.api.configs import preset
from robo_rl.build import build_off_policy, build_policy
from robo_rl.distributed import LOCAL, Reducer, World
from robo_rl.runners.best_policy import BEST_KEY
from robo_rl.runners.loop import random_state, restore_random_state
from robo_rl.runners.off_policy import OffPolicyRunner
from robo_rl.runners.on_policy import OnPolicyRunner
from robo_rl.runners.run_dir import RunDirectory
from robo_rl.sim import make
from robo_rl.storage import checkpoint

ALGOS = ["ppo", "sac"]
LOOP_KEYS = {"iteration", "env_steps", "wall_time", "obs", "critic_obs", "tracker", "torch_rng", BEST_KEY, "env"}
"""What every runner's checkpoint holds from the shared loop (with `cuda_rng` where CUDA is available)."""
CUDA_KEYS = {"cuda_rng"} if torch.cuda.is_available() else set()

Runner = OnPolicyRunner | OffPolicyRunner


def _runner(
    algo: str,
    max_iterations: int,
    run: RunDirectory | None = None,
    evaluate: bool = False,
    reducer: Reducer = LOCAL,
    **loop: Any,
) -> Runner:
    """A small pendulum runner; `loop` overrides its loop settings (no targets, no saves by the clock)."""
    base = preset(f"pendulum_{algo}")
    settings = {"max_iterations": max_iterations, "target_return": None, "save_every_s": 0.0, **loop}
    runner_cfg = getattr(base, base.loop_section)
    changes: dict[str, Any] = {"loop": replace(base.loop, **settings)}
    if algo != "ppo":
        changes |= {"learning_starts": 20, "batch_size": 16}
    cfg = replace(base, ppo=replace(base.ppo, num_steps=8), **{base.loop_section: replace(runner_cfg, **changes)})
    seed = cfg.seed + reducer.world.rank
    env = make("pendulum", num_envs=4, seed=seed)
    eval_env = make("pendulum", num_envs=2, seed=seed + 1) if evaluate else None
    torch.manual_seed(cfg.seed)
    if cfg.on_policy:
        policy = build_policy(cfg, env)
        return OnPolicyRunner(env, policy, PPO(policy, cfg.ppo), cfg.runner, seed, eval_env, run, reducer)
    return OffPolicyRunner(env, build_off_policy(cfg, env), cfg.off_policy, seed, eval_env, run, reducer)


def _run(root: Path) -> RunDirectory:
    return RunDirectory.create(root, "x", 0, "{}\n", "test")


def _record_saves(runner: Runner) -> list[tuple[int, str]]:
    saved: list[tuple[int, str]] = []
    save = runner.save

    def recording_save(path: Path) -> None:
        saved.append((runner.iteration, path.name))
        save(path)

    runner.save = recording_save  # type: ignore[method-assign]
    return saved


def test_random_state_holds_every_cuda_device_when_cuda_is_available() -> None:
    assert set(random_state(cuda_available=False)) == {"torch_rng"}
    state = random_state(cuda_available=True)  # on a machine without CUDA: the state of its zero devices
    assert set(state) == {"torch_rng", "cuda_rng"}
    assert len(state["cuda_rng"]) == torch.cuda.device_count()
    drawn = torch.rand(4), [torch.rand(4, device=f"cuda:{i}") for i in range(torch.cuda.device_count())]
    restore_random_state(state, cuda_available=True)
    again = torch.rand(4), [torch.rand(4, device=f"cuda:{i}") for i in range(torch.cuda.device_count())]
    assert torch.equal(drawn[0], again[0]) and all(map(torch.equal, drawn[1], again[1]))


@pytest.mark.parametrize("algo", ALGOS)
def test_both_runners_checkpoint_the_same_loop_state(algo: str, tmp_path: Path) -> None:
    runner = _runner(algo, 2, run=_run(tmp_path))
    runner.learn()
    assert set(runner.loop_state()) == LOOP_KEYS | CUDA_KEYS
    assert LOOP_KEYS | CUDA_KEYS <= set(runner.state_dict())
    assert LOOP_KEYS | CUDA_KEYS <= set(checkpoint.load(runner.run.latest_checkpoint))


@pytest.mark.parametrize("algo", ALGOS)
def test_checkpoints_load_with_and_without_cudas_random_state(algo: str) -> None:
    runner = _runner(algo, 2)
    runner.learn()
    state = {k: v for k, v in runner.state_dict().items() if k != "cuda_rng"}  # as before the loop saved it
    for saved in (state, {**state, **random_state(cuda_available=True)}):
        resumed = _runner(algo, 2)
        resumed.load_state_dict(saved)
        assert resumed.iteration == 2 and torch.equal(resumed.obs, runner.obs)


@pytest.mark.parametrize("algo", ALGOS)
def test_stop_requested_ends_training_before_the_next_iteration_and_max_iterations_bounds_it(algo: str) -> None:
    runner = _runner(algo, 5)
    rows: list[int] = []
    runner.stop_requested = lambda: runner.iteration >= 2
    result = runner.learn(lambda row: rows.append(row["iteration"]))
    assert result.iterations == runner.iteration == 2 and rows == [1, 2]
    runner.stop_requested = lambda: False
    assert runner.learn().iterations == 5
    assert runner.learn(lambda row: rows.append(row["iteration"])).iterations == 5 and rows == [1, 2]


@pytest.mark.parametrize("algo", ALGOS)
def test_the_operators_estop_ends_training_after_that_iteration(algo: str) -> None:
    runner = _runner(algo, 5)

    def press_estop(row: dict[str, Any]) -> None:
        if row["iteration"] == 3:
            runner.env.estop = True  # what robo_rl.hil.InterventionEnv latches

    result = runner.learn(press_estop)
    assert result.estop and result.iterations == 3 and not result.reached_target


def test_ppo_snapshots_every_save_interval_and_refreshes_latest_on_the_evaluation_grid(tmp_path: Path) -> None:
    runner = _runner("ppo", 7, run=_run(tmp_path), eval_interval=3, save_interval=2)
    saved = _record_saves(runner)
    runner.learn()
    assert saved == [
        (2, "model_000002.pt"),
        (2, "latest.pt"),
        (3, "latest.pt"),  # evaluation grid
        (4, "model_000004.pt"),
        (4, "latest.pt"),
        (6, "model_000006.pt"),
        (6, "latest.pt"),
        (7, "latest.pt"),  # the last evaluation
        (7, "latest.pt"),  # the end of training
    ]
    assert [row["iteration"] for row in runner.run.metrics()] == [1, 2, 3, 4, 5, 6, 7]


def test_off_policy_logs_evaluations_and_every_hundredth_iteration(tmp_path: Path) -> None:
    runner = _runner("sac", 250, run=_run(tmp_path), evaluate=True, eval_interval=120, save_interval=70)
    saved = _record_saves(runner)
    rows: list[dict[str, Any]] = []
    result = runner.learn(rows.append)
    logged = runner.run.metrics()
    assert [row["iteration"] for row in logged] == [100, 120, 200, 240, 250]
    assert [row["iteration"] for row in logged if row["eval_return"] is not None] == [120, 240, 250]
    assert len(rows) == 250 and result.best_iteration in (120, 240, 250)
    assert saved == [(70, "latest.pt"), (140, "latest.pt"), (210, "latest.pt"), (250, "latest.pt")]


class _RecordingReducer:
    """One rank of a two-process job without the other: records the collectives it is asked for, in order."""

    def __init__(self, rank: int) -> None:
        self.world = World(rank=rank, size=2)
        self.calls: list[str] = []

    def gradients(self, parameters: Any) -> None:
        self.calls.append("gradients")

    def mean(self, value: torch.Tensor) -> torch.Tensor:
        self.calls.append("mean")
        return value

    def broadcast(self, value: Any) -> Any:
        self.calls.append("broadcast")
        return value


@pytest.mark.parametrize(("algo", "iterations", "eval_interval"), [("ppo", 6, 3), ("sac", 60, 20)])
def test_every_rank_makes_the_same_collective_calls(
    algo: str, iterations: int, eval_interval: int, tmp_path: Path
) -> None:
    """Rank 0 evaluates and has a progress callback, rank 1 has neither: both still broadcast after every
    iteration (the save clock) and on every iteration of the evaluation grid (whether the targets are reached)."""
    calls = []
    for rank in (0, 1):
        reducer = _RecordingReducer(rank)
        main = rank == 0
        runner = _runner(algo, iterations, _run(tmp_path / str(rank)), main, reducer, eval_interval=eval_interval)
        runner.learn((lambda row: None) if main else None)
        calls.append(reducer.calls)
    assert calls[0] == calls[1]
    assert calls[0].count("broadcast") == iterations + iterations // eval_interval
