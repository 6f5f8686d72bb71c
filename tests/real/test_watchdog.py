"""Watchdog on an injected clock."""

from __future__ import annotations

import math

import pytest

from robo_rl.real.watchdog import Watchdog

from .conftest import FakeClock


def test_stale_before_the_first_observation(clock: FakeClock) -> None:
    watchdog = Watchdog(0.05, clock)
    assert watchdog.stale() and math.isinf(watchdog.age())


def test_stale_only_after_the_timeout(clock: FakeClock) -> None:
    watchdog = Watchdog(0.05, clock)
    watchdog.feed()
    clock.advance(0.05)
    assert not watchdog.stale() and watchdog.age() == pytest.approx(0.05)
    clock.advance(1e-6)
    assert watchdog.stale()
    watchdog.feed()
    assert not watchdog.stale()


def test_timeout_must_be_positive(clock: FakeClock) -> None:
    with pytest.raises(ValueError, match="timeout: must be > 0, got 0"):
        Watchdog(0.0, clock)
