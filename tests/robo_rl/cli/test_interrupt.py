"""The first Ctrl-C of `robo-rl train` asks to stop before the next iteration; a second one stops at once."""

from __future__ import annotations

import os
import signal
import time

import pytest
import torch

from robo_rl.api.interrupt import REPEAT_WINDOW_S, stop_at_iteration_end


def _sigint_and_wait(pause_s: float = 0.05) -> None:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(pause_s)  # the handler runs at the next bytecode boundary of the main thread


def test_the_first_ctrl_c_is_a_request_the_second_a_keyboard_interrupt(
    capfd: pytest.CaptureFixture[str],
) -> None:
    before = signal.getsignal(signal.SIGINT)
    with stop_at_iteration_end() as interrupt:
        assert not interrupt.is_requested()
        _sigint_and_wait(REPEAT_WINDOW_S)  # no exception here, mid-iteration
        assert interrupt.is_requested()
        with pytest.raises(KeyboardInterrupt):
            _sigint_and_wait()
    assert signal.getsignal(signal.SIGINT) is before
    assert "stopping at the next safe point" in capfd.readouterr().err


@pytest.mark.parametrize("preset", ["pendulum_ppo", "pendulum_sac"])
def test_a_runner_asked_to_stop_ends_before_its_next_iteration(preset: str) -> None:
    from dataclasses import replace

    from robo_rl.api.configs import preset as load_preset
    from robo_rl.build import build_runner
    from robo_rl.sim import make

    base = load_preset(preset)
    section = replace(getattr(base, base.loop_section), loop=replace(base.loop, max_iterations=50))
    cfg = replace(base, task=replace(base.task, num_envs=8), **{base.loop_section: section})
    runner = build_runner(cfg, make)
    seen: list[int] = []

    def on_iteration(metrics: dict) -> None:
        seen.append(metrics["iteration"])

    runner.stop_requested = lambda: len(seen) >= 3
    result = runner.learn(on_iteration)
    assert seen == [1, 2, 3] and result.iterations == 3


def test_an_ignored_sigint_stays_ignored() -> None:
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with stop_at_iteration_end() as interrupt:
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            _sigint_and_wait()
            assert not interrupt.is_requested()
    finally:
        signal.signal(signal.SIGINT, before)


def test_sigterm_asks_to_stop_as_the_first_ctrl_c_does_and_only_a_second_ctrl_c_stops_at_once() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with stop_at_iteration_end() as interrupt:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)
        assert interrupt.is_requested() and interrupt.signum == signal.SIGTERM
        _sigint_and_wait()  # the same request, passed on by a launcher: ignored
        time.sleep(REPEAT_WINDOW_S)
        os.kill(os.getpid(), signal.SIGTERM)  # a launcher's escalation: the stop under way goes on
        time.sleep(0.05)
        with pytest.raises(KeyboardInterrupt):
            _sigint_and_wait()
    assert signal.getsignal(signal.SIGTERM) is before


def test_an_on_policy_rollout_stops_before_its_next_step() -> None:
    """A stop request in the middle of a long rollout ends training there: no update, the iteration not counted,
    the env steps taken counted (the envs stay where they are, as a checkpoint saved now records them)."""
    from dataclasses import replace

    from robo_rl.api.configs import preset as load_preset
    from robo_rl.build import build_runner
    from robo_rl.runners.on_policy import OnPolicyRunner
    from robo_rl.sim import make

    base = load_preset("pendulum_ppo")
    cfg = replace(base, task=replace(base.task, num_envs=4))
    runner = build_runner(cfg, make)
    assert isinstance(runner, OnPolicyRunner) and runner.storage.num_steps > 5
    checks = iter(range(1000))
    runner.stop_requested = lambda: next(checks) > 5  # the loop's check, then one per step: 5 steps are taken
    before = {name: p.detach().clone() for name, p in runner.policy.named_parameters()}
    result = runner.learn()
    assert result.iterations == 0 and runner.env_steps == 5 * 4
    assert runner.storage.step == 0
    assert all(torch.equal(before[name], p) for name, p in runner.policy.named_parameters())
