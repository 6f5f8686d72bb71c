"""PolicyController end to end on real exported policies, driven by ControlLoop on an injected clock."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import numpy as np
import pytest

from robo_rl.real.command import command_actions, command_fields, package_available, select_command
from robo_rl.real.controller import ControlOutput, PolicyController
from robo_rl.real.loop import ControlLoop
from robo_rl.real.profile import (
    CommandField,
    CommandSpec,
    ProfileError,
    RobotProfile,
    load_profile,
    profile_from_dict,
)
from robo_rl.real.runtime import PolicyRuntime, ProfileMismatchError

from .conftest import FakeClock


def _fields(profile: RobotProfile, value: float = 0.1) -> dict[str, float]:
    return {o.source: value for o in profile.observations if not o.source.startswith("previous_action")}


def _controller(name: str, policy_file: Callable[[str], Path], clock: FakeClock) -> PolicyController:
    profile = load_profile(name)
    return PolicyController(PolicyRuntime(policy_file(name)), profile, clock, available=lambda _: False)


def test_crazyflie_command_is_pwm_within_range(policy_file: Callable[[str], Path], clock: FakeClock) -> None:
    controller = _controller("quadrotor_crazyflie", policy_file, clock)
    controller.observe(_fields(controller.profile))
    clock.advance(0.002)
    out = controller.step()
    assert out.safety.fault == "" and out.latency == pytest.approx(0.002)
    assert sorted(out.fields) == ["data[0]", "data[1]", "data[2]", "data[3]"]
    expected = 32767.5 + 32767.5 * out.safety.command
    np.testing.assert_allclose([out.fields[f"data[{i}]"] for i in range(4)], expected)
    # Rate limit 400 /s × 0.01 s: the first command is at most 4 above the safe -1 (motors off).
    assert np.all(out.safety.command <= -1.0 + 4.0 + 1e-9)


def test_previous_action_is_the_filtered_command(policy_file: Callable[[str], Path], clock: FakeClock) -> None:
    controller = _controller("quadrotor_crazyflie", policy_file, clock)
    controller.observe(_fields(controller.profile))
    sent = controller.step().safety.command
    obs = controller.assembler(controller.fields)
    first = [o.name for o in controller.profile.observations].index("previous_action_0_0")
    np.testing.assert_allclose(obs[first : first + 4], sent, rtol=1e-6)


def test_stale_observations_give_the_safe_command_within_one_period(
    policy_file: Callable[[str], Path], clock: FakeClock
) -> None:
    controller = _controller("rc_car", policy_file, clock)
    fields = _fields(controller.profile)
    outputs: list[tuple[float, ControlOutput]] = []

    def step() -> float | None:
        if clock.now < 100.2:  # the observation stream stops at t = 100.2 s
            controller.observe(fields)
        outputs.append((clock.now, controller.step()))
        return outputs[-1][1].latency

    stats = ControlLoop(controller.profile.dt, step, clock, clock.sleep).run(ticks=30)
    last_feed = max(t for t, _ in outputs if t < 100.2)
    first_safe = min(t for t, out in outputs if out.safety.fault)
    assert outputs[[t for t, _ in outputs].index(first_safe)][1].safety.fault == "stale observation"
    timeout = controller.profile.staleness_timeout
    assert last_feed + timeout < first_safe <= last_feed + timeout + controller.profile.dt + 1e-9
    assert all(out.safety.fault == "stale observation" for t, out in outputs if t >= first_safe)
    assert all(out.fields == {"linear.x": 0.0, "angular.z": 0.0} for t, out in outputs if t >= first_safe)
    assert stats.latency_count == sum(1 for _, out in outputs if not out.safety.fault)


def test_missing_and_non_finite_fields_give_the_safe_command(
    policy_file: Callable[[str], Path], clock: FakeClock
) -> None:
    controller = _controller("arm", policy_file, clock)
    fields = _fields(controller.profile)
    controller.observe({k: v for k, v in fields.items() if k != "target.point.z"})
    out = controller.step()
    assert out.safety.fault == "missing observation fields: target.point.z" and out.latency is None
    np.testing.assert_array_equal(out.safety.command, [0.1, 0.1, 0.1, 0.1])  # the arm holds its measured joints
    controller.observe({**fields, "joint_states.velocity[1]": math.nan})
    assert controller.step().safety.fault == "non-finite observation"
    controller.observe(fields)
    assert controller.step().safety.fault == ""


def test_estop_through_the_controller(policy_file: Callable[[str], Path], clock: FakeClock) -> None:
    controller = _controller("arm", policy_file, clock)
    controller.observe(_fields(controller.profile))
    controller.safety.estop()
    assert controller.step().safety.fault == "e-stop"
    controller.safety.reset()
    assert controller.step().safety.withheld  # the arm's pose before the reset is forgotten: nothing to start from
    controller.observe(_fields(controller.profile))
    assert controller.step().safety.fault == ""


def test_controller_refuses_a_mismatched_policy(policy_file: Callable[[str], Path], clock: FakeClock) -> None:
    with pytest.raises(ProfileMismatchError):
        PolicyController(PolicyRuntime(policy_file("arm")), load_profile("rc_car"), clock)


def test_command_selection_prefers_an_importable_package() -> None:
    profile = load_profile("rc_car")
    assert select_command(profile, lambda pkg: pkg == "ackermann_msgs").type.endswith("AckermannDriveStamped")
    assert select_command(profile, lambda pkg: False).type == "geometry_msgs/msg/Twist"
    assert package_available("numpy") and not package_available("no_such_package_robo_rl")


def test_command_fields_scale_offset_and_px4_body_frame() -> None:
    """Actions are FLU (the policy's frame); PX4's VehicleRatesSetpoint is FRD (PX4 user guide, "ROS 2 & PX4
    frame conventions"): roll keeps its sign, pitch and yaw rates and the thrust vector's z flip. Action pitch -0.5
    (FLU: about +y, left, negative = nose up) is +5 rad/s in FRD (about +y, right, positive = nose up)."""
    spec = load_profile("quadrotor_px4").commands[0]
    names = load_profile("quadrotor_px4").action_names
    got = command_fields(spec, names, np.array([1.0, 0.5, -0.5, 1.0]))
    assert got == {"thrust_body[2]": -1.0, "roll": 5.0, "pitch": 5.0, "yaw": -5.0}
    idle = command_fields(spec, names, np.array([-1.0, 0.0, 0.0, 0.0]))
    assert idle["thrust_body[2]"] == 0.0  # no thrust: -0.0 compares equal


def test_operator_action_replaces_the_policy_while_fresh(policy_file: Callable[[str], Path], clock: FakeClock) -> None:
    controller = _controller("quadrotor_crazyflie", policy_file, clock)
    controller.observe(_fields(controller.profile))
    policy_command = controller.step().safety.command
    controller.intervene([0.5, 2.0, -0.25, 0.0])
    out = controller.step()
    # The operator's action goes through the same filter: clipped to [-1, 1].
    assert out.intervened and out.safety.clipped
    np.testing.assert_allclose(out.safety.command, [0.5, 1.0, -0.25, 0.0])
    assert not np.allclose(out.safety.command, policy_command)
    clock.advance(controller.profile.staleness_timeout + 0.001)
    controller.observe(_fields(controller.profile))
    after = controller.step()
    assert not after.intervened and after.safety.fault == ""
    with pytest.raises(ValueError, match="intervention shape"):
        controller.intervene([0.0])


def test_estop_wins_over_the_operator(policy_file: Callable[[str], Path], clock: FakeClock) -> None:
    controller = _controller("quadrotor_crazyflie", policy_file, clock)
    controller.intervene([0.5, 0.5, 0.5, 0.5])
    controller.safety.estop()
    out = controller.step()
    assert out.safety.fault == "e-stop" and not out.intervened
    np.testing.assert_allclose(out.safety.command, controller.profile.safe_action)


def test_twist_fallback_commands_the_yaw_rate_of_the_steering_angle() -> None:
    """Twist→Ackermann converters (the common cmd_vel bridges of car stacks) read angular.z as a yaw rate and
    steer atan(wheelbase × yaw rate / speed): the rc_car profile's Twist writes v·tan(δ)/L, so they recover δ."""
    profile = load_profile("rc_car")
    twist = select_command(profile, lambda pkg: False)
    got = command_fields(twist, profile.action_names, np.array([1.0, 0.5]))  # full left, half speed
    delta, speed = 0.4189, 2.5
    assert got["linear.x"] == pytest.approx(speed)
    assert got["angular.z"] == pytest.approx(speed * math.tan(delta) / 0.3302)
    assert math.atan(0.3302 * got["angular.z"] / got["linear.x"]) == pytest.approx(delta)
    reverse = command_fields(twist, profile.action_names, np.array([1.0, -0.5]))  # left lock while reversing
    assert reverse["angular.z"] == pytest.approx(-got["angular.z"])
    assert command_fields(twist, profile.action_names, np.array([1.0, 0.0]))["angular.z"] == 0.0
    assert command_actions(twist, got) == pytest.approx({"steering": 1.0, "drive": 0.5})
    assert command_actions(twist, {"linear.x": 0.0, "angular.z": 0.0}) == {"drive": 0.0}  # no angle at standstill
    ackermann = select_command(profile, lambda pkg: True)
    fields = command_fields(ackermann, profile.action_names, np.array([1.0, 0.5]))
    assert fields == pytest.approx({"drive.steering_angle": delta, "drive.speed": speed})


def test_px4_commands_undo_to_the_actions() -> None:
    profile = load_profile("quadrotor_px4")
    spec = profile.commands[0]
    action = np.array([0.2, -0.3, 0.4, -0.5])
    got = command_actions(spec, command_fields(spec, profile.action_names, action))
    assert got == pytest.approx(dict(zip(profile.action_names, action.tolist(), strict=True)))


def test_an_ackermann_yaw_rate_needs_the_wheelbase_and_the_speed() -> None:
    fields = ({"action": "steering", "field": "angular.z", "transform": "ackermann_yaw_rate"},)
    with pytest.raises(ProfileError, match="wheelbase"):
        CommandSpec("geometry_msgs/msg/Twist", "cmd_vel", tuple(CommandField(**f) for f in fields))
    with pytest.raises(ProfileError, match=r"linear\.x"):
        CommandSpec("geometry_msgs/msg/Twist", "cmd_vel", tuple(CommandField(**f) for f in fields), wheelbase=0.33)


def test_a_command_type_can_be_chosen_among_the_profiles() -> None:
    profile = load_profile("rc_car")
    assert select_command(profile, lambda pkg: True, "geometry_msgs/msg/Twist").type == "geometry_msgs/msg/Twist"
    assert select_command(profile, lambda pkg: True, "auto").type.endswith("AckermannDriveStamped")
    with pytest.raises(ValueError, match="profile 'rc_car' commands ackermann_msgs/msg/AckermannDriveStamped"):
        select_command(profile, lambda pkg: True, "std_msgs/msg/Float32MultiArray")


class _IntegralEcho:
    """A stand-in PolicyRuntime whose action is its observation's integral entry: each command shows it."""

    action_chunk = 1
    action_dim = 1

    def __init__(self, obs_high: tuple[float, ...]) -> None:
        self.info = SimpleNamespace(obs_high=obs_high)

    def check(self, profile: RobotProfile) -> None:
        pass

    def reset_memory(self) -> None:
        pass  # no memory: nothing to reset

    def __call__(self, obs: np.ndarray, frames: object = None) -> np.ndarray:
        return np.array([obs[1]], dtype=np.float64)


def _integral_controller(clock: FakeClock) -> PolicyController:
    profile = profile_from_dict(
        {
            "name": "integrator",
            "kind": "quadrotor",
            "task": "toy",
            "dt": 0.1,
            "dt_tolerance": 0.0,
            "staleness_timeout": 0.5,
            "observations": [
                {"name": "error", "source": "state.error", "unit": "m"},
                {"name": "error_integral", "source": "integral(state.error)", "unit": "m*s"},
            ],
            "actions": [{"name": "u", "unit": "1", "low": -1.0, "high": 1.0, "safe": 0.0}],
            "commands": [{"type": "std_msgs/msg/Float32", "topic": "u", "fields": [{"action": "u", "field": "data"}]}],
        }
    )
    runtime = cast(PolicyRuntime, _IntegralEcho((math.inf, 0.35)))
    return PolicyController(runtime, profile, clock, available=lambda _: False)


def test_the_integral_runs_over_the_policys_own_commands_only(clock: FakeClock) -> None:
    """integral(state.error) at dt = 0.1 s of an error of 1 m: +0.1 per policy command, clipped at the policy's
    bound 0.35; an e-stop, stale inputs or an operator's action never add to it, and the policy's control starts it
    from 0 again afterwards (as a hand-over does on the Crazyflie)."""
    controller = _integral_controller(clock)

    def step() -> float:
        controller.observe({"state.error": 1.0})
        return float(controller.step().safety.command[0])

    assert [step() for _ in range(5)] == pytest.approx([0.1, 0.2, 0.3, 0.35, 0.35])
    controller.safety.estop()
    assert [step() for _ in range(3)] == [0.0, 0.0, 0.0]  # the safe command
    controller.restart()  # the node activates again
    assert [step() for _ in range(2)] == pytest.approx([0.1, 0.2])

    controller.intervene([-0.5])
    assert step() == -0.5 and controller.assembler.integrals == pytest.approx([0.2])
    clock.advance(1.0)  # the operator's action is stale: the policy takes over again, from 0
    assert step() == pytest.approx(0.1)

    clock.advance(1.0)  # no observation for longer than the staleness timeout
    assert controller.step().safety.fault == "stale observation"
    assert step() == pytest.approx(0.1)
