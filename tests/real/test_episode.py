"""Episodes on hardware: phases, each reset mode tick by tick, recovery falling back to the operator, buttons,
step limits and e-stops. Real `EpisodeManager`, a fake clock only."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from robo_rl.real.episode import EpisodeManager, EpisodeOutcome
from robo_rl.real.profile import EpisodeSettings, ResetMove, WorkspaceLimit, load_profile
from robo_rl.real.safety_box import SafetyBox

from .conftest import FakeClock

NAMES = ("steering", "drive")
SAFE = np.array([0.0, 0.0])
OUT = ["track.lateral_offset = 0.8 outside [-0.6, 0.6]"]
SCRIPT = (ResetMove(2, (("drive", 0.5),)), ResetMove(1, (("steering", -1.0),)))
RECOVERY = (ResetMove(2, (("steering", 0.0), ("drive", -0.2))), ResetMove(1, (("drive", 0.0),)))
HOME = (WorkspaceLimit(source="joint", low=-0.05, high=0.05),)


def _manager(clock: FakeClock, **settings: object) -> EpisodeManager:
    return EpisodeManager(EpisodeSettings(**settings), NAMES, clock)  # type: ignore[arg-type]


def _ready(clock: FakeClock, **settings: object) -> EpisodeManager:
    """A manager whose first reset the operator has confirmed (human and recovery start that way)."""
    manager = _manager(clock, **settings)
    manager.button("reset")
    assert manager.phase == "ready"
    return manager


def _tick(manager: EpisodeManager, safe: np.ndarray = SAFE, violations: list[str] | None = None) -> list[float]:
    """One reset period: the command sent, then the (empty) fields read back."""
    action = manager.reset_action(safe)
    manager.after_reset_step({}, violations or [])
    return action.tolist()


# ------------------------------------------------------------------------------------------------ scripted


def test_scripted_reset_tick_by_tick(clock: FakeClock) -> None:
    manager = _manager(clock, reset="scripted", reset_actions=SCRIPT, max_steps=3)
    assert manager.phase == "resetting" and not manager.waiting_for_operator and manager.prompt == ""
    assert manager.reset_action(np.array([0.1, 0.2])).tolist() == [0.1, 0.5]  # unnamed actions: the safe value
    manager.after_reset_step({})
    assert manager.phase == "resetting"
    assert _tick(manager) == [0.0, 0.5]
    assert manager.phase == "resetting" and not manager.reset_done()
    assert _tick(manager) == [-1.0, 0.0]
    assert manager.phase == "ready" and manager.reset_done()
    manager.begin()
    assert [manager.after_step(False, False) for _ in range(2)] == [None, None]
    end = manager.after_step(False, False)
    assert end is not None and (end.reason, end.steps, end.truncated, end.terminated) == ("max_steps", 3, True, False)
    assert manager.phase == "resetting"
    assert [_tick(manager) for _ in range(3)] == [[0.0, 0.5], [0.0, 0.5], [-1.0, 0.0]]  # the script again
    assert manager.phase == "ready"


def test_scripted_reset_ends_early_when_reset_done_holds(clock: FakeClock) -> None:
    manager = _manager(clock, reset="scripted", reset_actions=(ResetMove(5),), reset_done=HOME)
    manager.reset_action(SAFE)
    manager.after_reset_step({"joint": 0.4})
    assert manager.phase == "resetting"
    manager.reset_action(SAFE)
    manager.after_reset_step({})  # missing: not known to be home
    assert manager.phase == "resetting"
    manager.reset_action(SAFE)
    manager.after_reset_step({"joint": 0.04})
    assert manager.phase == "ready" and manager.fallbacks == 0


def test_scripted_reset_that_misses_reset_done_asks_the_operator(clock: FakeClock) -> None:
    manager = _manager(clock, reset="scripted", reset_actions=(ResetMove(2, (("drive", 0.3),)),), reset_done=HOME)
    for _ in range(2):
        assert manager.reset_action(SAFE).tolist() == [0.0, 0.3]
        manager.after_reset_step({"joint": 0.5})
    assert manager.phase == "resetting" and manager.waiting_for_operator and manager.fallbacks == 1
    assert manager.prompt == (
        "the scripted reset ended before reset_done held: put the robot in its start state, then press reset"
    )
    assert manager.reset_action(np.array([0.1, -0.1])).tolist() == [0.1, -0.1]  # the safe command while waiting
    manager.after_reset_step({"joint": 0.0})  # only the button ends it now
    assert manager.phase == "resetting"
    manager.button("reset")
    assert manager.phase == "ready" and manager.human_resets == 1 and manager.prompt == ""


def test_arm_profile_resets_to_its_home_pose(clock: FakeClock) -> None:
    profile = load_profile("arm")
    manager = EpisodeManager.from_profile(profile, clock)
    safe = np.array(profile.safe_action)
    home = {f"joint_states.position[{i}]": angle for i, angle in enumerate(profile.safe_action)}
    still = {f"joint_states.velocity[{i}]": 0.0 for i in range(4)}
    assert manager.reset_action(safe).tolist() == [0.0, 0.5, -1.0, 0.5]
    manager.after_reset_step(home | still | {"joint_states.velocity[1]": 0.3})  # at home but still moving
    assert manager.phase == "resetting"
    manager.reset_action(safe)
    manager.after_reset_step(home | still)
    assert manager.phase == "ready"
    manager.begin()
    ends = [manager.after_step(False, False) for _ in range(150)]
    assert ends[:-1] == [None] * 149 and ends[-1] is not None and ends[-1].reason == "max_steps"


# ------------------------------------------------------------------------------------------------ human


def test_human_reset_waits_for_the_button(clock: FakeClock) -> None:
    manager = _manager(clock, reset="human", prompt="put it back")
    assert manager.waiting_for_operator and manager.prompt == "start: put it back"
    for _ in range(3):
        assert _tick(manager, np.array([0.2, 0.0])) == [0.2, 0.0]
    assert manager.phase == "resetting" and manager.human_resets == 0
    manager.button("reset")
    assert manager.phase == "ready" and manager.human_resets == 1
    manager.begin()
    assert manager.after_step(False, False) is None
    manager.button("reset")  # ends the episode at the next step, then waits for the operator's reset again
    assert manager.phase == "running"
    end = manager.after_step(False, False)
    assert end is not None and (end.reason, end.truncated, end.steps) == ("reset", True, 2)
    assert manager.prompt == "episode ended (reset): put it back"
    manager.button("reset")
    assert manager.phase == "ready" and manager.human_resets == 2


def test_no_episode_section_means_human_resets_and_no_step_limit(clock: FakeClock) -> None:
    manager = EpisodeManager.from_profile(load_profile("quadrotor_crazyflie"), clock)
    assert manager.settings == EpisodeSettings() and manager.waiting_for_operator
    manager.button("reset")
    manager.begin()
    assert all(manager.after_step(False, False) is None for _ in range(5000))
    end = manager.after_step(False, True)
    assert end is not None and end.reason == "truncated" and end.steps == 5001


# ------------------------------------------------------------------------------------------------ recovery


def test_recovery_after_leaving_the_box_tick_by_tick(clock: FakeClock) -> None:
    manager = _ready(clock, reset="recovery", recovery_actions=RECOVERY)
    manager.begin()
    end = manager.after_step(False, False, OUT)
    assert end is not None and (end.reason, end.terminated, end.truncated) == ("workspace", True, False)
    assert end.violations == tuple(OUT) and manager.recoveries == 1
    assert _tick(manager, violations=OUT) == [0.0, -0.2]  # the box is not checked before the script ends
    assert _tick(manager, violations=OUT) == [0.0, -0.2]
    assert manager.phase == "resetting"
    assert _tick(manager) == [0.0, 0.0]
    assert manager.phase == "ready" and manager.recoveries == 1 and manager.fallbacks == 0


def test_recovery_falls_back_to_the_operator_after_max_recoveries(clock: FakeClock) -> None:
    manager = _ready(clock, reset="recovery", recovery_actions=RECOVERY, max_recoveries=2, prompt="fix it")
    manager.begin()
    manager.after_step(False, False, OUT)
    first = [_tick(manager, violations=OUT) for _ in range(3)]
    assert manager.phase == "resetting" and manager.recoveries == 2 and not manager.waiting_for_operator
    second = [_tick(manager, violations=OUT) for _ in range(3)]
    assert first == second == [[0.0, -0.2], [0.0, -0.2], [0.0, 0.0]]
    assert manager.waiting_for_operator and manager.recoveries == 2 and manager.fallbacks == 1
    assert manager.prompt == f"2 recoveries failed ({OUT[0]}): fix it"
    assert _tick(manager, np.array([0.0, 0.0])) == [0.0, 0.0]
    manager.button("reset")
    assert manager.phase == "ready" and manager.human_resets == 2  # the start and this one


def test_recovery_counts_attempts_per_reset(clock: FakeClock) -> None:
    manager = _ready(clock, reset="recovery", recovery_actions=RECOVERY, max_recoveries=2)
    for _ in range(3):  # each reset gets its own two tries
        manager.begin()
        manager.after_step(False, False, OUT)
        for _ in range(3):
            _tick(manager, violations=OUT)
        for _ in range(3):
            _tick(manager)
        assert manager.phase == "ready"
    assert manager.recoveries == 6 and manager.fallbacks == 0


def test_recovery_skips_the_script_after_a_truncation_in_the_box(clock: FakeClock) -> None:
    manager = _ready(clock, reset="recovery", recovery_actions=RECOVERY, max_steps=4)
    manager.begin()
    end = [manager.after_step(False, False) for _ in range(4)][-1]
    assert end is not None and end.reason == "max_steps"
    assert manager.phase == "ready" and manager.recoveries == 0
    manager.begin()
    manager.after_step(True, False)  # terminated in the box (e.g. stuck): recover anyway
    assert manager.phase == "resetting" and manager.recoveries == 1


def test_car_profile_recovers_from_its_own_box(clock: FakeClock) -> None:
    profile = load_profile("rc_car")
    box, manager = SafetyBox.from_profile(profile), EpisodeManager.from_profile(profile, clock)
    assert manager.waiting_for_operator and manager.prompt.startswith("start: put the car on the track")
    manager.button("reset")
    manager.begin()
    on_track = {"track.lateral_offset": 0.2, "track.heading_error": 0.0, "odom.twist.twist.linear.x": 2.0}
    assert manager.after_step(False, False, box.violations(on_track)) is None
    off = on_track | {"track.lateral_offset": -0.75}
    end = manager.after_step(False, False, box.violations(off))
    assert end is not None and end.violations == ("track.lateral_offset = -0.75 outside [-0.6, 0.6]",)
    actions = [manager.reset_action(np.zeros(2)).tolist() for _ in range(100)]
    assert actions == [[0.0, -0.2]] * 75 + [[0.0, 0.0]] * 25


# ------------------------------------------------------------------------------------------------ ends and buttons


def test_estop_ends_the_episode_and_asks_the_operator(clock: FakeClock) -> None:
    manager = _manager(clock, reset="scripted", reset_actions=SCRIPT)
    for _ in range(3):
        _tick(manager)
    manager.begin()
    end = manager.after_step(False, False, [], estopped=True)
    assert end is not None and (end.reason, end.truncated, end.terminated) == ("estop", True, False)
    assert manager.waiting_for_operator and manager.prompt.startswith("e-stop: ")
    assert manager.fallbacks == 0
    manager.button("reset")
    assert manager.phase == "ready"


def test_estop_during_a_scripted_reset_hands_it_to_the_operator(clock: FakeClock) -> None:
    manager = _manager(clock, reset="scripted", reset_actions=SCRIPT)
    manager.reset_action(SAFE)
    manager.after_reset_step({}, [], estopped=True)
    assert manager.waiting_for_operator and manager.fallbacks == 1
    assert manager.prompt.startswith("e-stop during the reset: ")


def test_end_reasons_and_their_precedence(clock: FakeClock) -> None:
    manager = _ready(clock)
    cases: list[tuple[dict[str, object], str, bool]] = [
        ({"terminated": True, "truncated": False}, "terminated", True),
        ({"terminated": False, "truncated": True}, "truncated", False),
        ({"terminated": True, "truncated": True, "violations": OUT}, "workspace", True),
        ({"terminated": True, "truncated": False, "violations": OUT, "estopped": True}, "estop", True),
    ]
    for kwargs, reason, terminated in cases:
        manager.begin()
        end = manager.after_step(**kwargs)  # type: ignore[arg-type]
        assert end is not None and (end.reason, end.terminated, end.truncated) == (reason, terminated, not terminated)
        manager.button("reset")
    assert manager.episodes == 4


@pytest.mark.parametrize(
    ("button", "reason", "success", "discarded", "terminated"),
    [
        ("success", "success", True, False, True),
        ("failure", "failure", False, False, True),
        ("discard", "discard", None, True, False),
        ("reset", "reset", None, False, False),
    ],
)
def test_buttons_while_running_end_the_episode_with_their_outcome(
    clock: FakeClock, button: str, reason: str, success: bool | None, discarded: bool, terminated: bool
) -> None:
    manager = _ready(clock)
    manager.begin()
    manager.after_step(False, False)
    manager.button(button)
    current = manager.outcome()
    assert current is not None and (current.success, current.discarded, current.reason) == (success, discarded, "")
    end = manager.after_step(False, False)
    assert end is not None and (end.reason, end.success, end.discarded) == (reason, success, discarded)
    assert (end.terminated, end.truncated, end.steps) == (terminated, not terminated, 2)
    assert manager.discarded == int(discarded) and manager.successes == int(success is True)


def test_buttons_after_the_end_apply_to_the_last_episode(clock: FakeClock) -> None:
    manager = _ready(clock)
    manager.begin()
    manager.after_step(False, True)
    manager.button("success")
    manager.button("discard")
    last = manager.outcome()
    assert last is not None and last.success is True and last.discarded and last.reason == "truncated"
    manager.button("failure")
    assert manager.history[0].success is False and manager.successes == 0 and manager.discarded == 1
    assert manager.phase == "resetting"  # only reset ends the operator's reset


def test_a_button_verdict_overrides_the_envs(clock: FakeClock) -> None:
    manager = _ready(clock)
    manager.begin()
    manager.after_step(False, False, success=True)
    assert manager.outcome() == EpisodeOutcome(0, clock.now, steps=1, success=True)
    manager.button("failure")
    end = manager.after_step(False, False, success=True)
    assert end is not None and end.success is False
    manager.button("reset")
    manager.begin()
    end = manager.after_step(True, False, success=False)
    assert end is not None and end.success is False and end.reason == "terminated"


def test_buttons_are_recorded_and_unknown_ones_refused(clock: FakeClock) -> None:
    manager = _manager(clock)
    manager.button("success")  # before any episode: recorded, nothing to apply it to
    assert manager.outcome() is None
    clock.advance(1.0)
    manager.button("reset")
    manager.begin()
    clock.advance(0.5)
    manager.button("discard")
    assert [(e.at, e.name, e.phase, e.episode) for e in manager.events] == [
        (100.0, "success", "resetting", None),
        (101.0, "reset", "resetting", None),
        (101.5, "discard", "running", 0),
    ]
    with pytest.raises(ValueError, match="unknown button 'stop' \\(buttons: success, failure, reset, discard\\)"):
        manager.button("stop")


def test_calls_out_of_phase_are_refused(clock: FakeClock) -> None:
    manager = _manager(clock)
    with pytest.raises(RuntimeError, match="phase is 'resetting', expected 'ready'"):
        manager.begin()
    with pytest.raises(RuntimeError, match="expected 'running'"):
        manager.after_step(False, False)
    manager.button("reset")
    manager.begin()
    with pytest.raises(RuntimeError, match="phase is 'running', expected 'resetting'"):
        manager.reset_action(SAFE)
    with pytest.raises(RuntimeError, match="expected 'resetting'"):
        manager.after_reset_step({})


def test_reset_action_checks_its_shape(clock: FakeClock) -> None:
    with pytest.raises(ValueError, match=r"safe action shape \(3,\), expected \(2,\)"):
        _manager(clock).reset_action(np.zeros(3))


def test_times_and_counters_follow_the_clock(clock: FakeClock) -> None:
    manager = _manager(clock, reset="scripted", reset_actions=(ResetMove(2),))
    clock.advance(0.04)
    for _ in range(2):
        _tick(manager)
    assert manager.reset_seconds == pytest.approx(0.04)
    start = clock.now
    manager.begin()
    clock.advance(1.5)
    end = manager.after_step(True, False)
    assert end is not None and (end.started_at, end.ended_at) == (start, start + 1.5)
    clock.advance(0.25)
    for _ in range(2):
        _tick(manager)
    assert manager.reset_seconds == pytest.approx(0.29)
    assert manager.episodes == 1 and len(manager.history) == 1
    manager.begin()
    running = manager.outcome()
    assert running is not None and running.index == 1 and not running.ended and math.isnan(running.ended_at)
    assert manager.episodes == 1 and len(manager.history) == 2
    assert dataclasses.replace(running, reason="x").ended
