"""The safety box for learning on a robot: workspace violations named with source, value and limit; the action box;
and the profile sections that define them, refused with the key named."""

from __future__ import annotations

import copy
import math
from importlib import resources
from typing import Any

import numpy as np
import pytest
import yaml

from robo_rl.real.profile import ActionBound, ProfileError, WorkspaceLimit, load_profile, profile_from_dict
from robo_rl.real.safety_box import SafetyBox, limit_violation, limits_hold

CAR_FIELDS = {"track.lateral_offset": 0.1, "track.heading_error": -0.2, "odom.twist.twist.linear.x": 2.0}
NORM = ("state.end_effector_to_target.x", "state.end_effector_to_target.y", "state.end_effector_to_target.z")


def _car_box() -> SafetyBox:
    return SafetyBox.from_profile(load_profile("rc_car"))


def test_car_within_its_box_has_no_violation() -> None:
    assert _car_box().violations(CAR_FIELDS) == []


def test_violations_name_source_value_and_limit() -> None:
    fields = CAR_FIELDS | {"track.lateral_offset": 0.71, "odom.twist.twist.linear.x": 6.5}
    assert _car_box().violations(fields) == [
        "track.lateral_offset = 0.71 outside [-0.6, 0.6]",
        "odom.twist.twist.linear.x = 6.5 outside [-2, 6]",
    ]


def test_limits_are_inclusive() -> None:
    assert _car_box().violations(CAR_FIELDS | {"track.lateral_offset": -0.6, "track.heading_error": 1.2}) == []
    assert _car_box().violations(CAR_FIELDS | {"track.heading_error": -1.2000001}) == [
        "track.heading_error = -1.2 outside [-1.2, 1.2]"
    ]


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_values_are_violations(value: float) -> None:
    violations = _car_box().violations(CAR_FIELDS | {"track.lateral_offset": value})
    assert violations == [f"track.lateral_offset = {value} is not finite"]


def test_missing_fields_are_not_violations() -> None:
    assert _car_box().violations({}) == []
    assert _car_box().violations({"track.lateral_offset": 0.9}) == ["track.lateral_offset = 0.9 outside [-0.6, 0.6]"]


def test_a_norm_limit_reads_all_its_fields() -> None:
    limit = WorkspaceLimit(norm=NORM, high=1.25)
    label = f"|{', '.join(NORM)}|"
    assert limit_violation(limit, dict(zip(NORM, (0.6, 0.8, 0.0), strict=True))) == ""
    assert (
        limit_violation(limit, dict(zip(NORM, (1.0, 0.8, 0.0), strict=True)))
        == f"{label} = 1.28062 outside [-inf, 1.25]"
    )
    assert limit_violation(limit, dict(zip(NORM[:2], (3.0, 3.0), strict=True))) == ""
    nan_y = dict(zip(NORM, (0.1, math.nan, 0.1), strict=True))
    assert limit_violation(limit, nan_y) == "state.end_effector_to_target.y = nan is not finite"


def test_arm_box_holds_at_home_and_catches_a_target_in_millimetres() -> None:
    box = SafetyBox.from_profile(load_profile("arm"))
    home = {f"joint_states.position[{i}]": angle for i, angle in enumerate((0.0, 0.5, -1.0, 0.5))}
    home |= {f"joint_states.velocity[{i}]": 0.0 for i in range(4)} | dict(zip(NORM, (0.2, 0.1, 0.0), strict=True))
    assert box.violations(home) == []
    target_in_mm = home | dict(zip(NORM, (200.0, 100.0, 0.0), strict=True))
    assert (
        len(box.violations(target_in_mm)) == 1 and "= 223.607 outside [-inf, 1.25]" in box.violations(target_in_mm)[0]
    )
    assert box.violations(home | {"joint_states.position[2]": -2.7}) == [
        "joint_states.position[2] = -2.7 outside [-2.65, 2.65]"
    ]


def test_limits_hold_needs_every_field() -> None:
    limits = (WorkspaceLimit(source="a", low=0.0, high=1.0), WorkspaceLimit(source="b", high=0.0))
    assert limits_hold(limits, {"a": 0.5, "b": -3.0})
    assert not limits_hold(limits, {"a": 0.5})
    assert not limits_hold(limits, {"a": 0.5, "b": 0.1})
    assert limits_hold((), {})


def test_action_box_clips_only_its_actions() -> None:
    box = _car_box()  # steering, drive; drive within [-0.3, 0.6]
    clipped, changed = box.clip_action([0.95, 0.9])
    assert clipped.tolist() == [0.95, 0.6] and changed
    clipped, changed = box.clip_action(np.array([-1.0, -0.5]))
    assert clipped.tolist() == [-1.0, -0.3] and changed
    clipped, changed = box.clip_action([0.2, 0.6])
    assert clipped.tolist() == [0.2, 0.6] and not changed


def test_action_box_passes_nan_on_to_the_safety_filter() -> None:
    clipped, changed = _car_box().clip_action([math.nan, 0.1])
    assert math.isnan(clipped[0]) and clipped[1] == 0.1 and not changed
    with pytest.raises(ValueError, match=r"action shape \(3,\), expected \(2,\)"):
        _car_box().clip_action([0.0, 0.0, 0.0])


def test_a_profile_without_the_sections_has_a_box_that_never_acts() -> None:
    profile = load_profile("quadrotor_px4")
    assert profile.workspace == () and profile.action_box == () and profile.episode is None
    box = SafetyBox.from_profile(profile)
    assert box.violations({"odom.pose.pose.position.z": math.nan}) == []
    action = np.array([1e9, -1e9, 0.0, 0.5])
    clipped, changed = box.clip_action(action)
    assert clipped.tolist() == action.tolist() and not changed


def test_unknown_box_action_is_refused() -> None:
    profile = load_profile("rc_car")
    with pytest.raises(ValueError, match="action_box: unknown action 'brake'"):
        SafetyBox((), (ActionBound("brake", 0.0, 0.0),), profile.action_names)


# ------------------------------------------------------------------------------------------------ profile sections


def _bundled(name: str) -> dict[str, Any]:
    return yaml.safe_load(resources.files("robo_rl.real").joinpath("profiles", f"{name}.yaml").read_text())


def _edited(name: str, path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    data = copy.deepcopy(_bundled(name))
    target = data
    for key in path[:-1]:
        target = target[key]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return data


_DELETE = object()
_DRIVE_BOX = {"action": "drive", "low": 0, "high": 0}
_RECOVERY = ("episode", "recovery_actions")


@pytest.mark.parametrize(
    ("name", "path", "value", "message"),
    [
        ("rc_car", ("workspace", 0, "source"), "gps.x", "workspace[0].source: no input named 'gps'"),
        ("rc_car", ("workspace", 0, "source"), "track.offset", "workspace[0].source: 'track.offset': not one of the"),
        ("rc_car", ("workspace", 0, "source"), "previous_action[0].drive", "workspace[0].source: bad field"),
        ("rc_car", ("workspace", 0, "low"), 1.0, "workspace[0].low: must be <= high, got low=1.0 high=0.6"),
        ("rc_car", ("workspace", 0, "low"), "far", "workspace[0].low: expected float, got str 'far'"),
        ("rc_car", ("workspace", 1), {"source": "track.heading_error"}, "workspace[1].low: give low, high or both"),
        ("rc_car", ("workspace", 1, "norm"), ["track.heading_error"], "workspace[1].source: give either source or"),
        ("rc_car", ("workspace", 2, "hi"), 3.0, "workspace[2].hi: unknown key"),
        ("rc_car", ("workspace",), {"a": 1}, "workspace: expected a list, got dict"),
        ("rc_car", ("action_box", 0, "action"), "brake", "action_box[0].action: unknown action 'brake'"),
        ("rc_car", ("action_box", 0, "high"), 2.0, "action_box[0].low: must lie in the action's bounds [-1.0, 1.0]"),
        ("rc_car", ("action_box", 0, "low"), 0.1, "action_box[0].low: must contain the safe value 0.0"),
        ("rc_car", ("action_box", 0, "low"), 0.7, "action_box[0].low: must be <= high"),
        ("rc_car", ("action_box", 0, "high"), _DELETE, "action_box[0].high: missing required key"),
        ("rc_car", ("action_box",), [_DRIVE_BOX, _DRIVE_BOX], "action_box: duplicate names ['drive']"),
        ("rc_car", ("episode",), 3, "episode: expected a mapping, got int"),
        ("rc_car", ("episode", "reset"), "magic", "episode.reset: must be one of ('scripted', 'human', 'recovery')"),
        ("rc_car", ("episode", "reset"), "human", "episode.recovery_actions: needed by, and only by, reset: recovery"),
        ("rc_car", ("episode", "success"), "vibes", "episode.success: must be one of"),
        ("rc_car", ("episode", "max_steps"), 1.5, "episode.max_steps: expected int, got float 1.5"),
        ("rc_car", ("episode", "max_steps"), True, "episode.max_steps: expected int, got bool True"),
        ("rc_car", ("episode", "max_steps"), -1, "episode.max_steps: must be >= 0, got -1"),
        ("rc_car", ("episode", "max_recoveries"), 0, "episode.max_recoveries: must be >= 1, got 0"),
        ("rc_car", ("episode", "speed"), 3, "episode.speed: unknown key"),
        ("rc_car", ("episode", "prompt"), "", "episode.prompt: must not be empty"),
        ("rc_car", _RECOVERY, [], "episode.recovery_actions: needed by, and only by, reset: recovery"),
        ("rc_car", (*_RECOVERY, 0, "steps"), 0, "episode.recovery_actions[0].steps: must be >= 1, got 0"),
        ("rc_car", (*_RECOVERY, 0, "action", "brake"), 1.0, "episode.recovery_actions[0].action.brake: unknown"),
        ("rc_car", (*_RECOVERY, 0, "action", "drive"), 3.0, "episode.recovery_actions[0].action.drive: must lie in"),
        (
            "rc_car",
            (*_RECOVERY, 0, "action", "drive"),
            "back",
            "episode.recovery_actions[0].action.drive: expected float, got str 'back'",
        ),
        (
            "rc_car",
            (*_RECOVERY, 0, "action", "drive"),
            math.nan,
            "episode.recovery_actions[0].action: drive: must be finite",
        ),
        (
            "rc_car",
            (*_RECOVERY, 0, "action"),
            [0.0, -0.2],
            "episode.recovery_actions[0].action: expected a mapping of names to values, got list",
        ),
        ("rc_car", ("episode", "reset_actions"), [{"steps": 1}], "episode.reset_actions: needed by, and only by"),
        ("rc_car", ("workspace",), [], "episode.reset: a recovery needs a workspace to check"),
        (
            "rc_car",
            ("episode", "reset_done"),
            [{"source": "gps.x", "high": 1}],
            "episode.reset_done[0].source: no input named",
        ),
        ("arm", ("workspace", 0, "source"), "joint_states.position[4]", "workspace[0].source: joint index 4 but 4"),
        ("arm", ("workspace", 8, "norm"), ["state.x", "state.x"], "workspace[8].norm: duplicate names ['state.x']"),
        ("arm", ("workspace", 8, "norm"), "state.x", "workspace[8].norm: expected a list, got str"),
        ("arm", ("episode", "reset"), "human", "episode.reset_actions: needed by, and only by, reset: scripted"),
        (
            "arm",
            ("episode", "reset_actions", 0, "steps"),
            2.5,
            "episode.reset_actions[0].steps: expected int, got float 2.5",
        ),
        (
            "arm",
            ("episode", "reset_done", 4, "norm", 0),
            "joint_states.velocity[7]",
            "episode.reset_done[4].norm: joint index",
        ),
    ],
)
def test_bad_sections_name_the_key(name: str, path: tuple[Any, ...], value: Any, message: str) -> None:
    with pytest.raises(ProfileError) as info:
        profile_from_dict(_edited(name, path, value), "robot.yaml")
    assert str(info.value).startswith(f"robot.yaml: {message}"), str(info.value)


def test_human_reset_checks_no_reset_done() -> None:
    data = _edited("arm", ("episode", "reset"), "human")
    del data["episode"]["reset_actions"]
    with pytest.raises(ProfileError, match=r"^robot.yaml: episode.reset_done: a human reset ends with the button$"):
        profile_from_dict(data, "robot.yaml")
    del data["episode"]["reset_done"]
    assert profile_from_dict(data).episode is not None


def test_bundled_sections_load_as_written() -> None:
    car, arm = load_profile("rc_car"), load_profile("arm")
    assert [(w.source, w.low, w.high) for w in car.workspace][:2] == [
        ("track.lateral_offset", -0.6, 0.6),
        ("track.heading_error", -1.2, 1.2),
    ]
    assert car.episode is not None and car.episode.reset == "recovery" and car.episode.max_steps == 1500
    assert car.episode.recovery_actions[0].action == (("steering", 0.0), ("drive", -0.2))
    assert arm.episode is not None and arm.episode.reset == "scripted" and arm.episode.max_steps == 150
    assert arm.episode.reset_actions[0].action == ()  # the safe command: the home pose
    assert arm.safe_action == (0.0, 0.5, -1.0, 0.5)


def test_without_inputs_sources_must_come_from_an_observed_input() -> None:
    data = _bundled("rc_car")
    del data["inputs"]
    data["workspace"] = [{"source": "track.anything", "high": 1.0}]
    assert profile_from_dict(data).workspace[0].source == "track.anything"  # no labels known: any track field
    data["workspace"] = [{"source": "gps.x", "high": 1.0}]
    with pytest.raises(ProfileError, match=r"^robot.yaml: workspace\[0\].source: no input named 'gps'$"):
        profile_from_dict(data, "robot.yaml")
