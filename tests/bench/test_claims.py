"""bench/claims.py: every claim's README text is in README.md, and each reader turns its benchmark's JSON into a
verdict that fails when the figure does not hold."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).parents[2] / "bench"


def _claims() -> ModuleType:
    sys.path.insert(0, str(BENCH))  # claims.py imports bench/machine.py as its scripts do
    try:
        spec = importlib.util.spec_from_file_location("claims", BENCH / "claims.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["claims"] = module
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


def test_every_claim_is_quoted_in_the_readme_and_names_a_bench_script() -> None:
    claims = _claims()
    readme = (BENCH.parent / "README.md").read_text(encoding="utf-8")
    for claim in claims.CLAIMS:
        assert claims.quoted_in_readme(claim, readme), claim.name
        for arguments in (claim.short, claim.long):
            assert arguments is None or (BENCH / arguments.split()[0]).is_file(), claim.name
    unquoted = dataclasses.replace(claims.CLAIMS[0], quote="a median of 1.0 s over 99 seeds")
    assert not claims.quoted_in_readme(unquoted, readme)


def test_readers_hold_and_differ_on_the_benchmarks_own_json() -> None:
    claims = _claims()
    contention = {"table": [{"config": "default", "ratio": 0.88}, {"config": "spin-all", "ratio": 0.33}]}
    assert claims.read_contention(contention)[1]
    contention["table"][0]["ratio"] = 0.5
    assert not claims.read_contention(contention)[1]
    naming = {"stamp_gaps": {"named": True}, "old_stamps": {"named": True}}
    soak = {"summary": {"violations": 0, "unanswered": 0, "sim_seconds": 3600.0, "rss_growth_percent": 0.2}}
    soak["summary"]["naming"] = naming
    assert claims.read_soak(soak)[1]
    naming["old_stamps"]["named"] = False
    assert not claims.read_soak(soak)[1]
    kill = {"kills": [{"resumed_from": 3}, {"resumed_from": 7}], "max_seconds_lost": 0.9, "save_every_s": 1.0}
    assert claims.read_kill(kill)[1]
    kill["kills"].append({"resumed_from": None})
    assert not claims.read_kill(kill)[1]
    gate = {"summary": {"ppo": {"median_training_seconds": 12.0, "reached": 1, "runs": 1}}}
    assert claims.read_hover_gate(gate)[1]
    gate["summary"]["ppo"]["median_training_seconds"] = claims.HOVER_GATE_SECONDS * claims.TIME_SLACK + 1
    assert not claims.read_hover_gate(gate)[1]
    robust = {
        "runs": {
            "a": {"rows": {"all held-out ranges together": 0.97}},
            "b": {"rows": {"all held-out ranges together": 0.85}},
        }
    }
    measured, holds = claims.read_robust(robust)
    assert not holds and "1 of 2" in measured


def test_the_motor_reader_holds_on_the_committed_run_and_differs_when_a_policy_trips() -> None:
    claims = _claims()
    data = json.loads((BENCH / "results" / "electric_motor.json").read_text())
    assert claims.read_motor(data)[1]
    data["comparison"]["every speed"]["PPO seed 1 (to target)"]["trips"] = 1
    assert not claims.read_motor(data)[1]


@pytest.mark.parametrize("name", ["contention", "kill_resume", "hover_gate", "electric_motor"])
def test_readers_parse_the_committed_results(name: str) -> None:
    claims = _claims()
    reader = {
        "contention": claims.read_contention,
        "kill_resume": claims.read_kill,
        "hover_gate": claims.read_hover_gate,
        "electric_motor": claims.read_motor,
    }
    file = {"hover_gate": "hover_gate_46"}.get(name, name)  # the hover benchmark of issue 46, in its new format
    measured, holds = reader[name](json.loads((BENCH / "results" / f"{file}.json").read_text()))
    assert isinstance(measured, str) and measured and isinstance(holds, bool)
