"""Frame parameters: the bundled YAML frames load as package data, and bad files fail with clear errors."""

from __future__ import annotations

import dataclasses
import math
from importlib import resources
from pathlib import Path

import pytest

from robo_rl.config import ConfigError
from robo_rl.sim.quadrotor.params import QuadrotorParams, frame_names, load_frame, load_params

CRAZYFLIE_YAML = """
mass: 0.027
arm_length: 0.04
inertia: [3.85e-6, 3.85e-6, 5.9675e-6]
thrust_coefficient: 2.88e-8
torque_coefficient: 1.72e-10
motor_time_constant: 0.05
max_rotor_speed: 2272.6
"""


def test_bundled_frames_are_package_data() -> None:
    folder = resources.files("robo_rl.sim.quadrotor") / "frames"
    assert sorted(p.name for p in folder.iterdir() if p.name.endswith(".yaml")) == [
        "crazyflie_2_1.yaml",
        "px4_x500.yaml",
        "racing_250mm.yaml",
    ]
    assert frame_names() == ["crazyflie_2_1", "px4_x500", "racing_250mm"]


@pytest.mark.parametrize("name", ["crazyflie_2_1", "px4_x500", "racing_250mm"])
def test_every_bundled_frame_can_hover(name: str) -> None:
    params = load_frame(name)
    assert params.name == name
    assert 1.3 < params.thrust_to_weight < 10
    assert params.min_rotor_speed < params.hover_rotor_speed < params.max_rotor_speed
    assert 0.003 < params.torque_coefficient / params.thrust_coefficient < 0.03  # torque/thrust ratio in m


def test_crazyflie_matches_the_specified_numbers() -> None:
    cf = load_frame("crazyflie_2_1")
    assert cf.mass == 0.027 and cf.inertia == (3.85e-6, 3.85e-6, 5.9675e-6)
    assert cf.motor_time_constant == 0.05 and cf.gravity == 9.81
    for x, y in cf.rotor_positions:
        assert abs(x) == pytest.approx(0.028) and abs(y) == pytest.approx(0.028)
    assert cf.thrust_to_weight == pytest.approx(2.2, abs=0.1)
    assert cf.torque_coefficient / cf.thrust_coefficient == pytest.approx(0.006, abs=1e-4)
    # Hover: 4 c_t w^2 = m g.
    assert 4 * cf.thrust_coefficient * cf.hover_rotor_speed**2 == pytest.approx(cf.mass * 9.81, rel=1e-12)


def test_rotor_layout_is_x_with_diagonal_pairs_spinning_alike() -> None:
    cf = load_frame("crazyflie_2_1")
    d = cf.arm_length / math.sqrt(2)
    expected = ((d, -d), (-d, -d), (-d, d), (d, d))  # front-right, back-right, back-left, front-left
    for position, want in zip(cf.rotor_positions, expected, strict=True):
        assert position == pytest.approx(want)
    assert cf.spin_signs == (1, -1, 1, -1)


def test_load_params_reads_a_file_and_names_it_after_the_stem(tmp_path: Path) -> None:
    path = tmp_path / "my_quad.yaml"
    path.write_text(CRAZYFLIE_YAML)
    params = load_params(path)
    assert params.name == "my_quad" and params.min_rotor_speed == 0.0
    assert params.rotor_spin == ("ccw", "cw", "ccw", "cw")
    assert load_frame(str(path)) == params


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ("mass_typo: 1.0\n", "mass_typo"),
        ("mass: heavy\n", "mass"),
        ("inertia: [1.0, 2.0]\n", "inertia"),
        ("max_rotor_speed: 100.0\n", "cannot hover"),
        ("rotor_spin: [ccw, ccw, cw, cw]\n", "diagonal"),
        ("mass: -1.0\n", "positive"),
    ],
)
def test_bad_files_raise_errors_naming_file_and_key(tmp_path: Path, edit: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    key = edit.split(":")[0]
    lines = [line for line in CRAZYFLIE_YAML.splitlines() if not line.startswith(f"{key}:")]
    path.write_text("\n".join(lines) + "\n" + edit)
    with pytest.raises(ConfigError, match=message) as error:
        load_params(path)
    assert str(path) in str(error.value)


def test_missing_key_and_unknown_frame_are_errors(tmp_path: Path) -> None:
    path = tmp_path / "partial.yaml"
    path.write_text("mass: 0.5\n")
    with pytest.raises(ConfigError, match="missing required key"):
        load_params(path)
    with pytest.raises(ValueError, match="crazyflie_2_1"):
        load_frame("no_such_frame")


def test_params_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        load_frame("crazyflie_2_1").mass = 1.0  # type: ignore[misc]
    with pytest.raises(ValueError, match="rotor_spin"):
        QuadrotorParams("x", 1.0, 0.1, (1.0, 1.0, 1.0), 1e-5, 1e-7, 0.02, 1000.0, rotor_spin=("up",) * 4)
