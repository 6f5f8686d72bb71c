"""PolicyNodeCore without ROS: real exported policies on bundled profiles, a fake clock, recorded outputs.

The ROS node (tests/real/ros/test_policy_node.py) only adds messages around these; here the deadline accounting,
the e-stop latch, staleness, the watchdog, takeover and fault → status run tick by tick on an injected clock.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from robo_rl.real.controller import PolicyController
from robo_rl.real.fault import Fault, FaultKind, Level
from robo_rl.real.loop import ControlLoop
from robo_rl.real.node_core import NodeCounters, NodeSettings, PolicyNodeCore, fault_status, stamp_ns
from robo_rl.real.profile import RobotProfile, load_profile, source_input
from robo_rl.real.ros.diagnostics import ERROR, OK, WARN
from robo_rl.real.ros.inputs import InputError
from robo_rl.real.runtime import PolicyRuntime

from .conftest import FakeClock

NS = 1_000_000_000
SAFE_PWM = {f"data[{i}]": 0.0 for i in range(4)}  # Crazyflie: motors off (-1) is PWM 0
HOVER_ODOM = {
    **{f"odom.pose.pose.position.{a}": v for a, v in zip("xyz", (0.0, 0.0, 1.0), strict=True)},
    **{f"odom.pose.pose.orientation.{a}": v for a, v in zip("wxyz", (1.0, 0.0, 0.0, 0.0), strict=True)},
    **{f"odom.twist.twist.linear.{a}": 0.0 for a in "xyz"},
    **{f"odom.twist.twist.angular.{a}": 0.0 for a in "xyz"},
}


@dataclass
class Node:
    """A core with its outputs recorded; `compute` seconds pass on the clock while a command is published."""

    clock: FakeClock
    profile: RobotProfile
    core: PolicyNodeCore = field(init=False)
    compute: float = 0.0
    commands: list[dict[str, float]] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)
    statuses: list[tuple[int, str]] = field(default_factory=list)

    def publish(self, fields: dict[str, float], fault: str) -> None:
        self.commands.append(fields)
        self.faults.append(fault)
        self.clock.advance(self.compute)

    def send(self, source: str, fields: dict[str, float], age: float | None = None) -> None:
        """A message of input `source`, stamped `age` s before now (no header when None)."""
        if age is None:
            self.core.on_input(source, SimpleNamespace(fields=fields))
            return
        stamp = round((self.clock.now - age) * NS)
        header = SimpleNamespace(stamp=SimpleNamespace(sec=stamp // NS, nanosec=stamp % NS))
        self.core.on_input(source, SimpleNamespace(fields=fields, header=header))


def _decode(message: Any) -> dict[str, float]:
    return dict(message.fields)


def _node(
    name: str,
    policy_file: Callable[[str], Path],
    clock: FakeClock,
    counters: NodeCounters | None = None,
    **settings: Any,
) -> Node:
    profile = load_profile(name)
    controller = PolicyController(PolicyRuntime(policy_file(name)), profile, clock, available=lambda _: False)
    decoders = {spec.name: _decode for spec in profile.inputs if not spec.derive}
    node = Node(clock, profile)
    node.core = PolicyNodeCore(
        controller,
        NodeSettings(target=(0.0, 0.0, 1.0), **settings),
        decoders,
        node.publish,
        lambda level, message: node.statuses.append((level, message)),
        now_monotonic=clock,
        now_ros_ns=lambda: round(clock.now * NS),
        counters=counters,
    )
    return node


def _active_crazyflie(policy_file: Callable[[str], Path], clock: FakeClock, **settings: Any) -> Node:
    node = _node("quadrotor_crazyflie", policy_file, clock, **settings)
    node.core.activate()
    return node


def _input_fields(profile: RobotProfile, source: str, value: float = 0.1) -> dict[str, float]:
    return {o.source: value for o in profile.observations if source_input(o.source) == source}


# ------------------------------------------------------------------------------------------------ settings


def test_settings_name_the_bad_parameter() -> None:
    with pytest.raises(ValueError, match=r"parameter 'trigger': must be one of \('observation', 'timer'\)"):
        NodeSettings(trigger="sometimes")
    with pytest.raises(ValueError, match=r"parameter 'target': expected finite \[x, y, z\], got \[1.0, 2.0\]"):
        NodeSettings(target=(1.0, 2.0))
    with pytest.raises(ValueError, match=r"parameter 'target': expected finite \[x, y, z\], got \[nan, 0.0, 0.0\]"):
        NodeSettings(target=(math.nan, 0.0, 0.0))
    for deadline in (-0.01, math.nan, math.inf):
        with pytest.raises(ValueError, match=r"parameter 'deadline': must be finite and >= 0"):
            NodeSettings(deadline=deadline)
    with pytest.raises(ValueError, match=r"parameter 'max_missed_deadlines': must be >= 0 \(0: never\), got -1"):
        NodeSettings(max_missed_deadlines=-1)


def test_stamp_of_a_message() -> None:
    header = SimpleNamespace(stamp=SimpleNamespace(sec=3, nanosec=250))
    assert stamp_ns(SimpleNamespace(header=header)) == 3 * NS + 250
    assert stamp_ns(SimpleNamespace(header=SimpleNamespace(stamp=SimpleNamespace(sec=0, nanosec=0)))) is None
    assert stamp_ns(SimpleNamespace(data=[1.0])) is None


# ----------------------------------------------------------------------------------------- trigger and counts


def test_trigger_input_commands_only_while_active(policy_file: Callable[[str], Path], clock: FakeClock) -> None:
    node = _node("quadrotor_crazyflie", policy_file, clock)
    node.send("odom", HOVER_ODOM)
    assert node.commands == []
    node.core.activate()
    node.send("odom", HOVER_ODOM)
    assert len(node.commands) == 1 and node.commands[0] != SAFE_PWM
    assert node.core.counters.commands == 1 and node.core.counters.safe_commands == 0


def test_latencies_and_met_deadlines(policy_file: Callable[[str], Path], clock: FakeClock) -> None:
    node = _active_crazyflie(policy_file, clock)
    node.compute = 0.001
    for _ in range(5):
        node.send("odom", HOVER_ODOM, age=0.004)  # + 1 ms compute: 5 ms < the 10 ms deadline (profile dt)
        clock.advance(node.profile.dt)
    counters = node.core.counters
    assert counters.missed_deadlines == 0 and counters.consecutive_missed == 0
    assert counters.compute_latency.count == 5 and counters.compute_latency.maximum() == pytest.approx(0.001)
    assert counters.stamp_latency.maximum() == pytest.approx(0.005)


def test_missed_deadlines_are_counted_and_a_met_one_resets_the_run(
    policy_file: Callable[[str], Path], clock: FakeClock
) -> None:
    node = _active_crazyflie(policy_file, clock, deadline=0.003, max_missed_deadlines=5)
    for age in (0.004, 0.004, 0.004, 0.002, 0.004):
        node.send("odom", HOVER_ODOM, age=age)
        clock.advance(node.profile.dt)
    counters = node.core.counters
    assert counters.missed_deadlines == 4 and counters.consecutive_missed == 1
    assert not node.core.controller.safety.estopped
    assert all(command != SAFE_PWM for command in node.commands)


def test_consecutive_misses_latch_the_estop_at_the_limit(policy_file: Callable[[str], Path], clock: FakeClock) -> None:
    node = _active_crazyflie(policy_file, clock, max_missed_deadlines=3)
    for _ in range(2):
        node.send("odom", HOVER_ODOM, age=0.02)
        clock.advance(node.profile.dt)
    assert not node.core.controller.safety.estopped and node.statuses == []
    node.send("odom", HOVER_ODOM, age=0.02)  # the third late command in a row: sent, then the latch
    assert node.core.controller.safety.estopped and node.commands[-1] != SAFE_PWM
    assert node.statuses == [(ERROR, "safe command: missed deadlines: 3 in a row, e-stop latched")]
    assert node.core.counters.last_fault == "missed deadlines"
    clock.advance(node.profile.dt)
    node.send("odom", HOVER_ODOM, age=0.001)
    assert node.commands[-1] == SAFE_PWM and node.statuses[-1] == (ERROR, "safe command: e-stop")


def test_zero_max_missed_deadlines_never_latches(policy_file: Callable[[str], Path], clock: FakeClock) -> None:
    node = _active_crazyflie(policy_file, clock, max_missed_deadlines=0)
    for _ in range(20):
        node.send("odom", HOVER_ODOM, age=0.05)
        clock.advance(node.profile.dt)
    assert node.core.counters.consecutive_missed == 20 and not node.core.controller.safety.estopped
    assert node.core.counters.safe_commands == 0 and node.statuses == []


def test_the_latch_holds_until_activate(policy_file: Callable[[str], Path], clock: FakeClock) -> None:
    node = _active_crazyflie(policy_file, clock, max_missed_deadlines=1)
    node.send("odom", HOVER_ODOM, age=0.02)
    for _ in range(10):  # on time again, fresh inputs: still latched
        clock.advance(node.profile.dt)
        node.send("odom", HOVER_ODOM, age=0.001)
    assert node.commands[1:] == [SAFE_PWM] * 10 and node.core.counters.safe_commands == 10
    node.core.activate()
    assert node.core.counters.commands == 0 and node.core.counters.last_fault == ""
    clock.advance(node.profile.dt)
    node.send("odom", HOVER_ODOM, age=0.001)
    assert node.commands[-1] != SAFE_PWM and node.core.counters.safe_commands == 0


def test_estop_latches_until_activate(policy_file: Callable[[str], Path], clock: FakeClock) -> None:
    node = _active_crazyflie(policy_file, clock)
    node.core.estop()
    node.send("odom", HOVER_ODOM)
    assert node.commands == [SAFE_PWM] and node.statuses == [(ERROR, "safe command: e-stop")]
    node.core.activate()  # the fault is cleared with the counters: no status change (the node says "active")
    node.send("odom", HOVER_ODOM)
    assert node.commands[-1] != SAFE_PWM and len(node.statuses) == 1


# ----------------------------------------------------------------------------------------- staleness, watchdog


def test_a_silent_input_gives_the_safe_command_naming_it(policy_file: Callable[[str], Path], clock: FakeClock) -> None:
    node = _node("rc_car", policy_file, clock)
    node.core.activate()
    inputs = ("track", "drive_state", "odom")  # odom, the profile's first input, triggers the command
    for source in inputs:
        node.send(source, _input_fields(node.profile, source))
    assert node.core.counters.last_fault == "" and len(node.commands) == 1
    clock.advance(node.profile.staleness_timeout + 0.001)
    for source in ("track", "odom"):  # drive_state fell silent
        node.send(source, _input_fields(node.profile, source))
    fault = "stale observation: no drive_state for 0.1 s"
    assert node.commands[-1] == {"linear.x": 0.0, "angular.z": 0.0}
    assert node.core.counters.last_fault == fault and node.statuses == [(WARN, f"safe command: {fault}")]


def test_watchdog_commands_only_while_the_trigger_input_is_stale(
    policy_file: Callable[[str], Path], clock: FakeClock
) -> None:
    node = _node("rc_car", policy_file, clock)
    node.core.activate()
    node.core.on_watchdog()  # nothing arrived yet: every input is stale
    assert node.commands == [{"linear.x": 0.0, "angular.z": 0.0}]
    assert node.core.counters.last_fault == "stale observation"
    node.send("odom", _input_fields(node.profile, "odom"))
    commands = len(node.commands)
    for _ in range(4):  # odom fresh (track and drive_state are not): its own messages trigger the commands
        clock.advance(node.profile.dt)
        node.core.on_watchdog()
    assert len(node.commands) == commands
    clock.advance(node.profile.staleness_timeout)
    node.core.on_watchdog()
    assert len(node.commands) == commands + 1 and node.commands[-1] == {"linear.x": 0.0, "angular.z": 0.0}


def test_stale_trigger_input_gives_the_safe_command_within_one_period_at_the_profile_rate(
    policy_file: Callable[[str], Path], clock: FakeClock
) -> None:
    # The node's watchdog timer calls on_watchdog every dt: after the last odometry, nothing while it is fresh, the
    # first safe command at the first tick past the staleness timeout, then one safe command per tick (the profile's
    # 100 Hz). tests/real/ros/test_policy_node.py checks the same on real ROS without timing it (any machine speed);
    # bench/ros_timing.py measures the wall-clock figures.
    node = _active_crazyflie(policy_file, clock)
    node.send("odom", HOVER_ODOM)
    last_odom, timeout, dt = clock.now, node.profile.staleness_timeout, node.profile.dt
    sent_at: list[float] = []
    for _ in range(30):
        clock.advance(dt)
        before = len(node.commands)
        node.core.on_watchdog()
        sent_at += [clock.now] * (len(node.commands) - before)
    assert node.faults[0] == "" and node.faults[1:] == ["stale observation"] * len(sent_at)
    assert timeout < sent_at[0] - last_odom <= timeout + dt + 1e-9
    assert sent_at == pytest.approx([sent_at[0] + k * dt for k in range(len(sent_at))])  # every tick from then on
    assert node.commands[1:] == [SAFE_PWM] * len(sent_at)


def test_timer_trigger_commands_every_tick_from_slower_inputs_until_they_go_stale(
    policy_file: Callable[[str], Path], clock: FakeClock
) -> None:
    # trigger "timer": ControlLoop (the node's loop thread) calls tick() on the profile's dt grid; odometry at half
    # that rate still gives the policy's command every tick while it is fresh, the safe one every tick once stale.
    node = _active_crazyflie(policy_file, clock, trigger="timer")
    dt, ticks, fed_ticks = node.profile.dt, [0], 40
    tick_times: list[float] = []

    def step() -> float | None:
        if ticks[0] < fed_ticks and ticks[0] % 2 == 0:
            node.send("odom", HOVER_ODOM)  # 50 Hz
        ticks[0] += 1
        tick_times.append(clock.now)
        return node.core.tick()

    start = clock.now
    stats = ControlLoop(dt, step, clock, clock.sleep).run(ticks=fed_ticks + 20)
    assert stats.missed_deadlines == 0 and tick_times == pytest.approx([start + k * dt for k in range(60)])
    assert len(node.commands) == 60  # one per tick: 100 Hz from 50 Hz odometry
    assert node.faults[:fed_ticks] == [""] * fed_ticks and SAFE_PWM not in node.commands[:fed_ticks]
    # The last odometry at tick 38: the safe command from the first tick more than the timeout (5 periods) later,
    # tick 44 (43 where the clock's float sum lands a hair past 0.05 s), and on every tick after it.
    stale_from = node.faults.index("stale observation")
    assert stale_from in (43, 44) and 38 * dt + node.profile.staleness_timeout < tick_times[stale_from] - start + 1e-9
    assert node.faults[fed_ticks:stale_from] == [""] * (stale_from - fed_ticks)
    assert node.faults[stale_from:] == ["stale observation"] * (60 - stale_from)


# ------------------------------------------------------------------------------------------------- takeover


def test_interventions_are_counted_and_a_wrong_length_raises(
    policy_file: Callable[[str], Path], clock: FakeClock
) -> None:
    node = _active_crazyflie(policy_file, clock)
    node.send("odom", HOVER_ODOM)
    node.core.intervene([0.5, 0.5, 0.5, 0.5])
    clock.advance(node.profile.dt)
    node.send("odom", HOVER_ODOM)
    assert node.commands[-1] == {f"data[{i}]": pytest.approx(32767.5 * 1.5) for i in range(4)}
    clock.advance(node.profile.staleness_timeout + 0.001)  # odom silent, the operator's action still fresh
    node.core.intervene([0.0, 0.0, 0.0, 0.0])
    node.core.on_watchdog()
    assert node.commands[-1] == {f"data[{i}]": pytest.approx(32767.5) for i in range(4)}
    assert node.core.counters.interventions == 2 and node.core.counters.safe_commands == 0
    with pytest.raises(ValueError, match="intervention shape"):
        node.core.intervene([0.0])
    assert node.core.counters.interventions == 2


# ------------------------------------------------------------------------------------------- faults → status


def test_fault_changes_set_the_status_level(policy_file: Callable[[str], Path], clock: FakeClock) -> None:
    node = _active_crazyflie(policy_file, clock)
    nan_odom = {**HOVER_ODOM, "odom.twist.twist.angular.x": math.nan}
    for fields in (HOVER_ODOM, nan_odom, nan_odom, HOVER_ODOM, HOVER_ODOM):
        node.send("odom", fields)
        clock.advance(node.profile.dt)
    clock.advance(node.profile.staleness_timeout)
    node.core.on_watchdog()
    node.core.on_watchdog()
    assert node.statuses == [
        (ERROR, "safe command: non-finite observation"),
        (OK, "active"),
        (WARN, "safe command: stale observation"),
    ]


def test_fault_status_classification() -> None:
    """The level is the fault's kind's (robo_rl.real.fault), not a guess from its text."""
    assert fault_status("") == (OK, "active")
    non_finite = Fault(FaultKind.NON_FINITE, message="non-finite action")
    assert fault_status(non_finite) == (ERROR, "safe command: non-finite action")
    assert fault_status(Fault(FaultKind.ESTOP)) == (ERROR, "safe command: e-stop")
    assert fault_status(Fault(FaultKind.ESTOP, message="estop")) == (ERROR, "safe command: estop")  # not its prefix
    assert fault_status(Fault(FaultKind.MISSING_FIELDS, message="missing observation fields: odom.x")) == (
        WARN,
        "safe command: missing observation fields: odom.x",
    )
    assert fault_status(Fault(FaultKind.STOPPED, message="deactivated")) == (WARN, "safe command: deactivated")
    assert fault_status(Fault(FaultKind.STALE, message="e-stop lookalike")) == (WARN, "safe command: e-stop lookalike")
    # Every kind has a level and a text of its own.
    assert len({kind.text for kind in FaultKind}) == len(FaultKind)
    assert {kind.level for kind in FaultKind if kind is not FaultKind.VEHICLE} <= {Level.WARN, Level.ERROR}
    # The vehicle's own controller holding it (robo_rl.real.handover) is no fault.
    assert fault_status(Fault(FaultKind.VEHICLE)) == (OK, "safe command: vehicle in control")


def test_non_finite_observation_gives_the_safe_command(policy_file: Callable[[str], Path], clock: FakeClock) -> None:
    node = _active_crazyflie(policy_file, clock)
    node.compute = 0.001
    node.send("odom", {**HOVER_ODOM, "odom.pose.pose.position.z": math.inf})
    assert node.commands == [SAFE_PWM]
    counters = node.core.counters
    assert counters.safe_commands == 1 and counters.last_fault == "non-finite observation"
    assert counters.compute_latency.count == 0  # safe commands are not timed


# ---------------------------------------------------------------------------------------------------- stop


def test_stop_sends_one_safe_command_with_the_reason(policy_file: Callable[[str], Path], clock: FakeClock) -> None:
    node = _active_crazyflie(policy_file, clock)
    node.send("odom", HOVER_ODOM)
    order: list[str] = []
    assert node.core.stop("deactivated", lambda: order.append(f"halt after {len(node.commands)} commands"))
    assert order == ["halt after 1 commands"] and node.commands[1:] == [SAFE_PWM]
    assert node.faults == ["", "deactivated"]  # the sink learns which command is the safe one, and why
    assert node.core.counters.last_fault == "deactivated"
    assert node.statuses == [(WARN, "safe command: deactivated")]
    assert not node.core.stop("shutdown")
    node.send("odom", HOVER_ODOM)  # inactive: observed, not answered
    assert len(node.commands) == 2


def test_an_unreadable_message_is_skipped_and_counted_and_its_input_goes_stale(
    policy_file: Callable[[str], Path], clock: FakeClock
) -> None:
    node = _active_crazyflie(policy_file, clock)

    def unreadable(message: Any) -> dict[str, float]:
        if message.fields.get("broken"):
            raise InputError("JointState lacks joint(s) ['wrist']")
        return _decode(message)

    node.core.decoders["odom"] = unreadable
    node.send("odom", HOVER_ODOM)
    for _ in range(3):  # e.g. another publisher's messages on the topic: no command, no latch
        node.send("odom", {"broken": 1.0})
    assert node.faults == [""] and not node.core.controller.safety.estopped
    counters = node.core.counters
    assert counters.skipped_messages == 3 and counters.last_skipped == "odom: JointState lacks joint(s) ['wrist']"
    clock.advance(node.profile.staleness_timeout + 0.001)
    node.send("odom", {"broken": 1.0})  # they do not keep the input fresh
    node.core.on_watchdog()
    assert node.faults[-1] == "stale observation" and node.commands[-1] == SAFE_PWM
    node.send("odom", HOVER_ODOM)  # readable again: nothing latched
    assert node.faults[-1] == ""


# ---------------------------------------------------------------------------------------- timer, diagnostics


def test_timer_trigger_steps_on_ticks_only(policy_file: Callable[[str], Path], clock: FakeClock) -> None:
    node = _active_crazyflie(policy_file, clock, trigger="timer")
    node.send("odom", HOVER_ODOM, age=0.001)
    assert node.commands == []
    clock.advance(0.004)
    assert node.core.tick() == pytest.approx(0.004)  # from the observation's arrival
    assert len(node.commands) == 1 and node.core.counters.stamp_latency.count == 0


def test_diagnostics_values(policy_file: Callable[[str], Path], clock: FakeClock) -> None:
    counters = NodeCounters()
    node = _node("quadrotor_crazyflie", policy_file, clock, counters=counters, max_missed_deadlines=0)
    node.core.activate()
    node.compute = 0.002
    node.send("odom", HOVER_ODOM, age=0.03)
    clock.advance(node.profile.dt)
    node.send("odom", {**HOVER_ODOM, "odom.twist.twist.linear.x": math.nan}, age=0.001)
    values = node.core.diagnostics(extra_missed=4)
    assert values["active"] is True and values["commands"] == 2 and values["safe_commands"] == 1
    assert values["missed_deadlines"] == 5 and values["last_fault"] == "non-finite observation"
    assert values["compute_latency_p99_ms"] == pytest.approx(2.0)
    assert values["stamp_latency_max_ms"] == pytest.approx(32.0)
    assert values["command_type"] == "std_msgs/msg/Float32MultiArray" and values["estopped"] is False
    assert values["stale_inputs"] == "" and values["input_age_ms.odom"] == pytest.approx(2.0)  # the publish took 2 ms
    node.core.stop("deactivated")
    # The counters outlive the core: the node reports them after cleanup, without the controller's values.
    after = counters.values(active=False)
    assert after["commands"] == 3 and "command_type" not in after
    assert math.isnan(NodeCounters().values(active=False)["compute_latency_p50_ms"])
    controller_keys = ("command_type", "estopped", "stale_inputs", "input_age_ms.odom")
    assert values["faults.non-finite"] == 1 and after["faults.stopped"] == 1  # the fault kinds' onsets
    plain = [k for k in values if k not in controller_keys and not k.startswith("faults.")]
    np.testing.assert_equal(sorted(k for k in after if not k.startswith("faults.")), sorted(plain))


# ------------------------------------------------------------------------------------------------ stamp rule


def _stamped(node: Node, stamp: float, fields: dict[str, float] | None = None) -> None:
    """An odometry message stamped `stamp` s on the node's clock."""
    ns = round(stamp * NS)
    header = SimpleNamespace(stamp=SimpleNamespace(sec=ns // NS, nanosec=ns % NS))
    node.core.on_input("odom", SimpleNamespace(fields=fields or HOVER_ODOM, header=header))


def test_copies_overtaken_and_far_stamps_are_skipped_and_counted(
    policy_file: Callable[[str], Path], clock: FakeClock
) -> None:
    node = _active_crazyflie(policy_file, clock, max_missed_deadlines=0)
    dt, timeout = node.profile.dt, node.profile.staleness_timeout
    _stamped(node, clock.now)
    first = clock.now
    clock.advance(dt)
    _stamped(node, first)  # a copy of the last accepted message
    _stamped(node, first - dt)  # older than it: overtaken
    _stamped(node, clock.now + timeout + 0.001)  # from the future beyond the timeout
    _stamped(node, clock.now - timeout - 0.001)  # older than the timeout: stale on arrival
    _stamped(node, clock.now - 3600.0)
    assert len(node.commands) == 1  # only the first was answered
    stamps = node.core.counters.stamps
    assert (stamps.duplicate, stamps.reordered, stamps.future, stamps.old, stamps.gaps) == (1, 1, 1, 2, 0)
    assert stamps.last.startswith("odom: stamped 3600.000 s ago")
    _stamped(node, clock.now + timeout - 0.001)  # ahead, but within the timeout: accepted, 59 ms after the last
    assert len(node.commands) == 2 and node.core.counters.last_fault == ""
    values = node.core.diagnostics()
    assert (values["duplicate_messages"], values["reordered_messages"]) == (1, 1)
    assert (values["future_stamps"], values["old_stamps"], values["stamp_gaps"]) == (1, 2, 1)


def test_skipped_stamps_feed_no_watchdog(policy_file: Callable[[str], Path], clock: FakeClock) -> None:
    node = _active_crazyflie(policy_file, clock)
    _stamped(node, clock.now)
    for _ in range(6):  # 60 ms of copies only: the input goes stale, the watchdog sends the safe command
        clock.advance(node.profile.dt)
        _stamped(node, clock.now - 1.0)
        node.core.on_watchdog()
    assert node.commands[-1] == SAFE_PWM and node.core.counters.last_fault == "stale observation"
    assert node.core.counters.stamps.old == 6


def test_a_gap_in_the_trigger_inputs_stamps_is_counted(policy_file: Callable[[str], Path], clock: FakeClock) -> None:
    node = _active_crazyflie(policy_file, clock)
    start, dt = clock.now, node.profile.dt
    for step in (0, 1, 2, 4, 5, 8):  # steps 3, 6 and 7 went missing: two gaps
        clock.now = start + step * dt
        _stamped(node, clock.now)
    assert node.core.counters.stamps.gaps == 2 and len(node.commands) == 6


def test_a_clock_that_went_back_is_judged_afresh(policy_file: Callable[[str], Path], clock: FakeClock) -> None:
    node = _active_crazyflie(policy_file, clock)
    _stamped(node, clock.now)
    clock.advance(-10.0)  # a simulation restarted its /clock
    _stamped(node, clock.now)
    assert len(node.commands) == 2 and node.core.counters.stamps.reordered == 0


def test_a_nan_orientation_gives_the_safe_command(policy_file: Callable[[str], Path], clock: FakeClock) -> None:
    node = _active_crazyflie(policy_file, clock)
    node.send("odom", {**HOVER_ODOM, "odom.pose.pose.orientation.w": math.nan})
    assert node.commands == [SAFE_PWM] and node.core.counters.last_fault.startswith("non-finite observation")


def test_each_fault_onset_is_counted_by_kind(policy_file: Callable[[str], Path], clock: FakeClock) -> None:
    node = _active_crazyflie(policy_file, clock)
    nan_odom = {**HOVER_ODOM, "odom.twist.twist.angular.x": math.nan}
    for fields in (HOVER_ODOM, nan_odom, nan_odom, HOVER_ODOM, nan_odom, HOVER_ODOM):
        node.send("odom", fields)
        clock.advance(node.profile.dt)
    clock.advance(node.profile.staleness_timeout)
    node.core.on_watchdog()
    node.core.on_watchdog()
    values = node.core.diagnostics()
    assert values["faults.non-finite"] == 2 and values["faults.stale observation"] == 1
    node.core.activate()
    assert not any(key.startswith("faults.") for key in node.core.diagnostics())
