"""The task record: what a run's task resolved to, written beside its config and read back without a simulator."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from robo_rl.config import config_hash
from robo_rl.experiment import ExperimentConfig
from robo_rl.spaces import SpaceSpec
from robo_rl.task_record import TASK_FILE, TaskRecord, TaskSpecs, read_task_record, write_task_record

SPECS = TaskSpecs(
    SpaceSpec(("x", "v"), (-math.inf, -2.0), (math.inf, 2.0), ("m", "m/s")),
    SpaceSpec(("force",), (-1.5,), (1.5,), ("N",)),
    dt=0.02,
    critic_obs_dim=5,
)
RECORD = TaskRecord("cart", {"mass": 1.25, "randomization": {"mass": 0.2}, "names": ["a", "b"]}, SPECS)


def test_a_record_reads_back_as_written_infinite_bounds_included(tmp_path: Path) -> None:
    write_task_record(tmp_path, RECORD)
    assert read_task_record(tmp_path) == RECORD
    assert read_task_record(tmp_path / "elsewhere") is None  # a run made before records: None, not an error


def test_the_vehicle_card_is_recorded_and_a_record_without_one_reads_back(tmp_path: Path) -> None:
    carded = TaskRecord("cart", RECORD.config, replace(SPECS, vehicle='{"kind":"cart","mass":1.5}'))
    write_task_record(tmp_path, carded)
    assert read_task_record(tmp_path) == carded
    assert "vehicle" not in SPECS.to_dict() and TaskSpecs.from_dict(SPECS.to_dict()).vehicle is None


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("- cart\n", "not a mapping"),
        ("name: cart\nconfig: {}\n", "missing key 'specs'"),
        ("name: cart\nconfig: [1]\nspecs: {}\n", "config is not a mapping"),
        ("name: cart\nconfig: {}\nspecs: {obs: {names: [a], low: [0, 1], high: [1], units: ['']}}\n", "differ"),
    ],
)
def test_a_bad_record_is_a_value_error_saying_what_is_wrong(tmp_path: Path, text: str, problem: str) -> None:
    (tmp_path / TASK_FILE).write_text(text)
    with pytest.raises(ValueError, match=problem):
        read_task_record(tmp_path)


def test_the_config_hash_covers_the_resolved_task_config() -> None:
    cfg = ExperimentConfig()
    changed_default = {**RECORD.config, "mass": 1.5}
    assert config_hash(cfg, RECORD.config) != config_hash(cfg, changed_default)
    assert config_hash(cfg, RECORD.config) == config_hash(cfg, dict(RECORD.config))
    assert config_hash(cfg, RECORD.config) != config_hash(cfg)


def test_config_json_is_canonical() -> None:
    reordered = TaskRecord("cart", dict(reversed(list(RECORD.config.items()))), SPECS)
    assert reordered.config_json() == RECORD.config_json()
    assert RECORD.config_json().startswith('{"mass":1.25,"names":["a","b"]')
