"""Car parameters: the bundled YAML loads as package data, derived quantities follow their formulas, and bad
files fail with clear errors."""

from __future__ import annotations

import dataclasses
import math
from importlib import resources
from pathlib import Path

import pytest
import yaml

from robo_rl.config import ConfigError
from robo_rl.sim.rc_car.params import CarParams, TireParams, car_names, load_car, load_car_file


def test_bundled_car_is_package_data_and_loads_by_name() -> None:
    folder = resources.files("robo_rl.sim.rc_car") / "cars"
    assert [p.name for p in folder.iterdir() if p.name.endswith(".yaml")] == ["f1tenth.yaml"]
    assert car_names() == ["f1tenth"]
    car = load_car("f1tenth")
    raw = yaml.safe_load((folder / "f1tenth.yaml").read_text())
    assert car.mass == raw["mass"] and car.front_tire == TireParams(**raw["front_tire"])
    assert car.wheelbase == pytest.approx(raw["lf"] + raw["lr"])


def test_derived_quantities_follow_their_definitions() -> None:
    car = load_car("f1tenth")
    g = car.gravity
    assert car.front_load + car.rear_load == pytest.approx(car.mass * g)
    assert car.front_load * car.lf == pytest.approx(car.rear_load * car.lr)  # moments about the CoG balance
    front = car.cornering_stiffness[0]
    assert front == pytest.approx(car.front_tire.b * car.front_tire.c * car.friction * car.front_load)
    assert car.understeer_gradient > 0  # the rear axle is stiffer per unit load: the car understeers
    # At the top speed the drive force equals drag plus rolling resistance.
    v = car.top_speed
    drive = car.max_motor_force * (1 - v / car.max_speed)
    assert drive == pytest.approx(car.drag_coefficient * v**2 + car.rolling_resistance * car.mass * g)
    no_drag = dataclasses.replace(car, drag_coefficient=0.0)
    assert no_drag.top_speed == pytest.approx(
        car.max_speed * (1 - car.rolling_resistance * car.mass * g / car.max_motor_force)
    )


def test_a_yaml_path_loads_with_its_stem_as_name(tmp_path: Path) -> None:
    data = yaml.safe_load((resources.files("robo_rl.sim.rc_car") / "cars" / "f1tenth.yaml").read_text())
    del data["name"]
    data["mass"] = 5.0
    path = tmp_path / "heavy_car.yaml"
    path.write_text(yaml.safe_dump(data))
    car = load_car(str(path))
    assert car.name == "heavy_car" and car.mass == 5.0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"masss": 3.0}, "masss: unknown key"),
        ({"mass": -1.0}, "mass"),
        ({"front_tire": {"b": 3.0, "c": 2.5}}, "TireParams.c"),
        ({"max_steer": 2.0}, "max_steer"),
        ({"rolling_resistance": 1.0}, "cannot move"),
        ({"latency": "slow"}, "latency"),
    ],
)
def test_bad_car_files_name_the_problem(tmp_path: Path, change: dict, message: str) -> None:
    data = yaml.safe_load((resources.files("robo_rl.sim.rc_car") / "cars" / "f1tenth.yaml").read_text())
    data.update(change)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=message) as error:
        load_car_file(path)
    assert str(path) in str(error.value)


def test_missing_key_and_unknown_name_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "partial.yaml"
    path.write_text("mass: 3.0\n")
    with pytest.raises(ConfigError, match="missing required key"):
        load_car_file(path)
    with pytest.raises(ValueError, match="bundled cars"):
        load_car("nonexistent_car")


def test_params_reject_invalid_values_directly() -> None:
    car = load_car("f1tenth")
    with pytest.raises(ValueError, match="yaw_inertia"):
        dataclasses.replace(car, yaw_inertia=0.0)
    with pytest.raises(ValueError, match="drag_coefficient"):
        dataclasses.replace(car, drag_coefficient=math.nan)
    assert isinstance(dataclasses.replace(car, latency=0.0), CarParams)
