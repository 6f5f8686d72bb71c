"""The captured rollout and evaluation (robo_rl.runners.device_rollout) against the classic loop, step by step.

Three paths of one rollout: the classic `OnPolicyRunner.collect` (Python steps the env and the policy), the
capture-ready block run eagerly ("eager", the CPU path), and the same block recorded once and replayed with Python
frozen ("fx": `make_fx` records the tensor operations and replays them, as a CUDA graph does on a GPU). Same seeds,
same numbers: the rollout storage, the episode statistics and the env state must agree exactly. On a GPU the
"cuda" backend is held to "eager" the same way.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from robo_rl.api.configs import preset
from robo_rl.build import build_runner
from robo_rl.capture import CaptureBackend
from robo_rl.runners.evaluate import EVAL_SEED_OFFSET, PRECHECK_SEED_OFFSET, evaluate
from robo_rl.runners.on_policy import OnPolicyRunner
from robo_rl.sim import make
from robo_rl.sim.quadrotor.curriculum import CurriculumConfig

STORAGE_FIELDS = (
    "obs",
    "critic_obs",
    "actions",
    "log_probs",
    "values",
    "next_values",
    "rewards",
    "terminated",
    "dones",
)


def _runner(
    num_steps: int = 4,
    num_envs: int = 16,
    capture: str = "never",
    curriculum: bool = False,
    device: str = "cpu",
    name: str = "quadrotor_hover_ppo",
) -> OnPolicyRunner:
    base = preset(name)
    # 5 steps: resets inside every rollout; the torch step (the captured path's, as on a GPU), not the numba one
    config = replace(base.task.config, episode_length=0.05, backend="torch")
    if curriculum:  # the robust preset's curriculum: a fraction that changes every step, read from a tensor
        config = replace(config, curriculum=CurriculumConfig(steps=20))
    cfg = replace(
        base,
        task=replace(base.task, num_envs=num_envs, config=config, device=device),
        ppo=replace(base.ppo, num_steps=num_steps, num_epochs=1, num_minibatches=2),
        runner=replace(base.runner, capture=capture),
    )
    return build_runner(cfg, make, evaluate=False)


def _seeded(seed: int, *calls: object) -> None:
    """Each call from the same global random state (the runners share torch's global generator)."""
    for call in calls:
        torch.manual_seed(seed)
        call()  # type: ignore[operator]


def _assert_same_rollout(a: OnPolicyRunner, b: OnPolicyRunner) -> None:
    for name in STORAGE_FIELDS:
        assert torch.equal(getattr(a.storage, name), getattr(b.storage, name)), name
    for name in a.storage.distribution:
        assert torch.equal(a.storage.distribution[name], b.storage.distribution[name]), name
    assert torch.equal(a.obs, b.obs) and torch.equal(a.critic_obs, b.critic_obs)
    env_a, env_b = a.env.state_dict(), b.env.state_dict()
    for key, value in env_a.items():
        if isinstance(value, torch.Tensor):
            assert torch.equal(value, env_b[key]), key
    assert a.env_steps == b.env_steps and a.storage.step == b.storage.step


@pytest.mark.parametrize("curriculum", [False, True])
def test_eager_captured_rollout_is_the_classic_collect(curriculum: bool) -> None:
    """The capture-ready block draws the same numbers in the same order as `collect`: equal to the bit, across
    rollouts with updates between them (the policy and its normalizers move)."""
    classic, captured = _runner(curriculum=curriculum), _runner(capture="always", curriculum=curriculum)
    assert classic.capture_backend is None and captured.capture_backend == "eager"
    for iteration in range(3):
        _seeded(iteration, classic.collect, captured.collect)
        _assert_same_rollout(classic, captured)
        assert classic.tracker.flush() == captured.tracker.flush()
        _seeded(100 + iteration, classic.update, captured.update)
        # the captured update equals the classic one to rounding (tests/robo_rl/algorithms/test_ppo_capture.py):
        # the next rollouts start from the same policy, so that they can be compared to the bit
        captured.policy.load_state_dict(classic.policy.state_dict())


def _with_backend(backend: CaptureBackend, name: str = "quadrotor_hover_ppo") -> OnPolicyRunner:
    runner = _runner(num_steps=3, num_envs=8, capture="always", curriculum=True, name=name)
    runner.capture_backend = backend
    return runner


@pytest.mark.parametrize("name", ["quadrotor_hover_ppo", "quadrotor_hover_robust_ppo"])
def test_replayed_rollout_is_the_eager_one(name: str) -> None:
    """Recorded once (the second rollout) and replayed with Python frozen, as a CUDA graph is: the replays see the
    new random numbers, the curriculum's new fraction, the updated policy, and every env state written back (the
    robust preset: every randomization, action latency through an expanded index, observation noise)."""
    eager, replayed = _with_backend("eager", name), _with_backend("fx", name)
    for iteration in range(4):
        _seeded(iteration, eager.collect, replayed.collect)
        _assert_same_rollout(eager, replayed)
        assert eager.tracker.flush() == replayed.tracker.flush()
        if iteration == 2:  # a checkpoint load between replays rebinds the env's tensors: copied in
            replayed.env.load_state_dict(eager.env.state_dict())
        _seeded(100 + iteration, eager.update, replayed.update)
    assert replayed._device_rollout is not None and replayed._device_rollout.captured.captured


def test_captured_evaluation_is_evaluate() -> None:
    """The evaluation block, replayed, gives `evaluate`'s result episode by episode, also after the actor's
    parameters changed in place and after `evaluate` itself reset the same env in between (its tensors rebound)."""
    runner = _with_backend("fx")
    config = replace(preset("quadrotor_hover_ppo").task.config, episode_length=0.05, backend="torch")
    runner.eval_env = make("quadrotor/hover", num_envs=8, device="cpu", seed=0, config=config)
    actor = runner._deterministic_actor().eval()
    for _ in range(3):
        expected = evaluate(runner.eval_env, actor, seed=runner.seed + EVAL_SEED_OFFSET)
        got = runner.evaluate()
        assert (got.returns, got.lengths, got.successes) == (expected.returns, expected.lengths, expected.successes)
        with torch.no_grad():  # the next round evaluates a changed policy
            for parameter in runner.policy.actor_parameters():
                parameter.mul_(1.5)
    (evaluation,) = runner._captured_evaluations.values()
    assert evaluation.captured.captured


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")
def test_cuda_graph_rollout_is_the_eager_one() -> None:
    """On a GPU: the rollout replayed as a CUDA graph equals the same block run eagerly, rollout after rollout."""
    eager = _runner(num_steps=8, num_envs=256, capture="always", curriculum=True, device="cuda")
    graph = _runner(num_steps=8, num_envs=256, capture="always", curriculum=True, device="cuda")
    eager.capture_backend = "eager"
    assert graph.capture_backend == "cuda"
    for iteration in range(4):
        _seeded(iteration, eager.collect, graph.collect)
        _assert_same_rollout(eager, graph)
        _seeded(100 + iteration, eager.update, graph.update)  # the update's own device check: test_ppo_capture.py
        graph.policy.load_state_dict(eager.policy.state_dict())  # in place: the graphs read the loaded weights
    assert graph._device_rollout is not None and graph._device_rollout.captured.captured


def test_captured_precheck_is_evaluate_on_its_own_env() -> None:
    """The gate evaluation's pre-check (LoopConfig.eval_precheck_episodes) on its own, smaller env: replayed as a
    graph of its own, beside the gate evaluation's, with `evaluate`'s results on the pre-check's seed; the pass
    decision reads the replayed rate."""
    runner = _with_backend("fx")
    config = replace(preset("quadrotor_hover_ppo").task.config, episode_length=0.05, backend="torch")
    runner.eval_env = make("quadrotor/hover", num_envs=8, device="cpu", seed=0, config=config)
    runner.precheck_env = make("quadrotor/hover", num_envs=4, device="cpu", seed=1, config=config)
    actor = runner._deterministic_actor().eval()
    seed = runner.seed + PRECHECK_SEED_OFFSET
    expected = evaluate(runner.precheck_env, actor, seed=seed)
    passes = runner._precheck_passes()
    runner.evaluate()
    got = runner._evaluate_on(runner.precheck_env, seed)
    assert (got.returns, got.lengths, got.successes) == (expected.returns, expected.lengths, expected.successes)
    assert runner._precheck_rate == expected.success_rate
    assert passes == (expected.success_rate >= 0.97 - 0.01)
    assert set(runner._captured_evaluations) == {id(runner.precheck_env), id(runner.eval_env)}
    assert runner._captured_evaluations[id(runner.precheck_env)].captured.captured  # recorded at its second call
