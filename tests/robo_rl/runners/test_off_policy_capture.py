"""`off_policy.capture`: an iteration's SAC / TD3 gradient steps as a captured graph. On the CPU the "fx" backend
replays the recorded graph with Python frozen, as a CUDA graph would, and must equal the eager run of the same
code exactly; that eager run must be the classic loop's algorithm (same losses from the same batches and draws).
Small nets, batch 32, a few iterations: make_fx records about 2 ms per operation."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch

from robo_rl.algorithms.fql import FQL, FQLConfig
from robo_rl.algorithms.sac import SAC, SACConfig
from robo_rl.algorithms.td3 import TD3, TD3Config
from robo_rl.capture import CaptureBackend
from robo_rl.runners.off_policy import OffPolicyRunner
from robo_rl.runners.off_policy_config import OFF_POLICY_LOOP, OffPolicyRunnerConfig
from robo_rl.sim import make

HIDDEN = (16, 16)
BATCH = 32  # x 1 action: a multiple of 16 normals, which the CPU draws alike at once or one batch at a time


def _algorithm(name: str) -> SAC | TD3:
    """ "sac", "td3", or "sac-subset": RLPD's critic subset (2 of 4 members)."""
    env = make("pendulum", num_envs=1)
    low, high = env.action_spec.low_tensor(), env.action_spec.high_tensor()
    torch.manual_seed(0)
    if name.startswith("sac"):
        subset = {"num_critics": 4, "critic_subset": 2} if name == "sac-subset" else {}
        return SAC(3, 3, low, high, SACConfig(actor_hidden=HIDDEN, critic_hidden=HIDDEN, **subset))  # type: ignore[arg-type]
    return TD3(3, 3, low, high, TD3Config(actor_hidden=HIDDEN, critic_hidden=HIDDEN, policy_delay=2))


def _config(capture: str, **changes: Any) -> OffPolicyRunnerConfig:
    cfg = OffPolicyRunnerConfig(
        loop=replace(OFF_POLICY_LOOP, max_iterations=100, eval_interval=0),
        learning_starts=BATCH,
        batch_size=BATCH,
        buffer_capacity=64,  # wraps within the run
        capture=capture,  # type: ignore[arg-type]  # the tests pass the modes as strings
    )
    return replace(cfg, **changes)


def _run(
    name: str, capture: str, backend: CaptureBackend = "eager", iterations: int = 30, **changes: Any
) -> tuple[list[dict[str, float]], dict[str, torch.Tensor], OffPolicyRunner]:
    """The per-iteration losses and the final weights of `iterations` iterations on two pendulums."""
    env = make("pendulum", num_envs=2, seed=0)
    runner = OffPolicyRunner(env, _algorithm(name), _config(capture, **changes), seed=0)
    if runner.updates is not None:
        runner.updates.backend = backend
    torch.manual_seed(1)  # the updates' noise
    losses = []
    for _ in range(iterations):
        runner.step()
        losses.append({key: float(value) for key, value in runner.train_step().items()})
    algorithm = runner.algorithm
    weights = {f"actor.{k}": v.clone() for k, v in algorithm.actor.state_dict().items()}
    weights |= {f"critic.{k}": v.clone() for k, v in algorithm.critic.state_dict().items()}
    weights |= {f"target.{k}": v.clone() for k, v in algorithm.target_critic.state_dict().items()}  # type: ignore[attr-defined]
    return losses, weights, runner


def _assert_same(a: tuple[list[dict[str, float]], dict[str, torch.Tensor]], b: Any, tol: float) -> None:
    losses_a, weights_a = a[0], a[1]
    losses_b, weights_b = b[0], b[1]
    assert [row.keys() for row in losses_a] == [row.keys() for row in losses_b]
    assert any(losses_a), "no update ran"
    for i, (row_a, row_b) in enumerate(zip(losses_a, losses_b, strict=True)):
        for key in row_a:
            assert row_a[key] == pytest.approx(row_b[key], abs=tol, rel=tol), (i, key)
    assert weights_a.keys() == weights_b.keys()
    for key in weights_a:
        torch.testing.assert_close(weights_a[key], weights_b[key], atol=tol, rtol=tol, msg=key)


# SAC: update_to_data 0.75 x 2 envs is 1 and 2 updates by turns, and the critic warm-up ends inside an iteration:
# plans (F,) x 3, (F, F) x 2, (F, T) once, then (T,) and (T, T) by turns, each its own graph. TD3: one update per
# iteration, the actor every second: plans (F,) and (T,) by turns.
CASES = {
    "sac-subset": {"update_to_data": 0.75, "critic_warmup_steps": 8},
    "td3": {"updates_per_step": 1},
}


@pytest.mark.parametrize("name", ["sac-subset", "td3"])
def test_replayed_graphs_equal_the_eager_run(name: str) -> None:
    eager = _run(name, "always", "eager", **CASES[name])
    graphs = _run(name, "always", "fx", **CASES[name])
    updates = graphs[2].updates
    assert updates is not None and updates.graphs == (5 if name == "sac-subset" else 2)
    runs = [graph.captured for graph in updates._graphs.values()]
    assert all(run.captured for run in runs if run.calls >= 2)  # the first run is eager, the second records
    assert sum(run.calls >= 4 for run in runs) == 2  # replayed: (T,) and (T, T) for SAC, both plans for TD3
    _assert_same(eager, graphs, 1e-6)
    assert graphs[2].gradient_steps == eager[2].gradient_steps > 0
    if name == "td3":
        assert graphs[2].algorithm.critic_steps == eager[2].algorithm.critic_steps  # type: ignore[union-attr]
        assert any("actor_loss" in row for row in graphs[0]) and any("actor_loss" not in row for row in graphs[0][5:])


@pytest.mark.parametrize(("name", "changes"), [("sac", {"update_to_data": 0.75}), ("td3", {"updates_per_step": 3})])
def test_the_captured_path_is_the_classic_algorithm(name: str, changes: dict[str, Any]) -> None:
    """Same batch indices (the same random call), the noise in the classic loop's order: the same losses and
    weights, to float rounding (capturable Adam keeps its step count on the device). Without a critic warm-up:
    during one the captured path draws the actor's noise too, and the streams part."""
    classic = _run(name, "never", **changes)
    captured = _run(name, "always", "eager", **changes)
    assert classic[2].updates is None and captured[2].updates is not None
    _assert_same(classic, captured, 1e-5)


def test_sac_update_with_noise_drawn_before_is_the_classic_update() -> None:
    """The draws SAC makes itself (next action, then action: one standard normal `(B, A)` each), passed in."""
    runner = OffPolicyRunner(make("pendulum", num_envs=2, seed=0), _algorithm("sac"), _config("never"), seed=0)
    for _ in range(20):
        runner.step()
    batch = runner.sample_batch()
    algorithms = [_algorithm("sac"), _algorithm("sac")]
    torch.manual_seed(5)
    classic = algorithms[0].update(batch)
    torch.manual_seed(5)
    normal = torch.stack([torch.randn(BATCH, 1), torch.randn(BATCH, 1)])
    given = algorithms[1].update(batch, noise={"normal": normal})
    assert classic.keys() == given.keys()
    for key in classic:
        torch.testing.assert_close(classic[key], given[key], atol=1e-6, rtol=1e-6)


def test_subset_keys_choose_a_random_subset() -> None:
    """RLPD's critic subset from uniform keys drawn before: the members with the smallest keys."""
    from robo_rl.algorithms.off_policy_targets import subset_min

    q = torch.arange(10.0).unsqueeze(1).expand(10, 3)
    keys = torch.tensor([0.9, 0.1, 0.8, 0.7, 0.05, 0.6, 0.5, 0.4, 0.3, 0.2])
    assert torch.equal(subset_min(q, 2, keys=keys), torch.full((3,), 1.0))  # members 4 and 1


def test_capture_auto_is_off_on_the_cpu_and_the_default() -> None:
    """The default, "auto", captures on CUDA only: on the CPU the classic loop runs, as it always did."""
    assert OffPolicyRunnerConfig().capture == "auto"
    env = make("pendulum", num_envs=2, seed=0)
    assert OffPolicyRunner(env, _algorithm("sac"), _config("auto"), seed=0).updates is None


def test_refusals_name_the_setting() -> None:
    with pytest.raises(ValueError, match="capture must be one of"):
        _config("on")
    with pytest.raises(ValueError, match=r"capture=always.*actor_learner"):
        _config("always", actor_learner=True)
    with pytest.raises(ValueError, match=r"capture=always.*prior_buffer"):
        _config("always", prior_buffer="demos.npz")
    env = make("pendulum", num_envs=2, seed=0)
    low, high = env.action_spec.low_tensor(), env.action_spec.high_tensor()
    fql = FQL(3, 3, low, high, FQLConfig(actor_hidden=HIDDEN, flow_hidden=HIDDEN, critic_hidden=HIDDEN))
    with pytest.raises(ValueError, match=r"off_policy\.capture=always: FQL"):
        OffPolicyRunner(env, fql, _config("always"), seed=0)
    assert OffPolicyRunner(env, fql, _config("auto"), seed=0).updates is None


def _optimizer_moments(runner: OffPolicyRunner) -> list[torch.Tensor]:
    state = runner.algorithm.critic_optimizer.state_dict()["state"]  # type: ignore[attr-defined]
    return [s["exp_avg"].clone() for _, s in sorted(state.items())]


def test_a_checkpoint_load_recaptures_and_continues_exactly(tmp_path: Path) -> None:
    """A load replaces the optimizer state with new tensors: the graphs captured before must not go on updating
    the old ones. TD3 reloads its own checkpoint mid-run and ends where the straight run ends, moments included."""
    straight = _run("td3", "always", "fx", iterations=30)[2]
    env = make("pendulum", num_envs=2, seed=0)
    runner = OffPolicyRunner(env, _algorithm("td3"), _config("always"), seed=0)
    assert runner.updates is not None
    runner.updates.backend = "fx"
    torch.manual_seed(1)
    for _ in range(24):
        runner.step()
        runner.train_step()
    assert runner.updates.graphs == 2 and all(graph.captured.captured for graph in runner.updates._graphs.values())
    runner.save(tmp_path / "mid.pt")
    runner.load(tmp_path / "mid.pt")
    assert runner.updates.graphs == 0
    for _ in range(6):
        runner.step()
        runner.train_step()
    for a, b in zip(_optimizer_moments(straight), _optimizer_moments(runner), strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(straight.algorithm.actor.state_dict(), runner.algorithm.actor.state_dict())


@pytest.mark.parametrize("mode", ["always", "never", "auto"])
def test_the_setting_reads_from_the_command_line(mode: str) -> None:
    """`--set off_policy.capture=always` (not on/off: YAML 1.1 reads those as booleans)."""
    text = mode
    from robo_rl.config import apply_overrides
    from robo_rl.experiment import ExperimentConfig

    assert apply_overrides(ExperimentConfig(), [f"off_policy.capture={text}"]).off_policy.capture == mode


def test_a_classic_checkpoint_loads_into_capturable_optimizers() -> None:
    """A classic optimizer's state says capturable=False and a float step size; loaded into a capturable SAC it must
    stay capturable (CUDA graph capture of Adam's step refuses otherwise) with its step-size tensor kept."""
    from robo_rl.algorithms.capturable import adam, load_optimizer_state

    parameter = torch.nn.Parameter(torch.ones(3))
    classic = adam([parameter], lr=1e-3)
    parameter.grad = torch.ones(3)
    classic.step()
    capturable = adam([parameter], lr=5e-4, capturable=True)
    step_size = capturable.param_groups[0]["lr"]
    load_optimizer_state(capturable, classic.state_dict())
    group = capturable.param_groups[0]
    assert group["capturable"] and group["lr"] is step_size and float(step_size) == pytest.approx(1e-3)
