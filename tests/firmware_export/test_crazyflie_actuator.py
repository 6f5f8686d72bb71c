"""One thrust path from the policy to the motors (issue 32), on the Crazyflie target: the generated controller
turns an action into the motor command (PWM ratio) by the actuator model the policy file states, exactly as
`robo_rl.actuator.MotorActuator.command` and the training simulator's action map do; and it computes the
position error integral observation by the training environment's rule.

The PWM convention is crazyflie-firmware's: in controlModeForce, `powerDistributionForce`
(src/modules/src/power_distribution_quadrotor.c) sends normalizedForces[i], clipped to [0, 1], as
`f * UINT16_MAX` to motor i, so the normalized motor command u is the PWM duty ratio (0..65535).
"""

from __future__ import annotations

import ctypes
import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch

from robo_rl.actuator import CRAZYFLIE_PWM_FULL_SCALE, MotorActuator, actuator_of
from robo_rl.firmware_export.boards.crazyflie import CRAZYFLIE_POSITION_ERROR_CLIP
from robo_rl.firmware_export.targets import export_target
from robo_rl.sim import make
from robo_rl.sim.quadrotor.actions import make_action_map

ACTIONS_OUTSIDE = (-1.7, -1.0, -0.999, -0.3, 0.0, 0.25, 0.5, 0.999, 1.0, 1.4)
"""Actions at, between and beyond the bounds [-1, 1] (the map clips them first)."""
COMMAND_TOLERANCE = 1e-6  # float32 in C against float64


def _load_targets_module() -> ModuleType:
    """test_targets.py, for its quadrotor policy builder and host controller (the tests import in importlib mode)."""
    path = Path(__file__).with_name("test_targets.py")
    spec = importlib.util.spec_from_file_location("_crazyflie_actuator_targets", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


targets = _load_targets_module()


def _motor_commands(controller: object, actions_by_rotor: np.ndarray) -> np.ndarray:
    """The generated `robo_rl_cf_motor_command(i, action)` of every element of `(n, 4)` (column i: rotor i)."""
    lib = controller.lib  # type: ignore[attr-defined]
    lib.cf_test_motor_command.restype = ctypes.c_float
    lib.cf_test_motor_command.argtypes = (ctypes.c_int, ctypes.c_float)
    return np.array([[lib.cf_test_motor_command(i, float(a)) for i, a in enumerate(row)] for row in actions_by_rotor])


def test_thrust_parity_generated_c_onnxruntime_and_the_simulator(tmp_path: Path) -> None:
    """For the hover task's default frame: the C motor command of the policy's actions, the onnxruntime actions
    through MotorActuator.command, and the simulator's own motor-mode action map give the same motor command,
    and so (through the frame's thrust curve) the same rotor forces.

    Assumes the issue-32 simulator (lead's part): `QuadrotorHover.actuator` and `make_action_map("motor", params)`
    returning the normalized motor command u (4, N), not a rotor speed."""
    env = make("quadrotor/hover", num_envs=1)
    actuator = actuator_of(env)  # what export records: env.actuator with the env's hover action
    params = env.params  # type: ignore[attr-defined]
    assert isinstance(actuator, MotorActuator) and actuator.pwm_full_scale == CRAZYFLIE_PWM_FULL_SCALE
    assert (actuator.command_low, actuator.command_high) == (params.min_command, params.max_command)
    assert actuator.thrust_curve == tuple(params.thrust_curve) and actuator.hover_action == env.hover_action[0]
    policy = targets.quadrotor_policy(tmp_path / "policy.onnx", actuator=actuator)
    app = export_target(policy, "crazyflie", tmp_path / "cf").out_dir
    controller = targets._Controller(app, tmp_path)

    obs = np.random.default_rng(5).normal(0.0, 1.5, (64, len(targets.QUADROTOR_OBS))).astype(np.float32)
    by_rotor = targets._onnxruntime(policy, obs)[:, [1, 0, 2, 3]]  # the file's order: rotor_1, rotor_0, 2, 3
    actions = np.concatenate([by_rotor, np.repeat(np.array(ACTIONS_OUTSIDE)[:, None], 4, axis=1)])
    in_c = _motor_commands(controller, actions)
    in_python = np.vectorize(actuator.command)(actions.astype(np.float64))
    clipped = torch.tensor(np.clip(actions, -1.0, 1.0).T, dtype=torch.float64)  # (4, N), as the env clips
    in_sim = make_action_map("motor", params, dtype=torch.float64)(clipped, torch.zeros(3, len(actions))).T.numpy()

    np.testing.assert_allclose(in_c, in_python, atol=COMMAND_TOLERANCE, rtol=0)
    np.testing.assert_allclose(in_sim, in_python, atol=1e-12, rtol=0)
    assert in_python.min() >= actuator.command_low and in_python.max() <= actuator.command_high
    forces = [np.vectorize(params.rotor_thrust)(u) for u in (in_c, in_python, in_sim)]
    np.testing.assert_allclose(forces[0], forces[1], atol=1e-6 * params.max_rotor_thrust, rtol=0)
    np.testing.assert_allclose(forces[2], forces[1], atol=1e-12, rtol=0)
    # The hover action's command carries the weight on the nominal curve.
    assert actuator.hover_action is not None
    hover_force = 4.0 * actuator.thrust(actuator.command(actuator.hover_action))
    assert hover_force == pytest.approx(params.weight, rel=1e-6)


def test_motor_command_of_a_model_with_a_command_range(tmp_path: Path) -> None:
    """A model that does not span the whole PWM range (u in [0.1, 0.9], e.g. an idle floor and a thrust cap):
    action -1 sends 10 % PWM, +1 sends 90 %, linear in between, in C as in Python."""
    actuator = MotorActuator((0.01, 0.05, 0.2), 0.006, 0.03, 0.06, command_low=0.1, command_high=0.9, hover_action=0.0)
    policy = targets.quadrotor_policy(tmp_path / "policy.onnx", actuator=actuator)
    app = export_target(policy, "crazyflie", tmp_path / "cf").out_dir
    controller = targets._Controller(app, tmp_path)
    actions = np.repeat(np.array(ACTIONS_OUTSIDE)[:, None], 4, axis=1)
    in_c = _motor_commands(controller, actions)
    expected = 0.1 + (np.clip(actions, -1, 1) + 1.0) / 2.0 * 0.8  # hand-computed
    np.testing.assert_allclose(in_c, expected, atol=COMMAND_TOLERANCE, rtol=0)
    assert [actuator.pwm(a) for a in (-1.0, 0.0, 1.0)] == [6554, 32768, 58982]  # round(u * 65535)
    header = (app / "src" / "robo_rl_crazyflie_map.h").read_text()
    assert "#define ROBO_RL_CF_INITIAL_ACTION (0.0f)" in header and "sqrtf" not in header


INTEGRAL_NAMES = [f"position_error_integral_{a}" for a in "xyz"]


def _integral_reference(errors: np.ndarray, dt: float, clip: float, limit: float) -> np.ndarray:
    """The training rule, per policy step k: I_k = clip(I_{k-1} + dt * clip(e_k, -clip, clip), -L, L), I_{-1} = 0."""
    integral, out = np.zeros(3), []
    for error in errors:
        integral = np.clip(integral + dt * np.clip(error, -clip, clip), -limit, limit)
        out.append(integral)
    return np.array(out)


def test_position_error_integral_in_c_follows_the_training_rule(tmp_path: Path) -> None:
    """The controller's position_error_integral_* observations over a flight: integrated at each policy step from
    the clipped position error, clipped to the metadata bound, held between policy steps, and restarted from 0 at
    the next hand-over after a fault."""
    names = targets.QUADROTOR_OBS[:3] + INTEGRAL_NAMES + targets.QUADROTOR_OBS[3:]
    limit, dt, clip = 0.02, 0.01, CRAZYFLIE_POSITION_ERROR_CLIP
    policy = targets.quadrotor_policy(tmp_path / "policy.onnx", obs_names=names, integral_limit=limit)
    app = export_target(policy, "crazyflie", tmp_path / "cf").out_dir
    defines = ("ROBO_RL_CF_TAKEOFF_MIN_MS=0u", "ROBO_RL_CF_RAMP_MS=0u")
    controller = targets._Controller(app, tmp_path, defines, obs_dim=len(names))
    reference = np.array([0.0, 0.0, 1.0, 0.0, 0.0, 0.0])
    ground = np.concatenate([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0], np.zeros(6)])

    def state(error: tuple[float, float, float]) -> np.ndarray:
        return np.concatenate([np.add(reference[:3], error), [0.0, 0.0, 0.0, 1.0], np.zeros(6)])

    # Errors within the clip, then beyond it in x (0.8 m: integrated as 0.5 m), long enough to reach +-L.
    errors = np.array([(0.3, -0.2, 0.1)] * 3 + [(0.8, -0.4, -0.3)] * 5 + [(-0.2, 0.1, 0.45)] * 4)
    assert controller.step(ground, reference, timestamp=0, position_mode=False, step=999)[0] == -1
    seen = []
    for k, error in enumerate(errors):
        tick = 1000 + 10 * k
        mode, _, obs = controller.step(state(error), reference, timestamp=k + 1, position_mode=True, step=tick)
        assert mode == 2
        seen.append(obs[3:6].astype(np.float64))
        # between policy steps the integral is held, whatever the state does
        controller.step(state((0.4, 0.4, 0.4)), reference, timestamp=k + 1, position_mode=True, step=tick + 5)
    expected = _integral_reference(errors, dt, clip, limit)
    np.testing.assert_allclose(seen, expected, atol=1e-7, rtol=0)
    assert np.max(np.abs(expected)) == pytest.approx(limit)  # the limit was reached
    kept = np.zeros(3, np.float32)
    controller.lib.cf_test_position_error_integral(kept.ctypes.data_as(ctypes.POINTER(ctypes.c_float)))
    np.testing.assert_allclose(kept, expected[-1], atol=1e-7)

    # A fault (the setpoint stream stops) hands back to the PID; the next hand-over starts the integral at 0.
    last = len(errors)
    assert controller.step(state(errors[-1]), reference, timestamp=last, position_mode=True, step=2000)[0] == -1
    assert controller.step(ground, reference, timestamp=last + 1, position_mode=False, step=2010)[0] == -1
    mode, _, obs = controller.step(state((0.1, 0.2, -0.3)), reference, last + 2, position_mode=True, step=2020)
    assert mode == 2
    np.testing.assert_allclose(obs[3:6], dt * np.array([0.1, 0.2, -0.3]), atol=1e-7)


def test_crazyflie_target_refuses_an_integral_without_a_finite_symmetric_bound(tmp_path: Path) -> None:
    names = targets.QUADROTOR_OBS + INTEGRAL_NAMES
    policy = targets.quadrotor_policy(tmp_path / "policy.onnx", obs_names=names, integral_limit=math.inf)
    with pytest.raises(ValueError, match=r"position_error_integral_x needs finite bounds \[-L, L\]"):
        export_target(policy, "crazyflie", tmp_path / "cf")
