"""PolicyRuntime on real exported policies: bundled profiles fit their tasks; mismatches are all listed."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from importlib import resources
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import yaml

from robo_rl.real.policy_fit import ProfileMismatchError, mismatches
from robo_rl.real.profile import bundled_profiles, load_profile, profile_from_dict
from robo_rl.real.runtime import PolicyFileError, PolicyRuntime


def _with_metadata(source: Path, target: Path, **changes: str | None) -> Path:
    """Copy of the policy at `source` with `robo_rl.KEY` metadata replaced (None removes the key)."""
    model = onnx.load(str(source))
    props = {p.key: p.value for p in model.metadata_props}
    for key, value in changes.items():
        if value is None:
            props.pop(f"robo_rl.{key}")
        else:
            props[f"robo_rl.{key}"] = value
    del model.metadata_props[:]
    onnx.helper.set_model_props(model, props)
    onnx.save_model(model, str(target))
    return target


@pytest.mark.parametrize("name", bundled_profiles())
def test_bundled_profile_accepts_a_policy_of_its_task(name: str, policy_file: Callable[[str], Path]) -> None:
    profile = load_profile(name)
    runtime = PolicyRuntime(policy_file(name), profile)
    rng = np.random.default_rng(0)
    obs = rng.normal(size=runtime.obs_dim)
    frames = {camera.name: rng.integers(0, 256, camera.shape, dtype=np.uint8) for camera in runtime.cameras}
    action = runtime(obs, frames)
    assert action.shape == (len(profile.actions),) and action.dtype == np.float64
    low, high = np.array([a.low for a in profile.actions]), np.array([a.high for a in profile.actions])
    assert np.all(action >= low) and np.all(action <= high)
    session = ort.InferenceSession(str(policy_file(name)), providers=["CPUExecutionProvider"])
    feed = {"obs": obs[None].astype(np.float32)} | {name: frame[None] for name, frame in frames.items()}
    expected = session.run(["action"], feed)[0][0]
    np.testing.assert_array_equal(action, expected)


def test_profile_of_another_robot_is_refused(policy_file: Callable[[str], Path]) -> None:
    with pytest.raises(ProfileMismatchError) as info:
        PolicyRuntime(policy_file("quadrotor_crazyflie"), load_profile("quadrotor_px4"))
    assert info.value.mismatches == (  # both observe the position error's integral: only the actions differ
        "actions missing from the policy: ['collective_thrust', 'roll_rate', 'pitch_rate', 'yaw_rate']",
        "actions not in the profile: ['rotor_0', 'rotor_1', 'rotor_2', 'rotor_3']",
    )
    assert str(info.value).startswith("policy quadrotor_crazyflie.onnx does not fit profile 'quadrotor_px4': ")


def test_every_mismatch_is_listed(policy_file: Callable[[str], Path], tmp_path: Path) -> None:
    source = policy_file("rc_car")
    runtime = PolicyRuntime(source)
    obs_names = list(runtime.info.obs_names)
    obs_names[0], obs_names[1] = obs_names[1], obs_names[0]
    obs_units = list(runtime.info.obs_units)
    obs_units[20] = "km/h"
    changed = _with_metadata(
        source,
        tmp_path / "changed.onnx",
        task="rc_car/drift",
        dt="0.05",
        obs_names=json.dumps(obs_names),
        obs_units=json.dumps(obs_units),
        action_high=json.dumps([1.0, 2.0]),
    )
    with pytest.raises(ProfileMismatchError) as info:
        PolicyRuntime(changed, load_profile("rc_car"))
    assert info.value.mismatches == (
        "task: policy 'rc_car/drift', profile 'rc_car/race'",
        "dt: policy 0.05 s, profile 0.02 s (tolerance 0.0001 s)",
        "observation order differs at index 0: policy 'lookahead_1_y', profile 'lookahead_1_x'",
        "observation 'vx' unit: policy 'km/h', profile 'm/s'",
        "action 'drive' bounds: policy [-1.0, 2.0], profile [-1.0, 1.0]",
    )


def test_dt_within_tolerance_is_accepted(policy_file: Callable[[str], Path], tmp_path: Path) -> None:
    changed = _with_metadata(policy_file("rc_car"), tmp_path / "dt.onnx", dt="0.02005")
    runtime = PolicyRuntime(changed, load_profile("rc_car"))
    assert runtime.info.dt == pytest.approx(0.02005) and not mismatches(runtime.info, load_profile("rc_car"))


def test_missing_or_malformed_metadata(policy_file: Callable[[str], Path], tmp_path: Path) -> None:
    no_dt = _with_metadata(policy_file("arm"), tmp_path / "no_dt.onnx", dt=None)
    with pytest.raises(PolicyFileError, match=r"missing metadata 'robo_rl\.dt'"):
        PolicyRuntime(no_dt)
    bad = _with_metadata(policy_file("arm"), tmp_path / "bad.onnx", action_low="not json")
    with pytest.raises(PolicyFileError, match=r"metadata 'robo_rl\.action_low' is not a JSON list of float"):
        PolicyRuntime(bad)


def test_unloadable_files(tmp_path: Path) -> None:
    with pytest.raises(PolicyFileError, match="no such policy file"):
        PolicyRuntime(tmp_path / "absent.onnx")
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\x00not an onnx model")
    with pytest.raises(PolicyFileError, match="not a loadable ONNX model"):
        PolicyRuntime(garbage)


def test_wrong_observation_shape(policy_file: Callable[[str], Path]) -> None:
    runtime = PolicyRuntime(policy_file("arm"))
    with pytest.raises(ValueError, match=r"observation shape \(3,\), policy expects \(14,\)"):
        runtime(np.zeros(3))


def test_the_crazyflie_profile_sends_the_pwm_of_the_policys_actuator_model(
    policy_file: Callable[[str], Path], tmp_path: Path
) -> None:
    """The hover policy states its actuator model (robo_rl.actuator): action -1..1 linear onto the motor command
    0..1, sent as PWM 0..65535 (crazyflie-firmware's power distribution: normalizedForces * UINT16_MAX). The
    bundled profile's data[i] = 32767.5 + 32767.5 * action is that map; one that is not is refused, naming the
    fields and both maps."""
    source = policy_file("quadrotor_crazyflie")
    runtime = PolicyRuntime(source, load_profile("quadrotor_crazyflie"))
    actuator = runtime.info.actuator
    assert actuator is not None and (actuator.command_low, actuator.command_high) == (0.0, 1.0)
    assert [actuator.pwm(a) for a in (-1.0, 1.0)] == [0, 65535]

    data = yaml.safe_load(resources.files("robo_rl.real").joinpath("profiles/quadrotor_crazyflie.yaml").read_text())
    fields = data["commands"][0]["fields"]
    fields[0] |= {"scale": 65535.0, "offset": 0.0}  # action as if it were the command itself
    fields[2] |= {"offset": 32768.5}
    with pytest.raises(ProfileMismatchError) as info:
        runtime.check(profile_from_dict(data))
    assert info.value.mismatches == (
        "std_msgs/msg/Float32MultiArray data[0] (rotor_0): profile sends 0 + 65535 * action, the policy's actuator "
        "model (robo_rl.actuator, PWM full scale 65535) 32767.5 + 32767.5 * action",
        "std_msgs/msg/Float32MultiArray data[2] (rotor_2): profile sends 32768.5 + 32767.5 * action, the policy's "
        "actuator model (robo_rl.actuator, PWM full scale 65535) 32767.5 + 32767.5 * action",
    )


def test_a_policy_with_another_command_range_is_refused_by_the_crazyflie_profile(
    policy_file: Callable[[str], Path], tmp_path: Path
) -> None:
    source = policy_file("quadrotor_crazyflie")
    actuator = PolicyRuntime(source).info.actuator
    assert actuator is not None
    narrower = dataclasses.replace(actuator, command_low=0.1, command_high=0.9)  # u = 0.5 + 0.4 * action
    policy = _with_metadata(source, tmp_path / "narrow.onnx", actuator=narrower.to_json())
    with pytest.raises(ProfileMismatchError, match=r"actuator model .* 32767.5 \+ 26214 \* action") as info:
        PolicyRuntime(policy, load_profile("quadrotor_crazyflie"))
    assert len(info.value.mismatches) == 4  # every rotor's field
    legacy = _with_metadata(source, tmp_path / "legacy.onnx", actuator=None, schema=None)
    assert PolicyRuntime(legacy, load_profile("quadrotor_crazyflie")).info.actuator is None  # nothing to check


def test_a_malformed_actuator_model_is_a_policy_file_error(policy_file: Callable[[str], Path], tmp_path: Path) -> None:
    policy = _with_metadata(policy_file("quadrotor_crazyflie"), tmp_path / "bad.onnx", actuator='{"kind": 3')
    with pytest.raises(PolicyFileError, match=r"metadata 'robo_rl\.actuator': is not JSON"):
        PolicyRuntime(policy)


def test_px4_actuator_motors_take_the_motor_command_itself(policy_file: Callable[[str], Path]) -> None:
    """px4_msgs ActuatorMotors.msg: `control[i]` is the motor's command in [0, 1] of full thrust (v1.15/v1.16), not
    a PWM count. So a motor policy's actuator model (action -1..1 onto u 0..1) is sent as control = 0.5 + 0.5 *
    action there, with full scale 1; the Crazyflie's PWM map (65535 per unit) is refused on ActuatorMotors."""
    runtime = PolicyRuntime(policy_file("quadrotor_crazyflie"))
    data = yaml.safe_load(resources.files("robo_rl.real").joinpath("profiles/quadrotor_crazyflie.yaml").read_text())
    rotors = [f["action"] for f in data["commands"][0]["fields"]]
    fields = [{"action": a, "field": f"control[{i}]", "scale": 0.5, "offset": 0.5} for i, a in enumerate(rotors)]
    data["commands"] = [{"type": "px4_msgs/msg/ActuatorMotors", "topic": "fmu/in/actuator_motors", "fields": fields}]
    data["driver"] = "px4"
    runtime.check(profile_from_dict(data))  # accepted: the model's own map at full scale 1
    for f in fields:
        f |= {"scale": 32767.5, "offset": 32767.5}
    with pytest.raises(
        ProfileMismatchError, match=r"control\[0\] \(rotor_0\): .* \(robo_rl.actuator, PWM full scale 1\)"
    ):
        runtime.check(profile_from_dict(data))
