"""The PX4 profile states its airframe (the Holybro X500 of PX4's Gazebo SITL model) and deploys only a policy trained
on it or on several airframes (robo_rl.real.airframe); the X500 policy flies the simulated X500 through the deploy
core (PolicyNodeCore: PX4 odometry in, VehicleRatesSetpoint fields out), its observation, the position error's
integral included, the simulator's own at every step."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch

from robo_rl.actuator import actuator_of
from robo_rl.api.configs import preset
from robo_rl.build import build_policy
from robo_rl.config import config_hash, to_dict
from robo_rl.export.onnx import PolicyMetadata, export_onnx
from robo_rl.real.airframe import airframe_mismatches, profile_frame
from robo_rl.real.command import command_actions
from robo_rl.real.controller import PolicyController
from robo_rl.real.derive import px4_odometry
from robo_rl.real.node_core import NodeSettings, PolicyNodeCore
from robo_rl.real.profile import load_profile
from robo_rl.real.runtime import PolicyRuntime, ProfileMismatchError
from robo_rl.sim import make
from robo_rl.sim.quadrotor.airframes import AirframeDistribution
from robo_rl.sim.quadrotor.params import frame_names
from robo_rl.sim.quadrotor.presets import HOVER_TRAINING, HOVER_X500_EVALUATION, HOVER_X500_TRAINING

from .conftest import FakeClock, export_linear_policy

PX4 = load_profile("quadrotor_px4")
CRAZYFLIE_CTBR = json.dumps(to_dict(replace(HOVER_TRAINING, action_mode="ctbr")), sort_keys=True)
"""The recorded task config of a ctbr hover policy trained on the Crazyflie 2.1 (the hover preset's frame)."""
REFUSED_CRAZYFLIE = (
    "frame: the policy was trained on frame 'crazyflie_2_1', profile 'quadrotor_px4' flies frame 'px4_x500': deploy "
    "a policy trained on frame 'px4_x500' or on several airframes (airframes in its task config)"
)
INTEGRALS = ("position_error_integral_x", "position_error_integral_y", "position_error_integral_z")


def _recorded(**changes: object) -> str:
    """The recorded task config of the X500 preset with `changes` (JSON keys of the hover config)."""
    return json.dumps(to_dict(HOVER_X500_TRAINING) | changes, sort_keys=True)


def test_the_px4_profile_flies_a_bundled_frame_and_observes_the_integral() -> None:
    assert profile_frame(PX4) == "px4_x500" and "px4_x500" in frame_names()
    assert profile_frame(load_profile("quadrotor_crazyflie")) == ""
    # The hover preset's observation, integral included, in the simulator's order (what the X500 preset trains on).
    env = make("quadrotor/hover", num_envs=1, config=HOVER_X500_TRAINING)
    assert PX4.obs_names == env.obs_spec.names and PX4.action_names == env.action_spec.names
    assert {o.name: o.source for o in PX4.observations if o.name in INTEGRALS} == {
        f"position_error_integral_{a}": f"integral(state.position_error.{a})" for a in "xyz"
    }


def test_a_policy_trained_on_crazyflie_dynamics_is_refused_naming_its_frame() -> None:
    assert airframe_mismatches(CRAZYFLIE_CTBR, PX4) == [REFUSED_CRAZYFLIE]
    assert airframe_mismatches(_recorded(), PX4) == []
    names_none = "frame: the policy names no frame, profile 'quadrotor_px4' flies frame 'px4_x500': deploy"
    assert airframe_mismatches(json.dumps({"imported": "sb3"}), PX4)[0].startswith(names_none)
    for missing in (None, "", "not json", "[1, 2]"):
        (message,) = airframe_mismatches(missing, PX4)
        assert message.startswith("frame: the policy does not record the task config it was trained with"), missing
        assert message.endswith("profile 'quadrotor_px4' flies frame 'px4_x500' (export the run with robo-rl export)")
    # A profile that states no frame checks none.
    assert airframe_mismatches(None, load_profile("quadrotor_crazyflie")) == []


def test_a_multi_airframe_policy_fits_whatever_frame_it_names() -> None:
    """A hover config with `airframes` set (an AirframeDistribution, recorded as its fields) trained across airframes:
    its `frame` is only the nominal one. (Such a policy commands motors today, so the PX4 rates profile still refuses
    it by its action names; a PX4 profile with ActuatorMotors commands would take it.)"""
    crazyflie = json.loads(CRAZYFLIE_CTBR)
    assert airframe_mismatches(json.dumps(crazyflie | {"airframes": to_dict(AirframeDistribution())}), PX4) == []
    for unset in (None, {}):
        assert airframe_mismatches(json.dumps(crazyflie | {"airframes": unset}), PX4) == [REFUSED_CRAZYFLIE]


def _crazyflie_ctbr_policy(path: Path, task_config: str | None) -> Path:
    """A (randomly initialized) ctbr hover policy of the Crazyflie 2.1 whose observation and actions are exactly the
    PX4 profile's, recording `task_config`."""
    cfg = preset("quadrotor_hover_ppo")
    env = make(cfg.task.name, num_envs=1, config=cfg.task.config, params=("action_mode=ctbr",))
    torch.manual_seed(0)
    metadata = PolicyMetadata(
        env.obs_spec, env.action_spec, env.dt, cfg.task.name, config_hash(cfg), "test", task_config,
        actuator=actuator_of(env),
    )  # fmt: skip
    return export_onnx(build_policy(cfg, env).deterministic_actor(), metadata, path)


def test_the_deploy_core_refuses_the_crazyflie_policy_on_the_px4_profile(
    tmp_path: Path, policy_file: Callable[[str], Path], clock: FakeClock
) -> None:
    """The policy's names, units, bounds and dt all fit the profile (PolicyRuntime takes it): only its frame does
    not, and PolicyController (what policy_node configures) refuses it with one line naming both frames."""
    path = _crazyflie_ctbr_policy(tmp_path / "crazyflie_ctbr.onnx", CRAZYFLIE_CTBR)
    runtime = PolicyRuntime(path, PX4)
    with pytest.raises(ProfileMismatchError) as info:
        PolicyController(runtime, PX4, clock, available=lambda _: False)
    assert str(info.value) == f"policy crazyflie_ctbr.onnx does not fit profile 'quadrotor_px4': {REFUSED_CRAZYFLIE}"
    unrecorded = PolicyRuntime(_crazyflie_ctbr_policy(tmp_path / "unrecorded.onnx", None), PX4)
    with pytest.raises(ProfileMismatchError, match="does not record the task config it was trained with"):
        PolicyController(unrecorded, PX4, clock, available=lambda _: False)
    multi = json.dumps(json.loads(CRAZYFLIE_CTBR) | {"airframes": to_dict(AirframeDistribution())})
    multi_runtime = PolicyRuntime(_crazyflie_ctbr_policy(tmp_path / "multi.onnx", multi), PX4)
    PolicyController(multi_runtime, PX4, clock, available=lambda _: False)
    PolicyController(PolicyRuntime(policy_file("quadrotor_px4"), PX4), PX4, clock, available=lambda _: False)


@dataclass
class Flight:
    """What a closed-loop flight through the deploy core measured."""

    action_error: float
    """Largest |command sent - the policy's action on the simulator's own observation| over the compared steps."""
    integral_error: float
    """Largest |the deploy core's position error integral - the simulator's| (m s) over every step."""
    compared: int
    """Steps whose command was compared (not the first of an episode, not rate limited)."""
    crashes: int
    episodes: list[list[float]]
    """Per episode flown, the position error norm (m) at each step."""
    largest_integral: float
    """Largest |integral| the simulator observed (m s): the comparison is not of zeros."""


def _fly(policy: Path, steps: int, seed: int, episode_length: float) -> Flight:
    """Fly the simulated X500 (the X500 preset's evaluation frame) with `policy` through PolicyNodeCore on the
    quadrotor_px4 profile: each step the simulator's true state goes in as PX4's VehicleOdometry fields, the rates
    setpoint fields that come out are read back into actions (as sim_bridge does) and step the simulator. A new
    episode (the simulator's reset) starts with a new activation, as on the robot. The profile's hand-over section
    is left out: the policy commands from activation, as in the simulator (the ramp: test_handover.py)."""
    clock = FakeClock()
    profile = replace(PX4, handover=None)
    controller = PolicyController(PolicyRuntime(policy, profile), profile, clock, available=lambda _: False)
    sent: list[dict[str, float]] = []
    core = PolicyNodeCore(
        controller, NodeSettings(), {"odom": dict}, lambda fields, fault: sent.append(fields), lambda *_: None,
        now_monotonic=clock, now_ros_ns=lambda: round(clock.now * 1e9),
    )  # fmt: skip
    session = ort.InferenceSession(str(policy), providers=["CPUExecutionProvider"])
    config = replace(HOVER_X500_EVALUATION, episode_length=episode_length, backend="torch")
    env = make("quadrotor/hover", num_envs=1, seed=seed, config=config)
    integral = [env.obs_spec.names.index(name) for name in INTEGRALS]
    step_limit = np.array([a.rate_limit for a in PX4.actions]) * PX4.dt
    obs, command = env.reset(seed)[0].numpy(), np.array(PX4.safe_action)
    flight, first = Flight(0.0, 0.0, 0, 0, [[]], 0.0), True
    core.activate()
    for _ in range(steps):
        core.on_input("odom", {f"odom.{key}": value for key, value in px4_odometry(env.state[0].numpy()).items()})
        clock.advance(PX4.dt)
        gap = float(np.abs(controller.assembler.integrals - obs[integral]).max())
        flight.integral_error = max(flight.integral_error, gap)
        flight.largest_integral = max(flight.largest_integral, float(np.abs(obs[integral]).max()))
        expected = session.run(["action"], {"obs": obs[None].astype(np.float32)})[0][0]
        limited = bool(np.any(np.abs(expected - command) > step_limit))  # the safety filter's rate limit acted
        action = command_actions(controller.command_spec, sent[-1])
        command = np.array([action[name] for name in PX4.action_names])
        if not (first or limited):
            flight.action_error = max(flight.action_error, float(np.abs(command - expected).max()))
            flight.compared += 1
        flight.episodes[-1].append(float(np.linalg.norm(obs[:3])))
        result = env.step(torch.as_tensor(command, dtype=torch.float32)[None])
        obs, terminated, truncated = result[0][0].numpy(), bool(result[2][0]), bool(result[3][0])
        first = terminated or truncated
        if first:
            flight.crashes += int(terminated)
            flight.episodes.append([])
            core.stop("the episode ended")
            core.activate()
    return flight


PD_GAINS = {
    # A PD hover controller in the ctbr action mode with integral action on every axis, as a linear policy
    # (tests/real/ros/test_sim_graph.py's CTBR_HOVER_GAINS, which hover the X500 too, plus the integral terms, so
    # that every command depends on the integral the deploy core computes).
    ("collective_thrust", "position_error_z"): -0.5,
    ("collective_thrust", "velocity_z"): -0.3,
    ("collective_thrust", "position_error_integral_z"): -0.3,
    ("roll_rate", "position_error_y"): 0.15,
    ("roll_rate", "velocity_y"): 0.15,
    ("roll_rate", "rotation_12"): 0.5,
    ("roll_rate", "position_error_integral_y"): 0.05,
    ("pitch_rate", "position_error_x"): -0.15,
    ("pitch_rate", "velocity_x"): -0.15,
    ("pitch_rate", "rotation_02"): -0.5,
    ("pitch_rate", "position_error_integral_x"): -0.05,
    ("yaw_rate", "rotation_10"): -0.4,
}


def test_the_deploy_core_observes_what_the_simulated_x500_does(tmp_path: Path) -> None:
    """Two 2-s episodes of a linear PD policy (with integral terms) on the simulated X500 through the deploy core:
    at every step the core's position error integral is the simulator's (its update I_k = clip(I_(k-1) + dt e_k),
    from 0 at an episode's start = an activation), and every command the policy's action on the simulator's own
    observation; rate-limited steps and each episode's first (the deploy side's previous action is the safe
    command, the simulator's the hover action) are not compared."""
    hover = float(make("quadrotor/hover", num_envs=1, config=HOVER_X500_TRAINING).hover_action[0])
    policy = export_linear_policy("quadrotor_px4", tmp_path / "pd.onnx", PD_GAINS, {"collective_thrust": hover})
    flight = _fly(policy, steps=400, seed=3, episode_length=2.0)
    assert flight.crashes == 0 and len(flight.episodes) == 3 and len(flight.episodes[1]) == 200
    assert flight.integral_error < 1e-5 and flight.largest_integral > 0.05
    assert flight.compared >= 390 and flight.action_error < 1e-4
    assert max(flight.episodes[0][-20:]) < max(flight.episodes[0][:20])


@pytest.mark.slow
def test_the_px4_profile_flies_the_trained_x500_policy(trained_x500_hover_run: Path) -> None:
    """quadrotor_hover_x500_ppo's exported policy (seed 0) through the deploy core on the simulated X500, three 5-s
    episodes from random initial states (0.5 m, 30 degrees, 1 m/s, 2 rad/s off): no crash, each within the hover
    gate's criterion (mean error below 0.10 m over its last second), and every command the policy's own action on
    the simulator's observation."""
    flight = _fly(trained_x500_hover_run / "policy.onnx", steps=1500, seed=5, episode_length=5.0)
    assert flight.crashes == 0 and len(flight.episodes) == 4
    assert all(float(np.mean(errors[-100:])) < 0.10 for errors in flight.episodes[:3]), flight.episodes
    assert flight.integral_error < 1e-5 and flight.compared >= 1400 and flight.action_error < 1e-4
