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
_CART = (
    "name: cart\nconfig: {}\nspecs:\n  obs: {names: [x], low: [0], high: [1], units: [m]}\n"
    "  action: {names: [f], low: [-1], high: [1], units: [N]}\n  dt: 0.02\n  critic_obs_dim: 1\n"
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


def test_a_camera_tasks_record_holds_its_cameras(tmp_path: Path) -> None:
    """task_specs of double_integrator/pixels (one 24 x 24 grey camera, 60 degrees) reads back with its camera; a
    state task's record has none and writes no key."""
    from robo_rl.envs import task_specs
    from robo_rl.sim.double_integrator.pixels import PixelDoubleIntegrator

    env = PixelDoubleIntegrator(1)
    record = TaskRecord("double_integrator/pixels", {}, task_specs(env))
    write_task_record(tmp_path, record)
    read = read_task_record(tmp_path)
    assert read == record and read is not None
    (camera,) = read.specs.cameras
    assert (camera.name, camera.height, camera.width, camera.channels) == ("rail", 24, 24, 1)
    assert camera == env.image_specs[0]
    assert "cameras" not in SPECS.to_dict() and TaskSpecs.from_dict(SPECS.to_dict()).cameras == ()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("- cart\n", "not a mapping"),
        ("name: cart\nconfig: {}\n", "missing key 'specs'"),
        ("name: cart\nconfig: [1]\nspecs: {}\n", "config is not a mapping"),
        ("name: cart\nconfig: {}\nspecs: {obs: {names: [a], low: [0, 1], high: [1], units: ['']}}\n", "differ"),
        (_CART + "  cameras: {name: front}\n", "cameras must be a list"),
        (_CART + "  cameras: [{name: front, height: 8, width: 8, dtype: float32}]\n", "dtype must be"),
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
