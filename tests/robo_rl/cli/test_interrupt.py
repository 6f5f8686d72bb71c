"""The first Ctrl-C of `robo-rl train` asks to stop at the end of the iteration; a second one stops at once."""

from __future__ import annotations

import os
import signal
import time

import pytest

from robo_rl.cli.interrupt import StopRequested, stop_at_iteration_end


def _sigint_and_wait() -> None:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.05)  # the handler runs at the next bytecode boundary of the main thread


def test_the_first_ctrl_c_is_raised_at_the_iteration_end_the_second_at_once(
    capfd: pytest.CaptureFixture[str],
) -> None:
    before = signal.getsignal(signal.SIGINT)
    with stop_at_iteration_end() as interrupt:
        interrupt.check({})  # nothing pressed: the iteration goes on
        _sigint_and_wait()  # no exception here, mid-iteration
        assert interrupt.requested
        with pytest.raises(StopRequested):
            interrupt.check({})
        with pytest.raises(KeyboardInterrupt):
            _sigint_and_wait()
    assert signal.getsignal(signal.SIGINT) is before
    assert "stopping after this iteration" in capfd.readouterr().err
