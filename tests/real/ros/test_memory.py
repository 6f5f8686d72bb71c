"""policy_node carries a policy's memory: a GRU policy's commands from the real ROS process equal the same odometry
replayed through `PolicyNodeCore` without ROS, and the offline run of the file in onnxruntime directly with the state
reset at each activation (and differ from a run that carries the state across the deactivation).

The scenario (scenarios/scenario_memory.py) sends each odometry message once its previous one has been answered, so
every command belongs to a known message, whatever the machine's speed. The reset rule's other cases (safe
commands, the operator, the move home) run on stepped time in tests/real/test_memory.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from robo_rl.real.controller import PolicyController
from robo_rl.real.node_core import NodeSettings, PolicyNodeCore
from robo_rl.real.profile import load_profile
from robo_rl.real.runtime import PolicyRuntime

from ..conftest import FakeClock
from ..memory_policy import RecordedSession, export_memory_policy, offline_run

MESSAGES = 40
"""Odometry messages per activation."""
PWM_TOLERANCE = 0.1
"""Of 65535: the command travels as float32 (a step of 0.004 at full scale)."""


@pytest.fixture(scope="module")
def result(ros_scenario: Callable[..., dict[str, Any]], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = export_memory_policy("quadrotor_crazyflie", tmp_path_factory.mktemp("memory") / "policy.onnx")
    return ros_scenario("scenario_memory.py", str(path), str(MESSAGES), timeout=300.0) | {"path": path}


def _fields(values: dict[str, list[float]]) -> dict[str, float]:
    """The odometry fields the node decodes from the scenario's message of `values`."""
    fields = {f"odom.pose.pose.position.{a}": v for a, v in zip("xyz", values["position"], strict=True)}
    fields |= {f"odom.pose.pose.orientation.{a}": v for a, v in zip("wxyz", (1.0, 0.0, 0.0, 0.0), strict=True)}
    fields |= {f"odom.twist.twist.linear.{a}": v for a, v in zip("xyz", values["linear"], strict=True)}
    return fields | {f"odom.twist.twist.angular.{a}": v for a, v in zip("xyz", values["angular"], strict=True)}


def _replay(path: Path, result: dict[str, Any]) -> tuple[np.ndarray, RecordedSession]:
    """The scenario's messages through `PolicyNodeCore` on stepped time: its commands `(n, 4)` and what its policy
    was fed."""
    profile, clock = load_profile("quadrotor_crazyflie"), FakeClock()
    runtime = PolicyRuntime(path, profile)
    session = runtime.session = RecordedSession(runtime.session)
    commands: list[list[float]] = []
    core = PolicyNodeCore(
        PolicyController(runtime, profile, clock, available=lambda _: False),
        NodeSettings(),
        {"odom": lambda message: dict(message.fields)},
        lambda fields, fault: commands.append([fields[f"data[{i}]"] for i in range(4)]),
        lambda level, message: None,
        now_monotonic=clock,
        now_ros_ns=lambda: round(clock.now * 1e9),
    )
    core.on_input("odom", SimpleNamespace(fields=_fields(result["first"])))  # observed while inactive
    replayed = []
    for phase in result["phases"]:
        core.activate()
        for values in phase["messages"]:
            clock.advance(profile.dt)
            core.on_input("odom", SimpleNamespace(fields=_fields(values)))
        replayed += commands[-len(phase["messages"]) :]
        core.stop("deactivated")
    return np.array(replayed), session


def _pwm(actions: np.ndarray) -> np.ndarray:
    """The Crazyflie profile's command of motor actions in [-1, 1]: 32767.5 + 32767.5 * action."""
    return 32767.5 + 32767.5 * np.clip(actions, -1.0, 1.0)


def test_policy_node_carries_the_state_and_resets_it_at_each_activation(result: dict[str, Any]) -> None:
    assert result["configure"] and result["activate_0"] and result["activate_1"], result["logs"]["policy_node"]
    assert result["commands_while_inactive"] == 0
    assert "4 actions, memory gru of 8, onnxruntime" in result["logs"]["policy_node"]  # the configure log says so
    answered = [len(phase["commands"]) for phase in result["phases"]]
    assert answered == [MESSAGES, MESSAGES], f"answered {answered}: {result['logs']['policy_node']}"
    sent = np.array([command for phase in result["phases"] for command in phase["commands"]])
    replayed, session = _replay(result["path"], result)
    np.testing.assert_allclose(sent, replayed, atol=PWM_TOLERANCE)
    obs = [feed["obs"][0] for feed in session.feeds]
    assert len(obs) == 2 * MESSAGES
    activations = [t % MESSAGES == 0 for t in range(2 * MESSAGES)]
    actions, _ = offline_run(result["path"], obs, activations)
    np.testing.assert_allclose(sent, _pwm(actions), atol=PWM_TOLERANCE)
    carried, _ = offline_run(result["path"], obs, [t == 0 for t in range(2 * MESSAGES)])
    assert np.abs(sent[MESSAGES:] - _pwm(carried)[MESSAGES:]).max() > 10.0  # the reset at reactivation shows
