"""policy_node runs a chunked policy's timestamped actions (scenario_chunks.py): a 100 Hz loop from 25 Hz odometry
sends chunk steps (or the safe command, when a late observation left the chunk spent); without odometry, the safe
command. What is asserted holds at any machine speed; which step is due when runs on stepped time in
tests/real/test_chunks.py (the receding horizon's due step, its execute steps, a spent chunk)."""

from __future__ import annotations

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
    result = ros_scenario("scenario_chunks.py", str(policy), timeout=300.0)
    assert result["ready"]
    fed = [c for c in result["commands"] if result["start"] < c[0] < result["stop"]]
    assert all(c[1] == [c[1][0]] * 4 for c in fed)
    steps = [_step_of(c[1][0]) for c in fed if c[1] != [0.0] * 4]
    # every command is a step of a chunk or the safe command, most of them steps (the policy's chunks arrive)
    assert all(abs(s - round(s)) < 1e-3 and 0 <= round(s) < HORIZON for s in steps), steps
    assert len(steps) > len(fed) // 2, [round(s) for s in steps]
    indices = [round(s) for s in steps]
    assert max(indices) >= 1  # the loop runs on through a chunk's later steps between observations
    # odometry stopped: the stale warning, and from then on nothing but the safe command (motors off)
    warnings = [s for s in result["statuses"] if s[0] > result["stop"] and "stale observation" in s[2]]
    assert warnings, result["statuses"][-3:]
    after = [c for c in result["commands"] if c[0] > warnings[0][0]]
    assert len(after) >= 30 and all(c[1] == [0.0] * 4 for c in after), after[-5:]
    assert warnings[-1][3]["action_chunk"] == str(HORIZON) and warnings[-1][3]["chunk_execution"] == "receding"
