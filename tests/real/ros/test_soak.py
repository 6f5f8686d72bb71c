"""The soak's short form: policy_node flying sim_bridge's quadrotor for 30 simulated seconds through a relay that
injects each of the ten fault kinds two or three times (scenarios/scenario_soak.py), every command checked as it
arrives.

Stepped simulated time (/clock, use_sim_time): nothing here depends on the machine's speed; the long form (60
simulated minutes, RSS growth) is `bench/soak.py` (docs/BENCHMARKS.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from .scenarios.soak_model import FAULT_KINDS, naming
from .scenarios.soak_policy import export_soak_policy

SIM_SECONDS = 30
EVERY = 100
"""Steps (10 ms) from one fault to the next: 29 faults in 30 s, each kind 2 or 3 times."""
SEED = 0


@pytest.fixture(scope="module")
def result(ros_scenario: Callable[..., dict[str, Any]], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    policy = export_soak_policy(tmp_path_factory.mktemp("soak") / "policy.onnx")
    return ros_scenario("scenario_soak.py", str(policy), str(SIM_SECONDS), str(SEED), str(EVERY), timeout=600.0)


def test_every_command_is_the_policys_answer_or_the_safe_command(result: dict[str, Any]) -> None:
    assert result["started"], (result["startup"], result["logs"])
    assert sorted(result["injected"]) == sorted(FAULT_KINDS) and min(result["injected"].values()) >= 2
    # The referee (scenarios/soak_model.py) checked every command: finite, within the rate limit, and the policy's
    # answer (onnxruntime on the odometry) to a message the node had to answer, or the safe command.
    assert result["violations"] == 0, result["violation_examples"]
    assert result["unanswered"] == 0
    expected = result["expected"]
    assert expected["policy_answers"] > 2000 and expected["safe_answers"] == result["injected"]["non_finite"]
    assert result["diagnostics"]["estopped"] == "False"


def test_every_fault_is_named_in_diagnostics(result: dict[str, Any]) -> None:
    assert result["started"], (result["startup"], result["logs"])
    diagnostics, expected = result["diagnostics"], result["expected"]
    table = naming(result["injected"], diagnostics)
    assert all(row["named"] for row in table.values()), table
    # The skips and gaps are what the referee counted. A message sent again because its answer did not come within
    # seconds (none was, in the runs so far) may add one skip: a copy, or one read on a clock that lagged.
    resends = result["resends"]
    for key in ("future_stamps", "old_stamps", "duplicate_messages", "reordered_messages", "stamp_gaps"):
        assert expected.get(key, 0) <= int(diagnostics[key]) <= expected.get(key, 0) + resends, (key, diagnostics)
    assert int(diagnostics["faults.non-finite"]) == result["injected"]["non_finite"]
    # Missed deadlines: the held messages handed over late; one fewer per delay if a best-effort /clock were lost.
    delays = result["injected"]["delay"]
    assert expected["missed_deadlines"] - delays <= int(diagnostics["missed_deadlines"]) <= expected["missed_deadlines"]


def test_sim_time_ran_the_whole_span(result: dict[str, Any]) -> None:
    assert result["sim_seconds"] >= SIM_SECONDS
    assert len(result["rss_kib"]) >= SIM_SECONDS and all(kib > 0 for _, kib in result["rss_kib"])
    assert result["exit_codes"] == {"sim_bridge": 0, "policy_node": 0}, result["logs"]
