"""A policy with memory on the deploy side, without ROS: `PolicyRuntime` carries the state (`h_in` -> `h_out`) and
`PolicyController` resets it where `robo_rl.memory_spec.RESET_RULE` says, on stepped time.

The policies are small GRU and history-window actors exported by `robo_rl.export.onnx` for bundled profiles
(tests/real/memory_policy.py). The reference is the same file run in onnxruntime directly (Microsoft's runtime,
which implements the ONNX GRU operator from the ONNX specification, not from our code), the state carried from
`h_out` to `h_in` and reset where the rule says: at activation, and at the first policy step after any command that
was not the policy's own (a safe command or the operator's action).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import onnx
import pytest

from robo_rl.artifact import PolicyArtifact
from robo_rl.export.onnx import read_metadata
from robo_rl.image_spec import ImageSpec
from robo_rl.memory_spec import MemorySpec
from robo_rl.real.controller import HOMING, PolicyController
from robo_rl.real.fault import FaultKind
from robo_rl.real.node_core import NodeSettings, PolicyNodeCore
from robo_rl.real.profile import load_profile
from robo_rl.real.ros.inputs import input_decoder
from robo_rl.real.runtime import PolicyFileError, PolicyRuntime
from robo_rl.spaces import SpaceSpec

from .conftest import FakeClock
from .memory_policy import GRU, HISTORY, RecordedSession, export_memory_policy, offline_run

CRAZYFLIE = "quadrotor_crazyflie"
TOLERANCE = 1e-5
"""Largest difference accepted between two onnxruntime sessions of one file (the runtime's has one thread and
sequential execution, the reference onnxruntime's defaults)."""


@pytest.fixture(scope="module")
def memory_file(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """`memory_file(profile, kind="gru", reset_value=0.0)`: a policy with memory for that profile (exported once)."""
    cache: dict[tuple[str, str, float], Path] = {}
    folder = tmp_path_factory.mktemp("memory")

    def get(profile: str, kind: str = "gru", reset_value: float = 0.0) -> Path:
        key = (profile, kind, reset_value)
        if key not in cache:
            path = folder / f"{profile}_{kind}_{reset_value}.onnx"
            cfg = GRU if kind == "gru" else HISTORY
            cache[key] = export_memory_policy(profile, path, cfg, reset_value=reset_value)
        return cache[key]

    return get


# ------------------------------------------------------------------------------------------------ the runtime


@pytest.mark.parametrize("kind", ["gru", "history"])
def test_the_runtime_carries_the_state_and_reset_memory_starts_it_again(
    kind: str, memory_file: Callable[..., Path]
) -> None:
    path = memory_file(CRAZYFLIE, kind)
    runtime = PolicyRuntime(path, load_profile(CRAZYFLIE))
    assert runtime.memory is not None and runtime.memory.kind == kind
    size = runtime.memory.size
    assert runtime.state is not None and runtime.state.shape == (1, size) and runtime.state.dtype == np.float32
    assert not runtime.state.any()  # the warm-up's state is not kept
    obs = list(np.random.default_rng(0).normal(0.0, 0.5, (12, runtime.obs_dim)))
    actions = []
    for t, o in enumerate(obs):
        if t == 7:
            runtime.reset_memory()
            assert runtime.state is not None and not runtime.state.any()
        actions.append(runtime(o))
    expected, states = offline_run(path, obs, [t in (0, 7) for t in range(12)])
    np.testing.assert_allclose(np.array(actions), expected, atol=TOLERANCE)
    assert runtime.state is not None
    np.testing.assert_allclose(runtime.state[0], states[-1], atol=TOLERANCE)
    carried, _ = offline_run(path, obs, [t == 0 for t in range(12)])
    assert np.abs(carried[7:] - expected[7:]).max() > 1e-3  # the reset changes what follows: the state matters


def test_reset_memory_sets_the_artifacts_reset_value(memory_file: Callable[..., Path]) -> None:
    path = memory_file(CRAZYFLIE, "gru", reset_value=0.25)
    runtime = PolicyRuntime(path)
    assert runtime.memory is not None and runtime.memory.reset_value == 0.25
    np.testing.assert_array_equal(runtime.state, np.full((1, 8), 0.25, dtype=np.float32))
    obs = list(np.random.default_rng(1).normal(0.0, 0.5, (3, runtime.obs_dim)))
    actions = [runtime(o) for o in obs]
    assert runtime.state is not None and not np.allclose(runtime.state, 0.25)
    runtime.reset_memory()
    np.testing.assert_array_equal(runtime.state, np.full((1, 8), 0.25, dtype=np.float32))
    expected, _ = offline_run(path, obs, [True, False, False], reset_value=0.25)
    np.testing.assert_allclose(np.array(actions), expected, atol=TOLERANCE)


def test_a_policy_without_memory_has_no_state(policy_file: Callable[[str], Path]) -> None:
    runtime = PolicyRuntime(policy_file(CRAZYFLIE))
    runtime.reset_memory()  # nothing to reset
    assert runtime.memory is None and runtime.state is None


def _with_artifact(source: Path, target: Path, change: Callable[[PolicyArtifact], PolicyArtifact]) -> Path:
    """Copy of the policy at `source` (its graph unchanged) whose metadata is `change` of its own."""
    model = onnx.load(str(source))
    artifact = change(PolicyArtifact.from_props(read_metadata(source)))
    del model.metadata_props[:]
    onnx.helper.set_model_props(model, artifact.to_props())
    onnx.save_model(model, str(target))
    return target


def test_a_file_whose_graph_lacks_the_stated_memory_is_refused_naming_the_input(
    policy_file: Callable[[str], Path], tmp_path: Path
) -> None:
    stated = MemorySpec("gru", 8)
    path = _with_artifact(policy_file(CRAZYFLIE), tmp_path / "p.onnx", lambda a: replace(a, memory=stated))
    with pytest.raises(PolicyFileError, match=r"no graph input 'h_in' for its memory \(robo_rl.memory: gru, 8 entries"):
        PolicyRuntime(path)


def test_a_memory_of_another_width_than_the_graphs_is_refused(memory_file: Callable[..., Path], tmp_path: Path) -> None:
    def wider(artifact: PolicyArtifact) -> PolicyArtifact:
        assert artifact.memory is not None
        return replace(artifact, memory=replace(artifact.memory, size=9))

    path = _with_artifact(memory_file(CRAZYFLIE), tmp_path / "p.onnx", wider)
    message = r"input 'h_in' is tensor\(float\) \['batch', 8\], its memory \(robo_rl.memory: gru, 9 entries\) needs "
    with pytest.raises(PolicyFileError, match=message + r"float32 \(batch, 9\)"):
        PolicyRuntime(path)


def test_a_graph_with_a_state_input_its_metadata_does_not_state_is_refused(
    memory_file: Callable[..., Path], tmp_path: Path
) -> None:
    """Run without its memory, the policy would act on a state nobody feeds: refused, not run."""
    path = _with_artifact(memory_file(CRAZYFLIE), tmp_path / "p.onnx", lambda a: replace(a, memory=None))
    message = r"graph inputs \['h_in'\] are not in its metadata \(a policy with memory states it in robo_rl.memory\)"
    with pytest.raises(PolicyFileError, match=message):
        PolicyRuntime(path)


def test_memory_with_cameras_or_action_chunks_is_refused(memory_file: Callable[..., Path], tmp_path: Path) -> None:
    source = memory_file(CRAZYFLIE)
    camera = _with_artifact(source, tmp_path / "c.onnx", lambda a: replace(a, images=(ImageSpec("wrist", 8, 8, 3),)))
    with pytest.raises(PolicyFileError, match=r"its memory \(robo_rl.memory: gru, 8 entries\) with cameras"):
        PolicyRuntime(camera)

    def chunked(artifact: PolicyArtifact) -> PolicyArtifact:
        half = SpaceSpec(*(getattr(artifact.action, f)[:2] for f in ("names", "low", "high", "units")))
        return replace(artifact, action=half, action_chunk=2, actuator=None)

    chunk = _with_artifact(source, tmp_path / "h.onnx", chunked)
    with pytest.raises(PolicyFileError, match=r"8 entries\) with action chunks of 2: not supported"):
        PolicyRuntime(chunk)


# ------------------------------------------------------------------------------------------------ the node core


@dataclass
class Robot:
    """A `PolicyNodeCore` on stepped time, its runtime's session recorded; `periods` keeps, for each control period,
    whether the policy ran, the fault of the command sent and whether it was the operator's."""

    clock: FakeClock
    core: PolicyNodeCore
    session: RecordedSession
    send_inputs: Callable[[np.random.Generator, bool], None]
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(3))
    faults: list[str] = field(default_factory=list)
    periods: list[tuple[bool, str, bool]] = field(default_factory=list)

    def publish(self, fields: dict[str, float], fault: str) -> None:
        self.faults.append(fault)

    def period(self, nan: bool = False, watchdog: bool = False) -> None:
        """One control period: fresh inputs (one observation NaN when `nan`), or, with `watchdog`, none and the
        watchdog's command."""
        self.clock.advance(self.core.controller.profile.dt)
        runs, sent, interventions = len(self.session.feeds), len(self.faults), self.core.counters.interventions
        if watchdog:
            self.core.on_watchdog()
        else:
            self.send_inputs(self.rng, nan)
        assert len(self.faults) == sent + 1  # one command per period
        intervened = self.core.counters.interventions > interventions
        self.periods.append((len(self.session.feeds) > runs, self.faults[-1], intervened))

    def run(self, count: int) -> None:
        for _ in range(count):
            self.period()

    def activate(self) -> None:
        self.core.activate()
        self.periods.append((False, "activated", False))

    def expected_resets(self) -> list[bool]:
        """Per policy run, RESET_RULE: the state is reset when the command before this period's was not the
        policy's own (none since activation, a safe command, or the operator's action)."""
        resets, policy_before = [], False
        for ran, fault, intervened in self.periods:
            if fault == "activated":
                policy_before = False
                continue
            if ran:
                resets.append(not policy_before)
            policy_before = ran and not fault and not intervened
        return resets


def _robot(path: Path, profile_name: str, clock: FakeClock, send: Callable[..., None]) -> Robot:
    profile = load_profile(profile_name)
    runtime = PolicyRuntime(path)
    session = runtime.session = RecordedSession(runtime.session)
    controller = PolicyController(runtime, profile, clock, available=lambda _: False)
    decoders: dict[str, Callable[[Any], dict[str, float]]] = {}
    for spec in profile.inputs:
        if not spec.derive:
            decoders[spec.name] = input_decoder(profile, spec) if spec.joints else (lambda m: dict(m.fields))
    robot = Robot(clock, None, session, send)  # type: ignore[arg-type]  # the core needs the robot's publish
    robot.core = PolicyNodeCore(
        controller,
        NodeSettings(target=(0.0, 0.0, 1.0)),
        decoders,
        robot.publish,
        lambda level, message: None,
        now_monotonic=clock,
        now_ros_ns=lambda: round(clock.now * 1e9),
    )
    return robot


def _check_against_offline_run(robot: Robot, path: Path) -> list[bool]:
    """The state fed at each policy run is the reset value where RESET_RULE says and the previous run's `h_out`
    otherwise, and the actions and states are the offline run's with those resets; returns the resets."""
    resets = robot.expected_resets()
    feeds, outputs = robot.session.feeds, robot.session.outputs
    assert len(resets) == len(feeds)
    for t, reset in enumerate(resets):
        h_in = feeds[t]["h_in"]
        if reset:
            assert not h_in.any(), f"run {t}: the state was not reset"
        else:
            np.testing.assert_array_equal(h_in, outputs[t - 1][1], err_msg=f"run {t}: the state was not carried")
    actions, states = offline_run(path, [feed["obs"][0] for feed in feeds], resets)
    np.testing.assert_allclose(np.array([out[0][0] for out in outputs]), actions, atol=TOLERANCE)
    np.testing.assert_allclose(np.array([out[1][0] for out in outputs]), states, atol=TOLERANCE)
    return resets


def _odom(core: PolicyNodeCore) -> Callable[[np.random.Generator, bool], None]:
    """A Crazyflie's odometry near hover, a new random pose and twist each period."""

    def send(rng: np.random.Generator, nan: bool) -> None:
        position = np.array([0.2, -0.1, 1.0]) + rng.normal(0.0, 0.1, 3)
        fields = {f"odom.pose.pose.position.{a}": v for a, v in zip("xyz", position, strict=True)}
        fields |= {f"odom.pose.pose.orientation.{a}": v for a, v in zip("wxyz", (1.0, 0.0, 0.0, 0.0), strict=True)}
        fields |= {f"odom.twist.twist.linear.{a}": v for a, v in zip("xyz", rng.normal(0.0, 0.3, 3), strict=True)}
        fields |= {f"odom.twist.twist.angular.{a}": v for a, v in zip("xyz", rng.normal(0.0, 0.5, 3), strict=True)}
        if nan:
            fields["odom.twist.twist.angular.x"] = math.nan
        core.on_input("odom", SimpleNamespace(fields=fields))

    return send


def test_the_node_core_resets_the_state_at_activation_and_after_every_safe_command_or_intervention(
    memory_file: Callable[..., Path], clock: FakeClock
) -> None:
    path = memory_file(CRAZYFLIE)
    robot = _robot(path, CRAZYFLIE, clock, lambda rng, nan: _odom(robot.core)(rng, nan))
    timeout = robot.core.controller.timeout
    marks = {}  # event -> index of the first policy run after it

    robot.activate()  # an episode starts
    marks["activation"] = len(robot.session.feeds)
    robot.run(5)
    robot.period(nan=True)  # a non-finite observation: the safe command
    assert robot.faults[-1].startswith(FaultKind.NON_FINITE.text)
    marks["non-finite"] = len(robot.session.feeds)
    robot.run(4)
    clock.advance(timeout)  # the odometry goes silent: the watchdog sends the safe command
    robot.period(watchdog=True)
    assert robot.faults[-1] == FaultKind.STALE.text
    marks["stale"] = len(robot.session.feeds)
    robot.run(4)
    robot.core.intervene([0.2, 0.2, 0.2, 0.2])  # the operator's action replaces the policy's while it is fresh
    robot.run(3)
    marks["intervention"] = len(robot.session.feeds)
    robot.run(3)  # 60 ms after it was given, the operator's action is older than the 50 ms timeout
    operator = [intervened for _, _, intervened in robot.periods[-6:]]
    assert operator[:3] == [True] * 3 and operator[-1] is False and robot.faults[-1] == ""
    robot.run(3)
    robot.core.estop()
    robot.run(3)
    assert robot.faults[-3:] == [FaultKind.ESTOP.text] * 3
    robot.activate()  # the only way out of the e-stop
    marks["e-stop, then activation"] = len(robot.session.feeds)
    robot.run(4)
    assert robot.core.stop("deactivated")
    robot.activate()  # the next episode
    marks["deactivation, then activation"] = len(robot.session.feeds)
    robot.run(4)

    resets = _check_against_offline_run(robot, path)
    for event, index in marks.items():
        assert resets[index], f"the first policy step after {event} did not reset the state"
        assert not resets[index + 1], f"the second policy step after {event} did not carry the state"
    assert sum(not reset for reset in resets) >= 20  # carried far more often than reset


ARM_HOME = (0.0, 0.5, -1.0, 0.5)


def _arm_inputs(core: PolicyNodeCore) -> Callable[[np.random.Generator, bool], None]:
    """The arm's target and end-effector state, then its JointState (the trigger) near the home pose."""

    def send(rng: np.random.Generator, nan: bool) -> None:
        core.on_input("target", SimpleNamespace(fields={f"target.point.{a}": 0.1 for a in "xyz"}))
        state = {f"state.end_effector_to_target.{a}": v for a, v in zip("xyz", rng.normal(0.0, 0.1, 3), strict=True)}
        core.on_input("state", SimpleNamespace(fields=state))
        pose = np.array(ARM_HOME) + rng.normal(0.0, 0.05, 4)
        names = ["yaw", "shoulder", "elbow", "wrist"]
        core.on_input("joint_states", SimpleNamespace(name=names, position=list(pose), velocity=[0.0] * 4))

    return send


def test_the_policy_starts_with_a_reset_state_when_it_takes_over_from_the_move_home(
    memory_file: Callable[..., Path], clock: FakeClock
) -> None:
    path = memory_file("arm")
    robot = _robot(path, "arm", clock, lambda rng, nan: _arm_inputs(robot.core)(rng, nan))
    robot.activate()
    robot.run(4)
    robot.core.go_home()
    robot.run(3)
    assert robot.faults[-3:] == [HOMING] * 3 and not any(ran for ran, _, _ in robot.periods[-3:])
    robot.core.resume_policy()  # the policy takes over
    first = len(robot.session.feeds)
    robot.run(4)
    resets = _check_against_offline_run(robot, path)
    assert resets == [True, False, False, False, True, False, False, False] and first == 4
