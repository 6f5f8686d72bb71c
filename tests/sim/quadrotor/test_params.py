"""Frame parameters: the bundled YAML frames load as package data, the identified Crazyflie has L2F's numbers, and
bad files fail with clear errors."""

from __future__ import annotations

import dataclasses
import math
from importlib import resources
from pathlib import Path

import pytest

from robo_rl.config import ConfigError
from robo_rl.sim.quadrotor.params import QuadrotorParams, frame_names, load_frame, load_params

BUNDLED = ["asctec_hummingbird", "crazyflie_2_1", "crazyflie_2_1_bare_2023", "px4_x500", "racing_250mm"]
CRAZYFLIE_YAML = """
mass: 0.027
arm_length: 0.04
inertia: [3.85e-6, 3.85e-6, 5.9675e-6]
thrust_curve: [0.0, 0.0, 0.1488]
torque_to_thrust: 0.006
motor_rise_time_constant: 0.05
motor_fall_time_constant: 0.05
"""


def test_bundled_frames_are_package_data() -> None:
    folder = resources.files("robo_rl.sim.quadrotor") / "frames"
    assert sorted(p.name for p in folder.iterdir() if p.name.endswith(".yaml")) == [f"{n}.yaml" for n in BUNDLED]
    assert frame_names() == BUNDLED


@pytest.mark.parametrize("name", BUNDLED)
def test_every_bundled_frame_can_hover(name: str) -> None:
    params = load_frame(name)
    assert params.name == name
    assert 1.3 < params.thrust_to_weight < 10
    assert params.min_command < params.hover_command < params.max_command
    assert 4 * params.rotor_thrust(params.hover_command) == pytest.approx(params.weight, rel=1e-12)
    assert 0.003 < params.torque_to_thrust < 0.03  # torque/thrust ratio in m
    assert params.motor_rise_time_constant <= params.motor_fall_time_constant


def test_crazyflie_has_the_identified_l2f_numbers() -> None:
    cf = load_frame("crazyflie_2_1")
    assert cf.mass == 0.0306 and cf.gravity == 9.81
    assert cf.inertia == (9.416556729130406e-06, 9.644051701582312e-06, 1.745951732253285e-05)
    assert cf.thrust_curve == (0.00352526, 0.01437313, 0.09223048) and cf.torque_to_thrust == 0.004665
    assert cf.motor_rise_time_constant == pytest.approx(0.0554545, abs=1e-7)
    assert cf.motor_fall_time_constant == pytest.approx(0.2493939, abs=1e-7)
    assert (cf.min_command, cf.max_command, cf.linear_drag) == (0.0, 1.0, (0.0, 0.0, 0.0))
    for x, y in cf.rotor_positions:
        assert abs(x) == pytest.approx(0.028) and abs(y) == pytest.approx(0.028)
    # By hand: thrust(1) = 0.00352526 + 0.01437313 + 0.09223048 = 0.11012887 N per rotor; weight 0.300186 N.
    assert cf.max_rotor_thrust == pytest.approx(0.11012887, rel=1e-12)
    assert cf.rotor_thrust(0.5) == pytest.approx(0.00352526 + 0.007186565 + 0.02305762, rel=1e-12)
    assert cf.thrust_to_weight == pytest.approx(4 * 0.11012887 / 0.300186, rel=1e-9)  # 1.4675
    # Hover: 0.09223048 u^2 + 0.01437313 u + 0.00352526 = 0.300186 / 4 = 0.0750465 N, so u = 0.80612.
    assert cf.hover_command == pytest.approx(0.80612, abs=1e-5)


def test_bare_2023_crazyflie_is_the_earlier_model() -> None:
    bare = load_frame("crazyflie_2_1_bare_2023")
    assert bare.mass == 0.027 and bare.inertia == (3.85e-6, 3.85e-6, 5.9675e-6)
    assert bare.thrust_curve == (0.0, 0.0, 0.14882867006400002)
    assert bare.motor_rise_time_constant == bare.motor_fall_time_constant == 0.05
    assert bare.torque_to_thrust == 0.005964552
    # 4 x 0.148829 / (0.027 x 9.81) = 2.2476; hover u = sqrt(0.0662175 / 0.148829) = 0.66702.
    assert bare.thrust_to_weight == pytest.approx(2.2476, abs=1e-4)
    assert bare.hover_command == pytest.approx(0.66702, abs=1e-5)


def test_rotor_layout_is_x_with_diagonal_pairs_spinning_alike() -> None:
    cf = load_frame("crazyflie_2_1")
    d = cf.arm_length / math.sqrt(2)
    expected = ((d, -d), (-d, -d), (-d, d), (d, d))  # front-right, back-right, back-left, front-left
    for position, want in zip(cf.rotor_positions, expected, strict=True):
        assert position == pytest.approx(want)
    assert cf.spin_signs == (1, -1, 1, -1)


def test_command_for_thrust_inverts_the_curve() -> None:
    for curve in ((0.0035, 0.0144, 0.0922), (0.0, 0.0, 0.15), (0.01, 0.2, 0.0)):
        frame = QuadrotorParams("x", 0.03, 0.04, (1e-5, 1e-5, 2e-5), curve, 0.005, 0.05, 0.1)
        for u in (0.1, 0.5, 0.9):
            assert frame.command_for_thrust(frame.rotor_thrust(u)) == pytest.approx(u, rel=1e-12)


def test_load_params_reads_a_file_and_names_it_after_the_stem(tmp_path: Path) -> None:
    path = tmp_path / "my_quad.yaml"
    path.write_text(CRAZYFLIE_YAML)
    params = load_params(path)
    assert params.name == "my_quad" and params.min_command == 0.0 and params.max_command == 1.0
    assert params.rotor_spin == ("ccw", "cw", "ccw", "cw")
    assert load_frame(str(path)) == params


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ("mass_typo: 1.0\n", "mass_typo"),
        ("mass: heavy\n", "mass"),
        ("inertia: [1.0, 2.0]\n", "inertia"),
        ("thrust_curve: [0.0, 0.0, 0.05]\n", "cannot hover"),
        ("thrust_curve: [0.0, -0.1, 0.3]\n", "thrust_curve"),
        ("rotor_spin: [ccw, ccw, cw, cw]\n", "diagonal"),
        ("mass: -1.0\n", "positive"),
        ("motor_fall_time_constant: 0.0\n", "positive"),
        ("linear_drag: [0.0, -0.1, 0.0]\n", "drag"),
        ("min_command: 0.5\nmax_command: 0.4\n", "min_command"),
    ],
)
def test_bad_files_raise_errors_naming_file_and_key(tmp_path: Path, edit: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    keys = {line.split(":")[0] for line in edit.splitlines()}
    lines = [line for line in CRAZYFLIE_YAML.splitlines() if line.split(":")[0] not in keys]
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
        QuadrotorParams("x", 1.0, 0.1, (1.0, 1.0, 1.0), (0.0, 0.0, 5.0), 0.01, 0.02, 0.02, rotor_spin=("up",) * 4)
