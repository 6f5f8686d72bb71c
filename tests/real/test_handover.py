"""The hand-over protocol (robo_rl.real.handover): the vehicle's controller holds until an explicit request, the
policy's command ramps in from the hold command, and any fault hands back within the same control period.

The state machine is checked on hand-worked ramps; then through `PolicyNodeCore` with a real exported policy on the
car profile (the ESC's speed loop holds the car at speed 0) and on the Crazyflie profile without its link (a silent
vehicle: the safe command, zero thrust, is never published while the vehicle holds).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from importlib import resources
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from robo_rl.real.controller import PolicyController
from robo_rl.real.fault import Fault, FaultKind
from robo_rl.real.handover import Handover, HandoverSettings, Mode
from robo_rl.real.node_core import NodeSettings, PolicyNodeCore
from robo_rl.real.profile import ProfileError, RobotProfile, load_profile, source_input
from robo_rl.real.runtime import PolicyRuntime

from .conftest import FakeClock

DT = 0.01


def _machine(ramp: float = 0.05, hold: tuple[float, ...] = (0.0, 0.0)) -> Handover:
    clock = FakeClock()
    settings = HandoverSettings("stop", ramp=ramp, hold=hold)
    return Handover(settings, DT, lambda: np.asarray(hold), clock)


def _policy(value: tuple[float, ...] = (1.0, -1.0)) -> Callable[[], np.ndarray]:
    return lambda: np.asarray(value)


def _no_fault() -> str:
    return ""


def test_the_vehicle_holds_until_asked_and_the_policy_is_not_evaluated() -> None:
    handover = _machine()
    handover.restart()
    calls: list[int] = []

    def policy() -> np.ndarray:
        calls.append(1)
        return np.zeros(2)

    for _ in range(5):
        step = handover.step(policy, _no_fault)
        assert step.mode is Mode.VEHICLE and step.command is None
    assert not calls


def test_the_ramp_blends_linearly_from_the_hold_command() -> None:
    """ramp 0.05 s at dt 0.01 s: shares 0.2, 0.4, 0.6, 0.8, 1 (hand-worked), then the policy's own command."""
    handover = _machine(ramp=0.05, hold=(0.5, 0.0))
    handover.restart()
    handover.request_policy()
    steps = [handover.step(_policy(), _no_fault) for _ in range(7)]
    assert [s.mode for s in steps] == [Mode.RAMP] * 4 + [Mode.POLICY] * 3
    assert [s.blend for s in steps] == pytest.approx([0.2, 0.4, 0.6, 0.8, 1.0, 1.0, 1.0])
    first = steps[0].command
    assert first is not None and first == pytest.approx([0.5 + 0.2 * 0.5, -0.2])
    assert steps[-1].command == pytest.approx([1.0, -1.0])
    assert steps[0].took_over and not any(s.took_over for s in steps[1:])
    # The jump at the hand-over is at most dt / ramp of the distance between the hold and the policy's command.
    jump = np.abs(first - np.array([0.5, 0.0]))
    assert np.all(jump <= DT / 0.05 * np.abs(np.array([1.0, -1.0]) - [0.5, 0.0]) + 1e-12)


def test_a_fault_hands_back_in_the_same_period_and_control_never_returns_by_itself() -> None:
    handover = _machine()
    handover.restart()
    handover.request_policy()
    handover.step(_policy(), _no_fault)
    step = handover.step(_policy(), lambda: "stale observation")
    assert step.mode is Mode.VEHICLE and step.handed_back and step.command is None
    assert handover.transitions[-1].reason == "stale observation"
    for _ in range(3):  # the fault clears: the vehicle still holds
        assert handover.step(_policy(), _no_fault).mode is Mode.VEHICLE
    handover.request_policy()
    assert handover.step(_policy(), _no_fault).mode is Mode.RAMP
    assert handover.handbacks == 1


def test_a_request_during_a_fault_waits_for_it_to_clear() -> None:
    handover = _machine()
    handover.restart()
    handover.request_policy()
    assert handover.step(_policy(), lambda: "e-stop").mode is Mode.VEHICLE
    assert handover.step(_policy(), _no_fault).mode is Mode.RAMP


def test_requested_hand_back_and_start_at_activation() -> None:
    handover = Handover(HandoverSettings("stop", ramp=0.0, start="activate"), DT, lambda: np.zeros(2), FakeClock())
    handover.restart()
    assert handover.step(_policy(), _no_fault).mode is Mode.POLICY  # ramp 0: at once
    handover.request_vehicle()
    step = handover.step(_policy(), _no_fault)
    assert step.handed_back and step.mode is Mode.VEHICLE
    assert str(handover.diagnostics()["handover_last"]).endswith("hand-back requested")


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"vehicle": "autopilot"}, "handover.vehicle: must be one of"),
        ({"vehicle": "stop", "ramp": -1}, "handover.ramp: must be finite and >= 0"),
        ({"vehicle": "stop", "hold": [0.0]}, "handover.hold: one value per action (2)"),
        ({"vehicle": "stop", "hold": [0.0, 3.0]}, "handover.hold: drive 3.0 outside [-1.0, 1.0]"),
        ({"vehicle": "stop", "hold": [0.0, "x"]}, "handover.hold[1]: expected float, got str 'x'"),
        ({"vehicle": "px4"}, "handover.vehicle: px4 needs driver px4, got ackermann"),
        ({"vehicle": "hold_measured"}, "handover.vehicle: hold_measured needs safe_command: hold_measured"),
    ],
)
def test_bad_handover_sections_name_the_key(section: dict[str, Any], message: str, tmp_path: Path) -> None:
    import yaml

    data = yaml.safe_load(resources.files("robo_rl.real").joinpath("profiles", "rc_car.yaml").read_text())
    data["handover"] = section
    path = tmp_path / "car.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ProfileError, match=re.escape(message)):
        load_profile(str(path))


# ------------------------------------------------------------------------------------------------ through the node


class Recorder:
    def __init__(self) -> None:
        self.commands: list[dict[str, float]] = []
        self.faults: list[str] = []
        self.statuses: list[tuple[int, str]] = []

    def publish(self, fields: dict[str, float], fault: str) -> None:
        self.commands.append(fields)
        self.faults.append(fault)


def _kind(fault: str) -> FaultKind:
    assert isinstance(fault, Fault)
    return fault.kind


def _core(profile: RobotProfile, policy: Path, clock: FakeClock) -> tuple[PolicyNodeCore, Recorder]:
    controller = PolicyController(PolicyRuntime(policy), profile, clock, available=lambda _: False)
    recorder = Recorder()
    decoders = {spec.name: (lambda message: dict(message.fields)) for spec in profile.inputs if not spec.derive}
    core = PolicyNodeCore(
        controller,
        NodeSettings(target=(0.0, 0.0, 1.0)),
        decoders,
        recorder.publish,
        lambda level, message: recorder.statuses.append((level, message)),
        now_monotonic=clock,
        now_ros_ns=lambda: round(clock.now * 1e9),
    )
    return core, recorder


def _feed(core: PolicyNodeCore, profile: RobotProfile, skip: str = "") -> None:
    """One message of every input (the trigger input last, so that it commands), `skip` left silent."""
    inputs = [spec.name for spec in profile.inputs if not spec.derive]
    for name in [*inputs[1:], inputs[0]]:
        if name == skip:
            continue
        fields = {o.source: 0.0 for o in profile.observations if source_input(o.source) == name}
        if name == "odom":  # the pose the derived state comes from: level, at the origin
            fields |= {f"odom.pose.pose.position.{a}": 0.0 for a in "xyz"}
            fields |= {f"odom.pose.pose.orientation.{a}": float(a == "w") for a in "xyzw"}
        core.on_input(name, SimpleNamespace(fields=fields))


def test_the_car_holds_stopped_ramps_in_and_stops_within_one_period_on_a_fault(
    linear_policy: Callable[..., Path], clock: FakeClock
) -> None:
    """A policy that always steers 0.5 and drives 0.8: stopped until asked, then 0.2 s of ramp (10 periods at
    0.02 s, each step within the profile's rate limits); a silent track input hands back to the ESC's speed 0 (the
    safe command) in the period it goes stale, and the policy commands again only after a new request."""
    handover = HandoverSettings("stop", ramp=0.2, hold=())
    profile = replace(load_profile("rc_car"), handover=handover)
    core, sent = _core(profile, linear_policy("rc_car", {}, {"steering": 0.5, "drive": 0.8}), clock)
    core.activate()
    drive = "linear.x"  # the Twist fallback (no ackermann_msgs here)

    def period(skip: str = "") -> None:
        clock.advance(profile.dt)
        _feed(core, profile, skip)

    period()
    assert sent.commands[-1][drive] == 0.0 and _kind(sent.faults[-1]) is FaultKind.VEHICLE
    assert core.request("policy") == ""
    speeds = []
    for _ in range(12):
        period()
        speeds.append(sent.commands[-1][drive])
    assert speeds == pytest.approx([5 * 0.8 * min(1.0, k / 10) for k in range(1, 13)])
    assert core.diagnostics()["handover_mode"] == "policy"
    clock.advance(profile.staleness_timeout)  # the track input falls silent
    period(skip="track")
    assert sent.commands[-1][drive] == 0.0 and _kind(sent.faults[-1]) is FaultKind.STALE
    assert core.diagnostics()["handover_mode"] == "vehicle"
    for _ in range(3):
        period()
        assert sent.commands[-1][drive] == 0.0  # the fault cleared, the car stays stopped
    assert _kind(sent.faults[-1]) is FaultKind.STALE  # and the status keeps saying why
    core.request("policy")
    period()
    assert sent.commands[-1][drive] == pytest.approx(5 * 0.8 * 0.1)


def test_a_silent_vehicle_never_gets_the_safe_command(policy_file: Callable[[str], Path], clock: FakeClock) -> None:
    """The Crazyflie's safe command is zero thrust (motors off): with its controller holding it (no link here),
    nothing is published before the request, after a fault, or at deactivation."""
    handover = HandoverSettings("crazyswarm2", ramp=0.05, hold=(0.18, 0.0, 0.0, 0.0))
    profile = replace(load_profile("quadrotor_crazyswarm2"), handover=handover)
    core, sent = _core(profile, policy_file("quadrotor_crazyswarm2"), clock)
    core.activate()
    for _ in range(3):
        clock.advance(profile.dt)
        _feed(core, profile)
    assert sent.commands == []
    core.request("policy")
    for _ in range(3):
        clock.advance(profile.dt)
        _feed(core, profile)
    assert len(sent.commands) == 3 and all(not fault for fault in sent.faults)
    clock.advance(profile.staleness_timeout + profile.dt)
    core.on_watchdog()  # the trigger input fell silent
    core.stop("deactivated")
    assert len(sent.commands) == 3
    assert core.diagnostics()["handbacks"] == 1


def test_a_take_over_is_refused_while_inactive(linear_policy: Callable[..., Path], clock: FakeClock) -> None:
    profile = replace(load_profile("rc_car"), handover=HandoverSettings("stop"))
    core, sent = _core(profile, linear_policy("rc_car", {}, {}), clock)
    assert core.request("policy") == "the node is not active"
    assert sent.statuses[-1][1] == "request 'policy' refused: the node is not active"
    no_section, _ = _core(load_profile("rc_car"), linear_policy("rc_car", {}, {}), clock)
    assert "has no handover section" in no_section.request("policy")
