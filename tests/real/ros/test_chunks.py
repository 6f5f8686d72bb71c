"""policy_node runs a chunked policy's timestamped actions (scenario_chunks.py): at 100 Hz from 25 Hz
odometry, every command is the due step of the current chunk; without odometry, the safe command."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

HORIZON, FIRST, STEP = 6, -0.5, 0.1
PWM_HALF = 32767.5  # Crazyflie: PWM = 32767.5 + 32767.5 × action


def _step_of(pwm: float) -> float:
    return (pwm / PWM_HALF - 1.0 - FIRST) / STEP


def test_the_node_sends_each_chunks_due_step_and_the_safe_command_without_observations(
    ros_scenario: Callable[..., dict[str, Any]], step_chunks_policy: Callable[..., Path]
) -> None:
    policy = step_chunks_policy("quadrotor_crazyflie", HORIZON, FIRST, STEP)
    result = ros_scenario("scenario_chunks.py", str(policy), timeout=180.0)
    assert result["ready"]
    fed = [c for c in result["commands"] if result["start"] + 0.3 < c[0] < result["stop"]]
    assert len(fed) > 100  # about 170 at 100 Hz
    steps = [_step_of(c[1][0]) for c in fed]
    assert all(c[1] == [c[1][0]] * 4 for c in fed)
    assert all(abs(s - round(s)) < 1e-3 and 0 <= round(s) < HORIZON for s in steps), steps  # no safe command
    indices = [round(s) for s in steps]
    # Each chunk (one per 40 ms observation) runs through its steps in order; a newer one takes over after 4.
    onward = sum(b == a + 1 for a, b in itertools.pairwise(indices)) / (len(indices) - 1)
    assert onward > 0.6, indices
    assert len(set(indices)) >= 3  # which steps depends on the phase of odometry and timer
    after = [c for c in result["commands"] if c[0] > result["stop"] + 0.1]
    assert after and all(c[1] == [0.0] * 4 for c in after)  # motors off: the safe command
    warnings = [s for s in result["statuses"] if s[0] > result["stop"] and "stale observation" in s[2]]
    assert warnings, result["statuses"][-3:]
    assert warnings[-1][3]["action_chunk"] == str(HORIZON) and warnings[-1][3]["chunk_execution"] == "receding"
