"""`robo-rl eval POLICY.onnx` and `robo-rl eval POLICY.onnx --sim l2f` for a policy with memory (a GRU actor
exported with `h_in` -> `h_out`): the state fed back step by step and set to the file's reset value at each env's
episode start, checked against step loops written out by hand that call onnxruntime (Microsoft's runtime, which
runs the ONNX GRU operator from the ONNX specification, not from our code) and against the torch evaluation. L2F
(PyPI l2f 2.0.18, the Crazyflie simulator of "Learning to Fly in Seconds") flies the L2F tests; they skip without
it, like tests/sim/quadrotor/test_l2f_gate.py."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from torch import nn

from robo_rl.api.bad_file import BadFileError
from robo_rl.api.evaluation import evaluate_policy_file
from robo_rl.api.l2f_transfer import L2FPolicy, evaluate_in_l2f, read_l2f_policy
from robo_rl.api.onnx_policy import OnnxMemoryActor, onnx_actor
from robo_rl.artifact import MEMORY_KEY
from robo_rl.cli.main import main
from robo_rl.config import to_dict
from robo_rl.export.onnx import PolicyMetadata, export_onnx
from robo_rl.modules.actor_critic import PolicyConfig
from robo_rl.modules.normalizer import EmpiricalNormalizer
from robo_rl.modules.recurrent import RecurrentActorCritic, RecurrentDeterministicActor
from robo_rl.runners.evaluate import evaluate
from robo_rl.runners.policy_stepper import PolicyStepper
from robo_rl.sim import make
from robo_rl.sim.quadrotor.hover import HoverConfig, QuadrotorHover
from robo_rl.sim.quadrotor.l2f_gate import L2FResult, fly, l2f_missing_reason

HOVER = HoverConfig(episode_length=0.3, success_window=0.1)
"""30 steps: with `_actor`, some of 8 flights crash, each at its own step, and the others run to the end."""
TASK = "quadrotor/hover"
SEED = 3
EPISODES = 8
needs_l2f = pytest.mark.skipif(l2f_missing_reason() is not None, reason=f"{l2f_missing_reason()}")


def _env(num_envs: int = EPISODES) -> QuadrotorHover:
    env = make(TASK, num_envs=num_envs, config=HOVER, seed=0)
    assert isinstance(env, QuadrotorHover)
    return env


def _actor(env: QuadrotorHover) -> RecurrentDeterministicActor:
    """A GRU actor near the hover command whose action depends on its state (its head reads the GRU's output)."""
    torch.manual_seed(0)
    cfg = PolicyConfig(actor_hidden=(16,), memory="gru", memory_size=8, init_mean="nominal")
    low, high = env.action_spec.low_tensor(), env.action_spec.high_tensor()
    policy = RecurrentActorCritic(env.obs_spec.dim, low, high, cfg, nominal_action=torch.tensor(env.hover_action))
    last, normalizer = policy.head[-1], policy.obs_normalizer
    assert isinstance(last, nn.Linear) and isinstance(normalizer, EmpiricalNormalizer)
    with torch.no_grad():
        last.weight.normal_(0.0, 0.05)
        normalizer.update(torch.randn(256, env.obs_spec.dim))
    return policy.deterministic_actor().eval()


def _export(folder: Path, reset_value: float) -> tuple[Path, RecurrentDeterministicActor]:
    """The actor as a hover policy file (its task config, actuator and memory recorded, as `robo-rl export`
    writes them); `reset_value` is what the file states (the torch actor's own is 0)."""
    env = _env(1)
    actor = _actor(env)
    metadata = PolicyMetadata(
        env.obs_spec,
        env.action_spec,
        env.dt,
        TASK,
        "test",
        "test",
        json.dumps(to_dict(env.config), sort_keys=True),
        actuator=env.actuator,
        memory=replace(actor.memory, reset_value=reset_value),
    )
    return export_onnx(actor, metadata, folder / f"policy_{reset_value}.onnx"), actor


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, RecurrentDeterministicActor]:
    """The file stating the torch actor's own reset value (0)."""
    return _export(tmp_path_factory.mktemp("memory"), 0.0)


@pytest.fixture(scope="module")
def quarter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same actor's file stating the reset value 0.25."""
    return _export(tmp_path_factory.mktemp("memory"), 0.25)[0]


class _OrtByHand:
    """obs -> action of the file through onnxruntime's own API: h_out fed back as h_in, every row of the state set
    to `reset_value` by `start(n)` and, per env, by `restart(ended)`."""

    def __init__(self, path: Path, reset_value: float) -> None:
        self.session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        self.reset_value = np.float32(reset_value)

    def start(self, n: int) -> None:
        self.h = np.full((n, 8), self.reset_value, dtype=np.float32)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        action, self.h = self.session.run(["action", "h_out"], {"obs": obs.astype(np.float32), "h_in": self.h})
        return action

    def restart(self, ended: np.ndarray) -> None:
        self.h[ended] = self.reset_value


def _evaluate_by_hand(path: Path, reset_value: float) -> tuple[tuple[float, ...], tuple[int, ...]]:
    """(returns, lengths) of one episode per env from `reset(SEED)`, stepped by hand with onnxruntime."""
    env, policy = _env(), _OrtByHand(path, reset_value)
    obs = env.reset(seed=SEED)
    policy.start(EPISODES)
    returns, lengths = torch.zeros(EPISODES), torch.zeros(EPISODES, dtype=torch.long)
    running = torch.ones(EPISODES, dtype=torch.bool)
    for _ in range(env.max_episode_steps):
        obs, reward, terminated, truncated, _ = env.step(torch.from_numpy(policy(obs.numpy())))
        ended = terminated | truncated
        policy.restart(ended.numpy())
        returns += reward * running
        lengths += running.long()
        running &= ~ended
    return tuple(returns.tolist()), tuple(lengths.tolist())


def test_eval_of_a_policy_file_with_memory_is_the_loop_by_hand(quarter: Path) -> None:
    """`robo-rl eval POLICY.onnx`'s numbers are those of the onnxruntime loop by hand from the file's reset value
    (0.25 here); from another reset value they differ, so the file's value is the one used."""
    path = quarter
    result = evaluate_policy_file(path, EPISODES, SEED)
    returns, lengths = _evaluate_by_hand(path, 0.25)
    assert result.returns == returns and result.lengths == lengths
    assert 1 < len(set(lengths)) and max(lengths) == HOVER.max_episode_steps  # crashes, each at its own step
    assert _evaluate_by_hand(path, 0.0)[0] != returns


def test_the_eval_command_prints_the_numbers_of_the_loop_by_hand(quarter: Path) -> None:
    """`robo-rl eval POLICY.onnx` (in-process) prints the mean return of the hand loop's episodes; with `--sim l2f`
    the L2F flights' line of `evaluate_in_l2f` (the L2F test below holds that to a hand loop)."""
    returns, _ = _evaluate_by_hand(quarter, 0.25)
    code, out = _main(["eval", str(quarter), "--episodes", str(EPISODES), "--seed", str(SEED)])
    assert code == 0 and f"return {sum(returns) / len(returns):.1f} ±" in out, out
    if l2f_missing_reason() is None:
        code, out = _main(["eval", str(quarter), "--sim", "l2f", "--episodes", str(EPISODES), "--seed", str(SEED)])
        expected, _ = evaluate_in_l2f(quarter, "native", episodes=EPISODES, seed=SEED)
        assert code == 0 and expected.describe() in out, out


def _main(argv: list[str]) -> tuple[int, str]:
    """The CLI in-process: (exit code, stdout with its line breaks as spaces)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    return code, " ".join(out.getvalue().split())


def test_eval_of_the_exported_file_is_the_torch_evaluation(exported: tuple[Path, RecurrentDeterministicActor]) -> None:
    """The file evaluated in onnxruntime and the actor it was exported from evaluated in torch (both carrying the
    state): the same episodes, returns equal to float32 rounding."""
    path, actor = exported
    from_file = evaluate_policy_file(path, EPISODES, SEED)
    in_torch = evaluate(_env(), actor, seed=SEED)
    assert from_file.lengths == in_torch.lengths and from_file.successes == in_torch.successes
    np.testing.assert_allclose(from_file.returns, in_torch.returns, rtol=1e-5, atol=1e-4)


def test_onnx_actor_resets_each_env_to_the_files_reset_value_at_its_episode_start(quarter: Path) -> None:
    """Over three episodes' worth of steps, envs ending at different steps: the file's actor stepped by
    `PolicyStepper` gives the hand loop's actions, which resets each env's state at its own episode start."""
    path = quarter
    actor = onnx_actor(path, 22, 4)
    assert isinstance(actor, OnnxMemoryActor) and actor.memory.reset_value == 0.25
    env, by_hand = _env(), _OrtByHand(path, 0.25)
    obs, stepper = env.reset(seed=SEED), PolicyStepper(actor, EPISODES)
    by_hand.start(EPISODES)
    partial_ends = 0
    for _ in range(3 * env.max_episode_steps):
        action = stepper(obs)
        np.testing.assert_array_equal(action.numpy(), by_hand(obs.numpy()))
        obs, _, terminated, truncated, _ = env.step(action)
        ended = terminated | truncated
        stepper.restart(ended)
        by_hand.restart(ended.numpy())
        np.testing.assert_array_equal(stepper.state.numpy(), by_hand.h)
        partial_ends += int(bool(ended.any()) and not bool(ended.all()))
    assert partial_ends > 0  # some envs restarted while others ran on


def test_a_state_input_without_memory_metadata_is_a_bad_file(
    exported: tuple[Path, RecurrentDeterministicActor], tmp_path: Path
) -> None:
    model = onnx.load(str(exported[0]))
    kept = [prop for prop in model.metadata_props if prop.key != MEMORY_KEY]
    del model.metadata_props[:]
    model.metadata_props.extend(kept)
    stripped = tmp_path / "stripped.onnx"
    onnx.save(model, str(stripped))
    with pytest.raises(BadFileError, match="h_in"):
        onnx_actor(stripped, 22, 4)


def _fly(policy: L2FPolicy, act: Callable[[np.ndarray], np.ndarray], start: Callable[[int], None] | None) -> L2FResult:
    """`EPISODES` flights of L2F's own Crazyflie with `act` and the start hook `start`, as `evaluate_in_l2f` flies
    `policy`."""
    return fly(
        act,
        policy.obs_names,
        policy.dt,
        policy.actuator,
        "native",
        EPISODES,
        SEED,
        policy.config,
        policy.integral_limit,
        start_episodes=start,
    )


@needs_l2f
def test_l2f_flight_of_a_policy_with_memory_is_the_loop_by_hand(quarter: Path) -> None:
    """`robo-rl eval POLICY.onnx --sim l2f` (the file's state carried, from its reset value 0.25) gives the numbers
    of the same flights with the policy stepped by hand in onnxruntime; by hand from 0 they differ."""
    result, _ = evaluate_in_l2f(quarter, "native", episodes=EPISODES, seed=SEED)
    policy, by_hand, from_zero = read_l2f_policy(quarter), _OrtByHand(quarter, 0.25), _OrtByHand(quarter, 0.0)
    expected = _fly(policy, by_hand, by_hand.start)
    assert result == expected and 0.0 < result.crash_rate < 1.0  # steady-state error: a number over the others
    assert _fly(policy, from_zero, from_zero.start) != expected


@needs_l2f
def test_l2f_policy_state_starts_afresh_with_every_flight(quarter: Path) -> None:
    """One policy read once and flown twice: the second flight starts from the reset value and repeats the first;
    flown without the start hook it carries the state the last flight ended with, and its numbers change."""
    policy = read_l2f_policy(quarter)
    first = _fly(policy, policy.act, policy.start_episodes)
    assert _fly(policy, policy.act, policy.start_episodes) == first
    assert _fly(policy, policy.act, None) != first
