"""policy_node with the quadrotor_px4 profile against a stand-in PX4 on the real px4_msgs types (scenario_px4.py):
the take-over on a "policy" request (vehicle_request) ramped in from the hold command, frames, microsecond stamps,
the offboard heartbeat, no arming unless asked, the hand-back on a fault (to PX4's Hold mode: zero body rates at the
profile's hover thrust with the heartbeat until PX4 accepts DO_SET_MODE AUTO_LOITER, then silence; nothing when PX4
is not in offboard), VehicleStatus read on v1.16's fmu/out/vehicle_status_v1, target_system / target_component,
VehicleCommandAck: a denied request sent again, and ActuatorMotors in PX4's motor order (no hand-over section: the
fault goes silent at once)."""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml

from robo_rl.actuator import actuator_of
from robo_rl.api.configs import preset
from robo_rl.config import config_hash
from robo_rl.export.onnx import PolicyMetadata, export_onnx
from robo_rl.sim import make

# The probe policy: body-rate actions 0.1 × the FLU body rates, thrust action -1 × the ENU height error; the
# profile scales rates by (10, 10, 5) rad/s and maps thrust action a to (a + 1) / 2 up.
WEIGHTS = {
    ("roll_rate", "angular_velocity_x"): 0.1,
    ("pitch_rate", "angular_velocity_y"): 0.1,
    ("yaw_rate", "angular_velocity_z"): 0.1,
    ("collective_thrust", "position_error_z"): -1.0,
}
HOLD_US = 300_000  # quadrotor_px4.yaml px4.fault_hold, 0.3 s


@pytest.fixture(scope="module")
def probe_policy(linear_policy: Callable[..., Path]) -> Path:
    return linear_policy("quadrotor_px4", WEIGHTS)


def _run(ros_scenario: Callable[..., dict[str, Any]], policy: Path, requests: str) -> dict[str, Any]:
    result = ros_scenario("scenario_px4.py", str(policy), requests, timeout=180.0)
    assert result["ready"], result["logs"]["policy_node"]
    return result


@pytest.fixture(scope="module")
def unasked(ros_scenario: Callable[..., dict[str, Any]], probe_policy: Path) -> dict[str, Any]:
    return _run(ros_scenario, probe_policy, "none")


@pytest.fixture(scope="module")
def asked(ros_scenario: Callable[..., dict[str, Any]], probe_policy: Path) -> dict[str, Any]:
    return _run(ros_scenario, probe_policy, "offboard+arm")


def test_px4_frames_stamps_heartbeat_and_no_arming_by_default(unasked: dict[str, Any]) -> None:
    result = unasked
    sent = [s for s in result["setpoints"] if s[0] < result["stopped"]]
    # Nothing before the "policy" request; then the hold setpoint (zero rates at hover thrust 0.6) until PX4 is in
    # offboard (the stand-in's pilot switches it), then the ramp's first command, 1/100 (dt / ramp) of the way from the
    # hold command to the policy's (0.3 rad/s roll, see below).
    first = next(i for i, s in enumerate(sent) if s[3] != 0.0)
    hold = [s[3:] == pytest.approx((0.0, 0.0, 0.0, -0.6), abs=1e-6) for s in sent[:first]]
    assert first >= 100 and all(hold), result["logs"]["policy_node"]
    flying = sent[first:]
    assert len(flying) > 100, result["logs"]["policy_node"]
    assert flying[0][3] == pytest.approx(0.003, abs=1e-4)
    roll, pitch, yaw, thrust = flying[-1][3:]
    # FRD body rates (0.3, 0.5, 0.2) are FLU (0.3, -0.5, -0.2); the policy answers 0.1 × them, i.e. FLU rates
    # (0.3, -0.5, -0.1) rad/s, which are FRD (0.3, 0.5, 0.1): a sign slip in either conversion flips one.
    assert (roll, pitch, yaw) == pytest.approx((0.3, 0.5, 0.1), abs=1e-4)
    # 0.8 m up in NED (z -0.8) is 0.2 m below the ENU target 1.0: thrust action 0.2, up (0.2 + 1) / 2 = 0.6, FRD -0.6.
    assert thrust == pytest.approx(-0.6, abs=1e-4)
    # PX4 stamps are microseconds of the same clock: a stamp in ms, ns or of another clock is off by far more than the
    # few seconds a busy machine may take to deliver (the delays themselves: bench/ros_timing.py).
    assert max(abs(s[2] - s[1]) for s in flying) < 10_000_000
    beats = [b for b in result["heartbeats"] if b[0] < result["stopped"]]
    assert {tuple(b[3]) for b in beats} == {(False, False, False, False, True, False, False)}  # body_rate only
    # The heartbeat runs with the setpoints; its 10 Hz rate and its gaps (PX4 wants 2 Hz at least) are wall-clock
    # figures of bench/ros_timing.py.
    assert len(beats) >= 20
    assert max(abs(b[2] - b[1]) for b in beats) < 10_000_000
    assert result["commands"] == []  # never arms nor switches modes unless asked
    _, _, values = result["flight_diagnostics"]
    # VehicleStatus (message version 1) read on fmu/out/vehicle_status_v1: disarmed, in position mode (2).
    assert (values["px4_armed"], values["px4_nav_state"], values["px4_fault_phase"]) == ("False", "2", "")
    assert not [key for key in values if key.startswith("px4_request_")]


def test_px4_not_in_offboard_gets_nothing_on_a_fault(unasked: dict[str, Any]) -> None:
    result = unasked
    setpoints = result["setpoints"]
    last_good = max(i for i, s in enumerate(setpoints) if s[3] != 0.0)  # the policy's setpoints roll at 0.3 rad/s
    # The stand-in reports Position mode (nobody asked for offboard): PX4 is not flying our setpoints, so the fault
    # hands back with nothing sent (no hold, no mode switch over the pilot's mode), and PX4 keeps its own mode.
    assert setpoints[last_good + 1 :] == [] and result["commands"] == [], result["logs"]["policy_node"]
    _, _, values = result["last_diagnostics"]
    assert values["px4_handback"] == "PX4 holds (not in offboard: nav_state 2)"
    assert values["handover_mode"] == "vehicle"


def test_px4_fault_switches_px4_to_hold_with_zero_rates_at_hover_until_accepted(asked: dict[str, Any]) -> None:
    result = asked
    setpoints = result["setpoints"]
    last_good = max(i for i, s in enumerate(setpoints) if s[3] != 0.0)
    hold = setpoints[last_good + 1 :]
    # Odometry stops: after the staleness timeout, zero body rates at the profile's hover thrust (0.6 up: -0.6 FRD),
    # never a zero-thrust one ...
    assert hold, result["logs"]["policy_node"]
    assert [tuple(s[3:6]) for s in hold] == [(0.0, 0.0, 0.0)] * len(hold)
    assert [s[6] for s in hold] == pytest.approx([-0.6] * len(hold), abs=1e-4)
    # ... while the mode switch to Hold (DO_SET_MODE, custom main mode AUTO 4, sub mode LOITER 3) goes out: the
    # stand-in denies the first send and accepts the second, 0.1 s later ...
    switch = [c for c in result["commands"] if c[3] == 4.0]
    assert [tuple(c[1:]) for c in switch] == [(176, 1.0, 4.0, 7, 3, True, 0, 3.0), (176, 1.0, 4.0, 7, 3, True, 1, 3.0)]
    # ... within the profile's 0.3 s (by the node's own stamps, us; one per watchdog period), then nothing for the
    # rest of the recording: PX4 holds the vehicle itself.
    assert len(hold) <= 31 and hold[-1][1] - hold[0][1] < HOLD_US
    beats = [b[1] for b in result["heartbeats"]]
    assert len([b for b in beats if b > hold[-1][1]]) <= 1  # the heartbeat stops with the setpoints
    _, _, values = result["last_diagnostics"]
    assert values["px4_handback"] == "PX4 holds (acknowledged after 2 sends)"  # by the ack (VehicleStatus stopped)


def test_px4_requests_go_to_the_target_system_and_a_denied_one_is_sent_again(asked: dict[str, Any]) -> None:
    result = asked
    sent = [tuple(c[1:]) for c in result["commands"] if c[3] != 4.0]  # the hand-back's Hold: above
    # (command, param1, param2, target_system, target_component, from_external, confirmation): the stand-in denies
    # the first of each and accepts the second; offboard first, arm only once offboard is accepted.
    assert sent == [
        (176, 1.0, 6.0, 7, 3, True, 0, 0.0),
        (176, 1.0, 6.0, 7, 3, True, 1, 0.0),
        (400, 1.0, 0.0, 7, 3, True, 0, 0.0),
        (400, 1.0, 0.0, 7, 3, True, 1, 0.0),
    ]
    # After 1 s of setpoint stream: the requests go with the 11th heartbeat (REQUEST_AFTER_HEARTBEATS; its timing on
    # stepped time: tests/real/test_px4.py), so 10 were received before the first request.
    assert len([b for b in result["heartbeats"] if b[0] < result["commands"][0][0]]) >= 10
    _, _, values = result["flight_diagnostics"]
    assert values["px4_request_offboard"] == "accepted after 2 sends"
    assert values["px4_request_arm"] == "accepted after 2 sends"
    # The stand-in's VehicleStatus after the acceptances: armed, in offboard (14).
    assert (values["px4_armed"], values["px4_nav_state"]) == ("True", "14")


# ActuatorMotors: a motor-mode hover policy (the quadrotor_crazyflie task: rotors in robo_rl's order front-right,
# back-right, back-left, front-left) sent to PX4 as ActuatorMotors. Its constant actions (-0.8, -0.4, 0, 0.4) are
# motor commands (a + 1) / 2 = (0.1, 0.3, 0.5, 0.7) by robo_rl rotor; PX4's quad-X motors 1..4 are front-right,
# back-left, front-left, back-right (CA_ROTOR0..3, see tests/real/test_px4.py), so control[0..3] = (0.1, 0.5, 0.7, 0.3).
MOTOR_BIAS = {"rotor_0": -0.8, "rotor_1": -0.4, "rotor_2": 0.0, "rotor_3": 0.4}


def _constant_motor_policy(path: Path) -> Path:
    """The motor-mode hover task's policy answering MOTOR_BIAS whatever it observes, with its actuator model
    (robo_rl.actuator): policy_node checks that control[i] = 0.5 + 0.5 * action is that model's map at
    ActuatorMotors' full scale 1 (robo_rl.real.runtime)."""
    cfg = preset("quadrotor_hover_ppo")
    env = make(cfg.task.name, num_envs=1, config=cfg.task.config)
    bias = torch.tensor([[MOTOR_BIAS[name] for name in env.action_spec.names]])

    class Constant(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x[:, :1] * 0.0 + bias

    metadata = PolicyMetadata(
        env.obs_spec, env.action_spec, env.dt, cfg.task.name, config_hash(cfg), "test", actuator=actuator_of(env)
    )
    return export_onnx(Constant(), metadata, path)


@pytest.fixture(scope="module")
def motors(ros_scenario: Callable[..., dict[str, Any]], tmp_path_factory: Any) -> dict[str, Any]:
    data = yaml.safe_load(resources.files("robo_rl.real").joinpath("profiles", "quadrotor_crazyflie.yaml").read_text())
    px4_profile = yaml.safe_load(resources.files("robo_rl.real").joinpath("profiles", "quadrotor_px4.yaml").read_text())
    for observation in data["observations"]:
        observation["source"] = observation["source"].replace("odom.twist.twist.angular", "state.angular_velocity")
    data |= {"name": "quadrotor_px4_motors", "driver": "px4", "inputs": px4_profile["inputs"]}
    data["commands"] = [
        {
            "type": "px4_msgs/msg/ActuatorMotors",
            "topic": "fmu/in/actuator_motors",
            "fields": [
                {"action": f"rotor_{k}", "field": f"control[{k}]", "scale": 0.5, "offset": 0.5} for k in range(4)
            ],
        }
    ]
    profile = tmp_path_factory.mktemp("px4_motors") / "quadrotor_px4_motors.yaml"
    profile.write_text(yaml.safe_dump(data))
    policy = _constant_motor_policy(profile.parent / "policy.onnx")
    result = ros_scenario("scenario_px4.py", str(policy), "none", str(profile), timeout=180.0)
    assert result["ready"], result["logs"]["policy_node"]
    return result


def test_px4_actuator_motors_go_out_in_px4_motor_order_and_fall_silent_at_once(motors: dict[str, Any]) -> None:
    sent = motors["motors"]
    assert len([m for m in sent if m[0] < motors["stopped"]]) > 100, motors["logs"]["policy_node"]
    # Every ActuatorMotors message is the policy's, reordered; no hold on a fault (and none before the odometry).
    assert [m[2] for m in sent] == [pytest.approx([0.1, 0.5, 0.7, 0.3], abs=1e-4)] * len(sent)
    beats = motors["heartbeats"]
    assert {tuple(b[3]) for b in beats} == {(False, False, False, False, False, False, True)}  # direct_actuator
    assert len([b for b in beats if b[1] > sent[-1][1]]) <= 1  # the heartbeat stops with them (see above)
