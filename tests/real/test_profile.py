"""Robot profiles: bundled files load, and malformed YAML stops with a ProfileError naming the field."""

from __future__ import annotations

import copy
import math
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from robo_rl.real.profile import (
    ProfileError,
    RobotProfile,
    bundled_profiles,
    load_profile,
    profile_from_dict,
    source_input,
)


def _minimal() -> dict[str, Any]:
    return {
        "name": "car",
        "kind": "rc_car",
        "task": "rc_car/race",
        "dt": 0.02,
        "dt_tolerance": 0.0001,
        "staleness_timeout": 0.1,
        "observations": [
            {"name": "vx", "source": "odom.twist.twist.linear.x", "unit": "m/s", "source_unit": "km/h"},
            {"name": "previous_drive_0", "source": "previous_action[0].drive", "unit": "1"},
        ],
        "actions": [{"name": "drive", "unit": "1", "low": -1.0, "high": 1.0, "safe": 0.0, "rate_limit": 5.0}],
        "commands": [{"type": "geometry_msgs/msg/Twist", "topic": "cmd_vel", "fields": [
            {"action": "drive", "field": "linear.x", "scale": 5.0}
        ]}],
        "inputs": [
            {"name": "odom", "type": "nav_msgs/msg/Odometry"},
            {"name": "state", "derive": "quadrotor_state", "source": "odom"},
        ],
    }  # fmt: skip


def test_profile_without_inputs_is_valid_for_the_core() -> None:
    data = _minimal()
    del data["inputs"]
    assert profile_from_dict(data).inputs == ()


def test_every_bundled_observation_source_has_an_input() -> None:
    for name in bundled_profiles():
        profile = load_profile(name)
        inputs = {i.name for i in profile.inputs}
        assert {source_input(o.source) for o in profile.observations} - inputs <= {"previous_action"}, name


def test_bundled_profiles_load() -> None:
    quadrotors = ("quadrotor_crazyflie", "quadrotor_crazyswarm2", "quadrotor_px4")
    assert bundled_profiles() == ("arm", "arm_peg", "arm_peg_pixels", *quadrotors, "rc_car")
    kinds = {name: load_profile(name).kind for name in bundled_profiles()}
    arms = dict.fromkeys(("arm", "arm_peg", "arm_peg_pixels"), "arm")
    assert kinds == arms | {"rc_car": "rc_car"} | dict.fromkeys(quadrotors, "quadrotor")


def test_rc_car_prefers_ackermann_then_twist() -> None:
    types = [c.type for c in load_profile("rc_car").commands]
    assert types == ["ackermann_msgs/msg/AckermannDriveStamped", "geometry_msgs/msg/Twist"]


def test_minimal_profile_fields_and_unit_factor() -> None:
    profile = profile_from_dict(_minimal())
    assert isinstance(profile, RobotProfile)
    assert profile.obs_names == ("vx", "previous_drive_0")
    assert profile.observations[0].factor == pytest.approx(1 / 3.6)
    assert profile.safe_action == (0.0,)
    assert profile.commands[0].package == "geometry_msgs"


def test_load_from_path_and_infinite_rate_limit(tmp_path: Path) -> None:
    data = _minimal()
    data["actions"][0]["rate_limit"] = math.inf  # written as YAML's .inf
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(data))
    assert math.isinf(load_profile(path).actions[0].rate_limit)


def _set(data: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    data = copy.deepcopy(data)
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return data


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("dt",), -0.01, "car.yaml: dt: must be > 0, got -0.01"),
        (("kind",), "boat", "car.yaml: kind: must be one of"),
        (("dt",), "fast", "car.yaml: dt: expected float, got str 'fast'"),
        (("actions", 0, "rate_limit"), 0.0, "car.yaml: actions[0].rate_limit: must be > 0"),
        (("actions", 0, "safe"), 2.0, "car.yaml: actions[0].safe: must lie in [-1.0, 1.0], got 2.0"),
        (("actions", 0, "low"), 3.0, "car.yaml: actions[0].low: must be <= high"),
        (("actions", 0, "spped"), 3.0, "car.yaml: actions[0].spped: unknown key"),
        (("observations", 0, "source_unit"), "furlong", "car.yaml: observations[0].source_unit: no conversion"),
        (("observations", 0, "source"), "odom..x", "car.yaml: observations[0].source: bad field 'odom..x'"),
        (("observations", 1, "source"), "previous_action[0].brake", "car.yaml: observations[1].source: unknown"),
        (("commands", 0, "fields", 0, "action"), "brake", "car.yaml: commands[0].fields[0].action: unknown action"),
        (("commands", 0, "type"), "Twist", "car.yaml: commands[0].type: expected pkg/msg/Name, got 'Twist'"),
        (("observations",), {"a": 1}, "car.yaml: observations: expected a list, got dict"),
        (("observations", 1, "name"), "vx", "car.yaml: observations: duplicate names ['vx']"),
        (("inputs", 0, "name"), "imu", "car.yaml: observations[0].source: no input named 'odom'"),
        (("inputs", 0, "type"), "Odometry", "car.yaml: inputs[0].type: expected pkg/msg/Name, got 'Odometry'"),
        (("inputs", 0, "labels"), "x", "car.yaml: inputs[0].labels: expected a list, got str"),
        (("inputs", 0, "labels"), ["a b"], "car.yaml: inputs[0].labels: bad label 'a b'"),
        (("inputs", 1), {"name": "s", "derive": "magic", "source": "odom"}, "car.yaml: inputs[1].derive: must be one"),
        (("inputs", 1), {"name": "s", "derive": "quadrotor_state", "source": "gps"}, "car.yaml: inputs[1].source: no"),
        (("inputs", 1), {"name": "odom", "type": "std_msgs/msg/Bool"}, "car.yaml: inputs: duplicate names ['odom']"),
        (("task_params",), ["action_mode"], "car.yaml: task_params: expected key=value, got 'action_mode'"),
        (("task_params",), "action_mode=ctbr", "car.yaml: task_params: expected a list, got str"),
    ],
)
def test_malformed_profile_names_the_field(path: tuple[Any, ...], value: Any, message: str) -> None:
    with pytest.raises(ProfileError) as info:
        profile_from_dict(_set(_minimal(), path, value), "car.yaml")
    assert str(info.value).startswith(message)


def test_missing_key_and_unknown_profile() -> None:
    data = _minimal()
    del data["staleness_timeout"]
    with pytest.raises(ProfileError, match=r"^car.yaml: staleness_timeout: missing required key$"):
        profile_from_dict(data, "car.yaml")
    with pytest.raises(ProfileError, match=r"absent\.yaml: no such profile file"):
        load_profile(Path("absent.yaml"))
    bundled = "arm, arm_peg, arm_peg_pixels, quadrotor_crazyflie"
    with pytest.raises(ProfileError, match=f"unknown profile 'boat' \\(bundled: {bundled}"):
        load_profile("boat")


def test_invalid_yaml_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("name: [unclosed\n")
    with pytest.raises(ProfileError, match=r"^bad.yaml: invalid YAML: ") as info:
        load_profile(path)
    assert "\n" not in str(info.value)


_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=True), st.text(max_size=8), st.just([])
)
_PATHS = [
    ("name",), ("kind",), ("dt",), ("observations",), ("observations", 0), ("observations", 0, "source"),
    ("observations", 0, "unit"), ("actions", 0, "low"), ("actions", 0, "safe"), ("actions", 0, "rate_limit"),
    ("commands", 0, "fields"), ("commands", 0, "fields", 0, "scale"), ("commands", 0, "topic"), ("extra",),
]  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(_PATHS), _SCALARS), min_size=1, max_size=3))
def test_fuzzed_profiles_give_a_profile_or_a_profile_error(edits: list[tuple[tuple[Any, ...], Any]]) -> None:
    data: Any = _minimal()
    for path, value in edits:
        try:
            data = _set(data, path, value)
        except (TypeError, KeyError, IndexError):
            continue  # an earlier edit removed the container this path reaches into
    try:
        profile_from_dict(data, "fuzz.yaml")
    except ProfileError as err:
        assert str(err).startswith("fuzz.yaml: ") and "\n" not in str(err)


_YAML_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.one_of(st.text(max_size=6), st.integers()), inner, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["observations", "actions", "commands", "name", "dt", 3]), _YAML_VALUES)
def test_fuzzed_structures_give_a_profile_error(key: Any, value: Any) -> None:
    data = {**_minimal(), key: value}
    try:
        profile_from_dict(data, "fuzz.yaml")
    except ProfileError as err:
        assert str(err).startswith("fuzz.yaml: ") and "\n" not in str(err)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab:-[]{}'\" \n\t1.&*!|>%@")), max_size=60))
def test_fuzzed_yaml_text_gives_a_profile_error(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.yaml"
        path.write_text(text)
        with pytest.raises(ProfileError, match=r"^fuzz.yaml: ") as info:
            load_profile(path)
    assert "\n" not in str(info.value)


def test_an_integral_source_reads_its_field_and_has_its_unit_times_seconds() -> None:
    """`integral(FIELD)`: the running integral of FIELD (robo_rl.real.assembler); it reads FIELD's input, converts
    FIELD's unit, and its own unit is FIELD's times s."""
    data = _minimal()
    integral = {"name": "vx_integral", "source": "integral(odom.twist.twist.linear.x)", "unit": "m/s*s"}
    data["observations"].append({**integral, "source_unit": "km/h"})
    observation = profile_from_dict(data).observations[-1]
    assert observation.field == "odom.twist.twist.linear.x" and observation.field_unit == "m/s"
    assert observation.factor == pytest.approx(1 / 3.6)
    for change, message in (
        ({"unit": "m/s"}, r"observations\[2\]\.unit: an integral's unit is its field's times s"),
        ({"source": "integral(imu.yaw)"}, r"observations\[2\]\.source: no input named 'imu'"),
        (
            {"source": "integral(previous_action[0].drive)"},
            r"observations\[2\]\.source: no input named 'previous_action'",
        ),
    ):
        bad = _minimal()
        bad["observations"].append({**integral, **change})
        with pytest.raises(ProfileError, match=message):
            profile_from_dict(bad, "car.yaml")
