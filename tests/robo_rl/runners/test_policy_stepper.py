"""Evaluating an actor with memory (robo_rl.runners.policy_stepper): the state fed back from step to step and set to
the reset state per env at that env's episode start (robo_rl.memory_spec.RESET_RULE), on the quadrotor hover task,
against step loops written out by hand; `evaluate` and its captured form (the training's gate) alike."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from robo_rl.modules.actor_critic import PolicyConfig
from robo_rl.modules.normalizer import EmpiricalNormalizer
from robo_rl.modules.recurrent import RecurrentActorCritic, RecurrentDeterministicActor
from robo_rl.runners.captured_evaluation import CapturedEvaluation
from robo_rl.runners.evaluate import evaluate
from robo_rl.runners.policy_stepper import PolicyStepper
from robo_rl.sim import make
from robo_rl.sim.quadrotor.hover import HoverConfig, QuadrotorHover

HOVER = HoverConfig(episode_length=0.3, success_window=0.1)
"""30 steps: with `_actor`, some of 8 flights crash, each at its own step, and the others run to the end."""
SHORT = HoverConfig(episode_length=0.06, success_window=0.02, max_angular_speed=2.0)
"""6 steps (a captured block records every step): with `_actor`, flights of 1, 4, 5 and 6 steps."""
SEED = 3


def _env(num_envs: int = 8, config: HoverConfig = HOVER) -> QuadrotorHover:
    env = make("quadrotor/hover", num_envs=num_envs, config=config, seed=0)
    assert isinstance(env, QuadrotorHover)
    return env


def _actor(env: QuadrotorHover, seed: int = 0) -> RecurrentDeterministicActor:
    """A GRU actor near the hover command whose action depends on its state (its head reads the GRU's output)."""
    torch.manual_seed(seed)
    cfg = PolicyConfig(actor_hidden=(16,), memory="gru", memory_size=8, init_mean="nominal")
    low, high = env.action_spec.low_tensor(), env.action_spec.high_tensor()
    policy = RecurrentActorCritic(env.obs_spec.dim, low, high, cfg, nominal_action=torch.tensor(env.hover_action))
    last, normalizer = policy.head[-1], policy.obs_normalizer
    assert isinstance(last, nn.Linear) and isinstance(normalizer, EmpiricalNormalizer)
    with torch.no_grad():
        last.weight.normal_(0.0, 0.05)
        normalizer.update(torch.randn(256, env.obs_spec.dim))
    return policy.deterministic_actor().eval()


@torch.no_grad()
def _by_hand(
    env: QuadrotorHover, actor: RecurrentDeterministicActor, steps: int, reset: bool = True
) -> tuple[list[torch.Tensor], list[torch.Tensor], list[torch.Tensor], torch.Tensor]:
    """(actions, rewards, ends, last state) of `steps` steps from `env.reset(SEED)`: h_out fed back as h_in, set
    to zeros for the envs whose episode ended (the env reset them) unless `reset` is False."""
    obs, h = env.reset(seed=SEED), torch.zeros(env.num_envs, actor.state_size)
    actions, rewards, ends = [], [], []
    for _ in range(steps):
        action, h = actor(obs, h)
        obs, reward, terminated, truncated, _ = env.step(action)
        done = terminated | truncated
        if reset:
            h = torch.where(done.unsqueeze(-1), torch.zeros_like(h), h)
        actions.append(action)
        rewards.append(reward)
        ends.append(done)
    return actions, rewards, ends, h


def test_evaluate_carries_the_state_of_a_recurrent_actor() -> None:
    """Returns and lengths of `evaluate` are those of the loop by hand (one episode per env); the state matters:
    the same actor given the reset state at every step flies otherwise."""
    env = _env()
    actor = _actor(env)
    result = evaluate(env, actor, seed=SEED)
    _, rewards, ends, _ = _by_hand(env, actor, env.max_episode_steps)
    returns, lengths = torch.zeros(env.num_envs), torch.zeros(env.num_envs, dtype=torch.long)
    running = torch.ones(env.num_envs, dtype=torch.bool)
    for reward, done in zip(rewards, ends, strict=True):
        returns += reward * running
        lengths += running.long()
        running &= ~done
    assert result.returns == tuple(returns.tolist()) and result.lengths == tuple(lengths.tolist())
    assert 1 < len(set(result.lengths)) and max(result.lengths) == env.max_episode_steps  # crashes, each its own
    amnesic = evaluate(env, lambda obs: actor(obs, actor.initial_state(obs.shape[0]))[0], seed=SEED)
    assert amnesic.returns != result.returns


def test_stepper_resets_each_env_at_its_own_episode_start() -> None:
    """Over three episodes' worth of steps, envs ending at different steps (the env resets them one by one): the
    stepper's actions are the hand loop's, which resets each env's state at its own episode start; a loop that
    never resets the state differs, so the comparison sees the reset."""
    env = _env()
    actor = _actor(env)
    steps = 3 * env.max_episode_steps
    expected, _, ends, _ = _by_hand(env, actor, steps)
    never_reset, _, _, _ = _by_hand(env, actor, steps, reset=False)
    assert any(bool(done.any()) and not bool(done.all()) for done in ends)  # some envs end while others run on
    obs, stepper = env.reset(seed=SEED), PolicyStepper(actor, env.num_envs)
    with torch.no_grad():
        for t in range(steps):
            action = stepper(obs)
            assert torch.equal(action, expected[t]), t
            obs, _, terminated, truncated, _ = env.step(action)
            stepper.restart(terminated | truncated)
            ended = terminated | truncated
            assert torch.equal(stepper.state[ended], torch.zeros(int(ended.sum()), actor.state_size))
    assert not all(torch.equal(a, b) for a, b in zip(expected, never_reset, strict=True))


def test_stepper_of_an_actor_without_memory_is_the_actor() -> None:
    env = _env(4)
    obs = env.reset(seed=SEED)
    stepper = PolicyStepper(lambda o: o[:, :4] * 0.5, env.num_envs)
    stepper.restart(torch.ones(env.num_envs, dtype=torch.bool))  # nothing to reset
    assert torch.equal(stepper(obs), obs[:, :4] * 0.5) and not hasattr(stepper, "state")


def test_stepper_refuses_steps_before_start_and_a_batch_of_another_size() -> None:
    env = _env(4)
    actor = _actor(env)
    with pytest.raises(RuntimeError, match="start"):
        PolicyStepper(actor)(env.reset(seed=SEED))
    with pytest.raises(ValueError, match="obs for 4 envs, state for 3"):
        PolicyStepper(actor, 3)(env.reset(seed=SEED))


@pytest.mark.parametrize("backend", ["eager", "fx"])
def test_captured_evaluation_of_a_recurrent_actor_is_evaluate(backend: str) -> None:
    """The gate's captured evaluation (replayed with Python frozen: "fx", as a CUDA graph is) carries the state
    inside the block: `evaluate`'s results, call after call, also after the actor's weights changed in place; its
    last state is the hand loop's (each env's reset where its episode ended, inside the block)."""
    env = _env(config=SHORT)
    actor = _actor(env)
    captured = CapturedEvaluation(env, actor, backend)  # type: ignore[arg-type]
    last = actor.head[-1]
    assert isinstance(last, nn.Linear)
    for _ in range(3):
        expected = evaluate(env, actor, seed=SEED)
        assert 1 < len(set(expected.lengths))
        got = captured(SEED)
        assert (got.returns, got.lengths, got.successes) == (expected.returns, expected.lengths, expected.successes)
        *_, last_state = _by_hand(env, actor, env.max_episode_steps)
        assert bool((last_state != 0).any(-1).any()) and bool((last_state == 0).all(-1).any())  # restarted envs run on
        torch.testing.assert_close(captured.policy.state, last_state, rtol=0.0, atol=1e-6)
        with torch.no_grad():
            last.weight.mul_(1.5)
    assert captured.captured.captured == (backend == "fx")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")
def test_cuda_graph_evaluation_of_a_recurrent_actor_is_evaluate() -> None:
    """On a GPU: the gate's evaluation replayed as a CUDA graph (the GRU's state carried inside it) gives the
    episodes of `evaluate` on the same device."""
    env = make("quadrotor/hover", num_envs=8, config=SHORT, seed=0, device="cuda")
    assert isinstance(env, QuadrotorHover)
    actor = _actor(env).to("cuda")
    captured = CapturedEvaluation(env, actor, "cuda")
    for _ in range(3):
        expected = evaluate(env, actor, seed=SEED)
        got = captured(SEED)
        assert (got.lengths, got.successes) == (expected.lengths, expected.successes)
        torch.testing.assert_close(torch.tensor(got.returns), torch.tensor(expected.returns), rtol=1e-5, atol=1e-4)
    assert captured.captured.captured
