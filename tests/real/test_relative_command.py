"""`relative_to` command fields (a step from a measured value, mujoco/peg_insert's joint-angle steps): the profile
arm_peg, the forward and inverse maps, their validation, and the safety filter on absolute targets."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml

from robo_rl.real.command import command_actions, command_fields, measured_actions, relative_actions
from robo_rl.real.fault import Fault, FaultKind
from robo_rl.real.profile import ActionLimit, ProfileError, held_joint_sources, load_profile, profile_from_dict
from robo_rl.real.safety import SafetyFilter

PROFILE = load_profile("arm_peg")
SPEC = PROFILE.commands[0]
NAMES = PROFILE.action_names
MEASURED = {f"joint_states.position[{i}]": value for i, value in enumerate((0.1, 0.7, -1.5, -0.8))}
STALE = Fault(FaultKind.STALE)


def _data() -> dict:
    from importlib import resources

    text = resources.files("robo_rl.real").joinpath("profiles", "arm_peg.yaml").read_text()
    return yaml.safe_load(text)


def test_the_peg_profile_matches_its_task_and_steps_from_the_measured_joints() -> None:
    assert PROFILE.task == "mujoco/peg_insert" and PROFILE.dt == pytest.approx(0.1)
    assert PROFILE.safe_command == "hold_measured" and PROFILE.episode is not None
    assert PROFILE.episode.max_steps == 150
    assert relative_actions(SPEC, NAMES) == (True,) * 4
    assert [a.high for a in PROFILE.actions] == [0.05] * 4 and [a.safe for a in PROFILE.actions] == [0.0] * 4
    sources = held_joint_sources(PROFILE, SPEC)
    assert [f.relative_to for f in SPEC.fields] == [source for source, _ in sources]


def test_forward_and_inverse_maps_on_hand_worked_numbers() -> None:
    step = np.array([0.05, -0.02, 0.0, 0.01])
    fields = command_fields(SPEC, NAMES, step, MEASURED)
    # positions = measured + step: 0.1 + 0.05, 0.7 - 0.02, -1.5 + 0, -0.8 + 0.01
    expected = [0.15, 0.68, -1.5, -0.79]
    assert [fields[f"points[0].positions[{i}]"] for i in range(4)] == pytest.approx(expected)
    back = command_actions(SPEC, fields, MEASURED)
    assert [back[name] for name in NAMES] == pytest.approx(step.tolist())
    # the measured pose as targets: what the safety filter holds and rate limits
    held = held_joint_sources(PROFILE, SPEC)
    assert measured_actions(SPEC, NAMES, held, MEASURED) == pytest.approx([0.1, 0.7, -1.5, -0.8])
    assert command_actions(SPEC, fields) == {}  # nothing measured: no step can be read back


def test_a_scaled_relative_field_steps_in_its_action_units() -> None:
    data = _data()
    data["commands"][0]["fields"][0]["scale"] = 0.5
    spec = profile_from_dict(data).commands[0]
    fields = command_fields(spec, NAMES, np.array([0.04, 0.0, 0.0, 0.0]), MEASURED)
    assert fields["points[0].positions[0]"] == pytest.approx(0.1 + 0.5 * 0.04)
    assert command_actions(spec, fields, MEASURED)["yaw_angle_step"] == pytest.approx(0.04)


def test_a_relative_field_without_its_measured_value_says_so() -> None:
    with pytest.raises(ValueError, match=r"relative to 'joint_states.position\[0\]', which is not measured"):
        command_fields(SPEC, NAMES, np.zeros(4), {})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"relative_to": "odom.pose.x"}, r"commands\[0\]\.fields\[0\]\.relative_to: no input named 'odom'"),
        ({"relative_to": "state.nope"}, r"relative_to: 'state.nope': not one of the labels of input 'state'"),
        ({"relative_to": "joint_states.position[9]"}, r"relative_to: joint index 9 but 4 joints listed"),
        ({"relative_to": "previous_action[0].yaw_angle_step"}, r"relative_to: bad source"),
        ({"relative_to": "joint_states.position[1]"}, r"relative_to 'joint_states.position\[1\]' is not joint 'yaw'"),
        ({"offset": 0.1}, r"relative_to: a relative field moves from its source: offset must stay unset"),
    ],
)
def test_bad_relative_fields_are_refused_naming_the_field(change: dict, message: str) -> None:
    data = _data()
    data["commands"][0]["fields"][0].update(change)
    with pytest.raises(ProfileError, match=message):
        profile_from_dict(data, "arm_peg.yaml")


def test_a_relative_field_needs_a_held_measured_pose() -> None:
    data = copy.deepcopy(_data())
    data["safe_command"] = "fixed"
    with pytest.raises(ProfileError, match="a relative field needs safe_command: hold_measured"):
        profile_from_dict(data, "arm_peg.yaml")


# ------------------------------------------------------------------------------- the safety filter on targets

STEPS = (
    ActionLimit("a", "rad", low=-0.05, high=0.05, safe=0.0, rate_limit=1.0),
    ActionLimit("b", "rad", low=-0.05, high=0.05, safe=0.0, rate_limit=1.0),
)
DT = 0.1  # targets move at most 0.1 rad per period


def _filter() -> SafetyFilter:
    return SafetyFilter(STEPS, DT, hold_measured=True, relative=(True, True))


def test_steps_are_clipped_and_their_targets_rate_limited_from_the_previous_target() -> None:
    safety = _filter()
    assert safety(np.array([0.01, 0.0])).withheld  # nothing measured: nothing to step from
    safety.measure([1.0, -1.0])
    first = safety(np.array([0.2, -0.03]))
    np.testing.assert_allclose(first.command, [0.05, -0.03])  # clipped to the step bounds
    assert first.clipped and not first.rate_limited
    np.testing.assert_allclose(safety.target(first.command), [1.05, -1.03])
    safety.measure([0.9, -1.0])  # the arm went the other way (pushed): 0.15 rad behind its target
    second = safety(np.array([-0.05, 0.0]))
    # target 0.85 is 0.2 from the previous 1.05: rate limited to 0.95, a step of +0.05 from 0.9
    np.testing.assert_allclose(safety.target(second.command), [0.95, -1.0])
    np.testing.assert_allclose(second.command, [0.05, 0.0])
    assert second.rate_limited


def test_the_step_bounds_win_over_the_rate_limit() -> None:
    safety = _filter()
    safety.measure([0.0, 0.0])
    safety(np.array([0.05, 0.0]))  # target 0.05
    safety.measure([-0.3, 0.0])  # far from its target: the rate-limited target 0.0 lies 0.3 from the arm
    result = safety(np.array([0.05, 0.0]))
    np.testing.assert_allclose(result.command, [0.05, 0.0])  # at most one step from where the arm is
    np.testing.assert_allclose(safety.target(result.command), [-0.25, 0.0])


def test_the_safe_command_holds_the_absolute_pose_not_the_newest_measurement() -> None:
    safety = _filter()
    safety.measure([0.5, -0.2])
    safety(np.array([0.02, 0.0]))
    safety.measure([0.52, -0.2])
    held = safety.safe_command(STALE)
    np.testing.assert_allclose(held.command, [0.0, 0.0])  # the pose measured when the hold began
    np.testing.assert_allclose(safety.target(held.command), [0.52, -0.2])
    safety.measure([0.6, -0.1])  # the arm is pushed: the hold does not follow it
    again = safety.safe_command(STALE)
    np.testing.assert_allclose(safety.target(again.command), [0.52, -0.2])
    np.testing.assert_allclose(again.command, [-0.08, -0.1])
    # held from its last command (0.52, -0.2), the duration is one period: the hold never jumps
    assert again.duration == pytest.approx(DT)
    resumed = safety(np.array([0.0, 0.0]))  # after a hold the rate limits restart from the measured pose
    np.testing.assert_allclose(safety.target(resumed.command), [0.6, -0.1])


def test_relative_actions_need_a_held_pose() -> None:
    with pytest.raises(ValueError, match="need hold_measured"):
        SafetyFilter(STEPS, DT, relative=(True, False))
