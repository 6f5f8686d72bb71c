"""A chunked policy on the robot without ROS: which step of which chunk each tick sends (fake clock), the safe
command once every queued action is past, and the node's chunk parameters."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from robo_rl.chunks.execution import ChunkExecution
from robo_rl.real.controller import PolicyController
from robo_rl.real.node_core import NodeSettings, PolicyNodeCore
from robo_rl.real.policy_fit import ProfileMismatchError, mismatches
from robo_rl.real.profile import RobotProfile, load_profile
from robo_rl.real.ros.diagnostics import WARN
from robo_rl.real.runtime import PolicyRuntime

from .conftest import FakeClock, export_chunk_probe

DT = 0.02  # rc_car's control period; steering rate limit 10 /s: 0.2 per period


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_chunk_probe(tmp_path_factory.mktemp("chunks") / "policy.onnx", horizon=3)


def _controller(probe: Path, clock: FakeClock, execution: ChunkExecution) -> PolicyController:
    profile = load_profile("rc_car")
    return PolicyController(PolicyRuntime(probe, profile), profile, clock, lambda _: False, chunk_execution=execution)


def _observe(controller: PolicyController, lateral_offset: float) -> None:
    profile: RobotProfile = controller.profile
    fields = {o.source: 0.0 for o in profile.observations if not o.source.startswith("previous_action")}
    controller.observe({**fields, "track.lateral_offset": lateral_offset})


def _steering(controller: PolicyController) -> tuple[float, str]:
    out = controller.step()
    return round(float(out.safety.command[0]), 6), out.safety.fault


def test_receding_horizon_sends_the_step_due_now_then_the_safe_command_when_all_are_past(
    probe: Path, clock: FakeClock
) -> None:
    controller = _controller(probe, clock, ChunkExecution("receding"))
    _observe(controller, 0.0)  # chunk: steering 0.0, 0.1, 0.2 for now, +20 ms, +40 ms
    sent = []
    for delay in (0.001, 0.021, 0.0185, 0.02):  # ticks a little late or early take the nearest step
        clock.advance(delay)
        sent.append(_steering(controller))
    assert sent[:3] == [(0.0, ""), (0.1, ""), (0.2, "")]
    assert sent[3][0] == 0.0 and sent[3][1].startswith("action chunk spent: the newest chunk covers 0.06 s")
    assert controller.stale_inputs() == []  # the inputs are fresh (100 ms timeout): the chunk ran out first
    clock.advance(0.005)
    _observe(controller, 0.05)
    assert _steering(controller) == (0.05, "")  # a new observation: a new chunk, its step 0


def test_receding_horizon_keeps_its_chunk_for_execute_steps_despite_new_observations(
    probe: Path, clock: FakeClock
) -> None:
    controller = _controller(probe, clock, ChunkExecution("receding", execute=2))
    sent = []
    for tick in range(4):
        _observe(controller, 0.01 * tick)  # a new observation every period
        sent.append(_steering(controller)[0])
        clock.advance(DT)
    assert sent == [0.0, 0.1, 0.02, 0.12]  # chunk of tick 0: steps 0, 1; then tick 2's chunk: steps 0, 1


def test_temporal_ensembling_averages_the_chunks_covering_now_with_acts_weights(probe: Path, clock: FakeClock) -> None:
    decay = 0.5
    controller = _controller(probe, clock, ChunkExecution("ensemble", ensemble_decay=decay))
    sent = []
    for offset in (0.0, 0.04, None):  # observations at 0 and 20 ms; none at 40 ms
        if offset is not None:
            _observe(controller, offset)
        sent.append(_steering(controller)[0])
        clock.advance(DT)
    w = math.exp(-decay)  # the newer chunk's weight, the older one's is 1
    assert sent[0] == 0.0
    assert sent[1] == pytest.approx((0.1 + w * 0.04) / (1 + w), abs=1e-6)  # chunk 0's step 1, chunk 1's step 0
    assert sent[2] == pytest.approx((0.2 + w * 0.14) / (1 + w), abs=1e-6)  # their steps 2 and 1


def test_stale_inputs_give_the_safe_command_and_drop_the_queued_chunks(probe: Path, clock: FakeClock) -> None:
    controller = _controller(probe, clock, ChunkExecution("ensemble"))
    _observe(controller, 0.1)
    assert _steering(controller) == (0.1, "")
    clock.advance(0.12)  # past the staleness timeout of 0.1 s
    assert _steering(controller) == (0.0, "stale observation")
    assert not controller.chunks.chunks  # type: ignore[union-attr]
    clock.advance(0.001)
    _observe(controller, 0.0)
    assert _steering(controller) == (0.0, "")


def test_a_chunked_policy_must_fit_the_profile_per_step_and_the_node_checks_its_parameters(
    probe: Path, tmp_path: Path
) -> None:
    runtime = PolicyRuntime(probe)
    assert (runtime.action_chunk, runtime.action_dim) == (3, 2)
    np.testing.assert_allclose(runtime.chunk(np.zeros(runtime.obs_dim))[:, 0], [0.0, 0.1, 0.2], atol=1e-6)
    runtime.check(load_profile("rc_car"))  # a profile matches one step, as for an unchunked policy
    one_action = replace(runtime.info, action_names=("steering",), action_units=("1",), action_low=(-1.0,))
    assert mismatches(one_action, load_profile("rc_car")) == ["actions missing from the policy: ['drive']"]
    with pytest.raises(ProfileMismatchError, match=r"actions missing from the policy: \['rotor_0'"):
        runtime.check(load_profile("quadrotor_crazyflie"))
    with pytest.raises(ValueError, match=r"parameter 'chunk_execution': must be one of \('ensemble', 'receding'\)"):
        NodeSettings(chunk_execution="mean")
    with pytest.raises(ValueError, match=r"parameter 'chunk_execute': 4 > the policy's chunk of 3"):
        NodeSettings(chunk_execution="receding", chunk_execute=4).chunks(3)
    assert NodeSettings().chunks(3) == ChunkExecution("ensemble", 0.01, 0)  # the default: ensembling


def test_the_node_reports_a_spent_chunk_as_a_warning_and_its_chunking_in_diagnostics(
    probe: Path, clock: FakeClock
) -> None:
    controller = _controller(probe, clock, NodeSettings(trigger="timer").chunks(3))
    statuses: list[tuple[int, str]] = []
    faults: list[str] = []
    core = PolicyNodeCore(
        controller,
        NodeSettings(trigger="timer"),
        {spec.name: lambda message: dict(message) for spec in controller.profile.inputs},
        lambda fields, fault: faults.append(fault),
        lambda level, message: statuses.append((level, message)),
        now_monotonic=clock,
        now_ros_ns=lambda: round(clock.now * 1e9),
    )
    core.activate()
    _observe(controller, 0.0)
    for _ in range(4):
        core.tick()
        clock.advance(DT)
    assert faults[:3] == ["", "", ""] and faults[3].startswith("action chunk spent")
    assert statuses[-1][0] == WARN and statuses[-1][1].startswith("safe command: action chunk spent")
    values = core.diagnostics()
    assert values["action_chunk"] == 3 and values["chunk_execution"] == "ensemble" and values["safe_commands"] == 1
