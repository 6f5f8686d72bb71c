"""Recordings back as demonstrations (robo_rl.robot.bag_demos), on steps and rows built here: which steps become
transitions, where episodes end, what the operator drove. The bag reading itself runs in the ROS test
(tests/real/ros/test_robot_demos.py)."""

from __future__ import annotations

import numpy as np
import pytest

from robo_rl.real.profile import load_profile
from robo_rl.robot.bag_demos import Step, recorded_transitions, transitions

PROFILE = load_profile("rc_car")
DT = PROFILE.dt


def _fields(lateral: float = 0.0, speed: float = 2.0) -> dict[str, float]:
    return {
        "odom.twist.twist.linear.x": speed,
        "track.heading_error": 0.0,
        "track.lateral_offset": lateral,
        "track.half_width": 0.7,
    }


def _step(i: int, lateral: float = 0.0, intervened: bool = True, events: tuple[str, ...] = (), t: float | None = None):
    obs = np.full(len(PROFILE.observations), float(i), dtype=np.float32)
    action = np.array([0.1 * (i % 5), 0.3])
    return Step(i * DT if t is None else t, obs, action, _fields(lateral), intervened, list(events), False)


def test_consecutive_commands_become_transitions_with_the_profile_reward() -> None:
    found = transitions([_step(i) for i in range(6)], PROFILE)
    assert len(found) == 5 and found.episodes == 1 and found.intervened.all()
    assert np.allclose(found.obs[:, 0], range(5)) and np.allclose(found.next_obs[:, 0], range(1, 6))
    assert np.allclose(found.rewards, 2.0 * DT)  # rc_car progress: speed × cos(heading error) × dt
    assert not found.terminated.any() and not found.truncated.any()


def test_leaving_the_workspace_terminates_and_the_recovery_is_not_stored() -> None:
    steps = [_step(0), _step(1), _step(2, lateral=0.65), _step(3, lateral=0.65), _step(4), _step(5)]
    found = transitions(steps, PROFILE)
    assert found.terminated.tolist() == [False, True, False]  # 0→1, 1→2 (out), then 4→5
    assert found.episodes == 2


def test_a_discarded_episode_is_dropped_and_a_reset_truncates() -> None:
    steps = [_step(0), _step(1), _step(2, events=("discard",)), _step(3), _step(4, events=("reset",)), _step(5)]
    found = transitions(steps, PROFILE)
    assert np.allclose(found.obs[:, 0], [2, 3, 4]) and found.truncated.tolist() == [False, True, False]


def test_a_gap_in_the_commands_ends_the_episode_without_a_transition_across_it() -> None:
    steps = [_step(0), _step(1), _step(2, t=2 * DT + 1.0), _step(3, t=3 * DT + 1.0)]
    found = transitions(steps, PROFILE)
    assert np.allclose(found.obs[:, 0], [0, 2]) and found.episodes == 2


def test_only_the_operator_s_steps_unless_all_are_asked_for() -> None:
    steps = [_step(i, intervened=i < 3) for i in range(6)]
    assert len(transitions(steps, PROFILE)) == 3
    everything = transitions(steps, PROFILE, operator_only=False)
    assert len(everything) == 5 and everything.intervened.tolist() == [True, True, True, False, False]


def test_stale_observations_are_not_transitions() -> None:
    steps = [_step(i) for i in range(5)]
    steps[2].obs = None
    found = transitions(steps, PROFILE)
    assert np.allclose(found.obs[:, 0], [0, 3])


def test_the_trainer_s_transition_rows_are_taken_as_they_are() -> None:
    n, a = len(PROFILE.observations), len(PROFILE.actions)
    rows = []
    for i in range(4):
        flags = [float(i == 3), 0.0, float(i != 1), float(i != 2)]  # terminated, truncated, intervened, valid
        rows.append([i] * n + [0.5, -0.3] + [0.1 * i] + [i + 1] * n + flags)
    found = recorded_transitions(np.asarray(rows, dtype=np.float64), PROFILE)
    assert np.allclose(found.obs[:, 0], [0, 3])  # step 1 not the operator's, step 2 invalid
    assert np.allclose(found.actions, [[0.5, -0.3]] * 2)  # the profile's bounds are [-1, 1]: unchanged
    assert found.terminated.tolist() == [False, True] and found.episodes == 1
    assert len(recorded_transitions(np.asarray(rows), PROFILE, operator_only=False)) == 3
    assert a == 2


def test_an_empty_result_cannot_be_saved(tmp_path) -> None:
    from robo_rl.robot.bag_demos import save_bag_demos

    with pytest.raises(ValueError, match="no transition"):
        save_bag_demos(tmp_path / "x.npz", transitions([], PROFILE), PROFILE, "bag=x")
