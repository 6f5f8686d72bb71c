"""The quadrotor tasks' vehicle card: everything a deployer needs that the policy graph does not hold.

`quadrotor_card(config)` describes a hover or tracking task (`HoverConfig`, `TrackConfig`) as a JSON object, which
training records (RUN/task.yaml) and export writes into `policy.onnx` as `robo_rl.vehicle` (`robo_rl.artifact`). It
is computed from the task's config alone (the frame file it names, the action map, the randomization), the same
inputs `QuadrotorHover` builds itself from. Its keys:

- `kind` "quadrotor", `version` 1 (`CARD_VERSION`, raised when a key changes meaning).
- `frames`: the world frame (z up, gravity along -z), the body frame (FLU), the quaternion's order and direction.
- `vehicle`: the training frame: mass, inertia, arm length, gravity, drag, thrust curve, torque per thrust, motor
  time constants and command range, and `rotors` in the action order (x, y in the body frame, spin seen from above,
  the sign of its yaw reaction torque), with `model` stating the equations they enter (thrust, motor lag, torque,
  force, rotation).
- `action`: the action mode, names, bounds, the hover action, and the map onto motor commands.
- `observation`: one group per part of the observation, in its order; each has `names` (the observation's entries),
  `quantity` (one of `QUANTITIES`), `unit`, `frame`, a `definition`, and what the quantity needs: the reference
  (`position_error`), the update, limit, time step and reset rule (`position_error_integral`), the count, order
  and reset value (`previous_actions`), the training noise (`noise_std`).
- `randomization`: each per-episode factor the training drew (`randomization.EPISODE_NAMES`) with its full range
  (a curriculum starts from a fraction of it), unit and meaning; the scale factors also with the frame's nominal
  value and the absolute range; the observation noise and the curriculum.
- `control`: the control period and the episode length.

Conventions are the simulator's (`robo_rl.sim.quadrotor.params`, `dynamics`, `hover`); a test rebuilds the
observation from the card alone and holds it to the simulator's (tests/sim/quadrotor/test_vehicle_card.py).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from robo_rl.sim.quadrotor.actions import make_action_map
from robo_rl.sim.quadrotor.dynamics import PARAM_SCALE_NAMES
from robo_rl.sim.quadrotor.hover_config import HoverConfig
from robo_rl.sim.quadrotor.params import QuadrotorParams, load_frame
from robo_rl.sim.quadrotor.randomization import EpisodeSampler
from robo_rl.sim.quadrotor.track import TrackConfig

CARD_KIND = "quadrotor"
CARD_VERSION = 1
QUANTITIES = (
    "position_error",
    "rotation_matrix",
    "velocity",
    "velocity_error",
    "angular_velocity",
    "reference_velocity",
    "position_error_integral",
    "previous_actions",
)
"""The observation quantities a quadrotor card defines (each group's `quantity`)."""
FRAMES = {
    "world": "right-handed, z up, gravity along -z; positions in m",
    "body": "FLU: x forward, y left, z up along the rotors' thrust; origin at the centre of mass",
    "quaternion": "(w, x, y, z), unit, Hamilton convention, rotating body-frame vectors into the world frame",
    "rotation_matrix": "R(q) body to world: R @ v_body = v_world; column c is body axis c in world coordinates",
    "rotor_spin": "seen from above (from +z body): ccw spins about +z body, cw about -z body",
}
MODEL = {
    "thrust": "T_i = c0 + c1 u_i + c2 u_i^2 N (thrust_curve) along body +z at rotor i's (x, y, 0), u_i its motor state",
    "motor": "du_i/dt = (command_i - u_i) / tau, tau = motor_rise_time_constant while command_i >= u_i, else "
    "motor_fall_time_constant; u_i in [0, 1] is the normalized motor command (PWM duty ratio) it has reached",
    "torque": "body torque = sum_i (y_i T_i, -x_i T_i, yaw_torque_sign_i torque_to_thrust T_i) N m: r_i x (0, 0, "
    "T_i) plus each rotor's reaction torque (a ccw rotor pushes the body cw)",
    "force": "m dv/dt = R (0, 0, sum_i T_i) - (0, 0, m gravity) - linear_drag * v, in the world frame",
    "rotation": "inertia * dw/dt = torque - w x (inertia * w), w the body rates; rotor inertia neglected",
}
ROTOR_SPEED_MOTOR = (
    "du_i/dt = (command_i - u_i) / motor_rise_time_constant while command_i >= u_i, else (command_i - u_i) (idle + "
    "(1 - idle) u_i) / motor_fall_time_constant, idle = {idle:g}: u_i is the rotor speed in command units (speed / "
    "full speed = idle + (1 - idle) u_i), spinning down at a rate proportional to the speed (motor_model rotor_speed)"
)


def _model(params: QuadrotorParams) -> dict[str, str]:
    if params.motor_model != "rotor_speed":
        return dict(MODEL)
    return MODEL | {"motor": ROTOR_SPEED_MOTOR.format(idle=params.motor_idle_speed)}


FACTOR_MEANINGS = {
    "mass_scale": "mass = the frame's mass x this",
    "inertia_x_scale": "Ixx = the frame's Ixx x this",
    "inertia_y_scale": "Iyy = the frame's Iyy x this",
    "inertia_z_scale": "Izz = the frame's Izz x this",
    "thrust_scale": "the whole thrust curve x this (and x battery_thrust_scale)",
    "torque_to_thrust_scale": "torque_to_thrust = the frame's x this",
    "motor_rise_time_constant_scale": "motor_rise_time_constant = the frame's x this",
    "motor_fall_time_constant_scale": "motor_fall_time_constant = the frame's x this",
    "thrust_to_weight": "where drawn (low < high or randomization.thrust_to_weight set): the thrust curve is rebuilt "
    "as k ((1 - b) u + b u^2) with 4 k = this x the drawn weight; else the frame's own ratio, not drawn",
    "thrust_curve_quadratic_share": "b of the rebuilt thrust curve (with thrust_to_weight); else the frame's own",
    "battery_thrust_scale": "the thrust curve x this: a battery between full (1) and sagged",
    "action_latency": "actions take effect after this many control steps (an integer, drawn uniformly)",
    "disturbance_acceleration_x": "a constant world-frame force per episode, as the acceleration it gives the frame",
    "disturbance_acceleration_y": "a constant world-frame force per episode, as the acceleration it gives the frame",
    "disturbance_acceleration_z": "a constant world-frame force per episode, as the acceleration it gives the frame",
    "disturbance_angular_acceleration_x": "a constant body torque per episode, as the angular acceleration it gives",
    "disturbance_angular_acceleration_y": "a constant body torque per episode, as the angular acceleration it gives",
    "disturbance_angular_acceleration_z": "a constant body torque per episode, as the angular acceleration it gives",
}
"""What each drawn factor (`randomization.EPISODE_NAMES`) does to the simulated vehicle."""
AIRFRAMES_NOTE = (
    "whole airframes drawn per episode from this distribution (robo_rl.sim.quadrotor.airframes: mass, arm, inertia, "
    "thrust curve, motor time constants, torque per thrust, latency) around the vehicle above; `factors` list what "
    "the randomization draws besides"
)


def quadrotor_card(config: HoverConfig) -> dict[str, Any]:
    """The vehicle card of a quadrotor hover (`HoverConfig`) or tracking (`TrackConfig`) task, as a JSON object."""
    params = load_frame(config.frame)
    hover = list(make_action_map(config.action_mode, params, config.ctbr).hover_action)
    return {
        "kind": CARD_KIND,
        "version": CARD_VERSION,
        "frames": dict(FRAMES),
        "vehicle": vehicle(params),
        "action": action(config, params, hover),
        "observation": observation(config, hover),
        "randomization": randomization(config, params),
        "control": {"dt": config.dt, "episode_length": config.episode_length, "substeps": config.substeps},
    }


def vehicle(params: QuadrotorParams) -> dict[str, Any]:
    """The frame's numbers, its rotors in the action order, and the model they enter."""
    rotors = [
        {"x": x, "y": y, "spin": spin, "yaw_torque_sign": -sign}
        for (x, y), spin, sign in zip(params.rotor_positions, params.rotor_spin, params.spin_signs, strict=True)
    ]
    return {
        "frame": params.name,
        "source": params.source,
        "mass": params.mass,
        "inertia": list(params.inertia),
        "arm_length": params.arm_length,
        "gravity": params.gravity,
        "linear_drag": list(params.linear_drag),
        "thrust_curve": list(params.thrust_curve),
        "torque_to_thrust": params.torque_to_thrust,
        "motor_rise_time_constant": params.motor_rise_time_constant,
        "motor_fall_time_constant": params.motor_fall_time_constant,
        "min_command": params.min_command,
        "max_command": params.max_command,
        "hover_command": params.hover_command,
        "rotors": rotors,
        "model": _model(params),
    }


def action(config: HoverConfig, params: QuadrotorParams, hover: list[float]) -> dict[str, Any]:
    """The action mode and its map onto motor commands (the nominal frame's, whatever the randomized plant is)."""
    names = list(make_action_map(config.action_mode, params, config.ctbr).names)
    common = {"mode": config.action_mode, "names": names, "low": -1.0, "high": 1.0, "hover_action": hover}
    if config.action_mode == "motor":
        rule = "command_i = min_command + (clip(a_i, -1, 1) + 1) / 2 (max_command - min_command), the motor command "
        rule += "rotor i's state follows (robo_rl.actuator states the same map)"
        return {**common, "map": rule}
    rule = "a_0 -> total thrust linearly from 4 T(min_command) at -1 to 4 T(max_command) at +1; a_1..3 -> body-rate "
    rule += "setpoints a * max_body_rate rad/s; torque = inertia * rate_gain * (setpoint - w); rotor thrusts by the "
    rule += "frame's mixer, each clipped to [T(min_command), T(max_command)]; commands by the frame's thrust curve"
    ctbr = {"max_body_rate": list(config.ctbr.max_body_rate), "rate_gain": list(config.ctbr.rate_gain)}
    return {**common, **ctbr, "map": rule}


def observation(config: HoverConfig, hover: list[float]) -> list[dict[str, Any]]:
    """The observation's groups in order (the names `QuadrotorHover.obs_spec` gives them)."""
    noise = config.randomization
    moving = isinstance(config, TrackConfig)
    groups = [
        _group("position_error", _xyz("position_error"), "m", "world", noise.position_noise,
               "p - p_ref(t): the centre of mass's position minus the reference's, t the time since the episode "
               "started", reference=reference(config)),
        _group("rotation_matrix", [f"rotation_{r}{c}" for r in range(3) for c in range(3)], "1", "body to world",
               0.0, "R(q) row-major: rotation_rc = R[r][c], each entry clipped to [-1, 1]", layout="row-major",
               clip=[-1.0, 1.0]),
        _group("velocity_error" if moving else "velocity", _xyz("velocity_error" if moving else "velocity"), "m/s",
               "world", noise.velocity_noise, "v - v_ref(t): the centre of mass's velocity minus the reference's"),
        _group("angular_velocity", _xyz("angular_velocity"), "rad/s", "body", noise.angular_velocity_noise,
               "the body rates about the body axes (FLU: roll about x forward, pitch about y left, yaw about z up), "
               "as a gyro measures them"),
    ]  # fmt: skip
    if moving:
        groups.append(_group("reference_velocity", _xyz("reference_velocity"), "m/s", "world", 0.0, "v_ref(t)"))
    if config.position_integral_limit > 0:
        groups.append(_integral(config))
    if config.action_history > 0:
        groups.append(_previous_actions(config.action_history, hover))
    return groups


def reference(config: HoverConfig) -> dict[str, Any]:
    """The reference the errors are taken to: the hover point, or the tracking task's figure eight."""
    if not isinstance(config, TrackConfig):
        return {"kind": "fixed_point", "position": list(config.target_position), "velocity": [0.0, 0.0, 0.0]}
    definition = "theta = 2 pi t / period + phase; p_ref = (A sin theta, A / 2 sin 2 theta, height), v_ref = "
    definition += "(A w cos theta, A w cos 2 theta, 0) with A = amplitude, w = 2 pi / period; phase ~ U(0, 2 pi) per "
    definition += "episode with random_phase, else 0"
    numbers = {"amplitude": config.amplitude, "period": config.period, "height": config.height}
    return {"kind": "figure_eight", **numbers, "random_phase": config.random_phase, "definition": definition}


def randomization(config: HoverConfig, params: QuadrotorParams) -> dict[str, Any]:
    """Each factor drawn per episode, with its full range; the observation noise and the curriculum."""
    spec = EpisodeSampler(config.randomization, params, torch.device("cpu"), torch.float64).spec
    nominal = _nominal_values(params)
    factors = []
    for name, low, high, unit in zip(spec.names, spec.low, spec.high, spec.units, strict=True):
        factor: dict[str, Any] = {"name": name, "low": low, "high": high, "unit": unit}
        factor["meaning"] = FACTOR_MEANINGS.get(name, "")
        if name in nominal:
            value, absolute_unit = nominal[name]
            factor.update(nominal=value, absolute=[low * value, high * value], absolute_unit=absolute_unit)
        factors.append(factor)
    r = config.randomization
    out = {
        "factors": factors,
        "drawn": "each factor uniformly in [low, high] at every episode start, independently",
        "observation_noise_std": {
            "position_error": r.position_noise,
            "velocity": r.velocity_noise,
            "angular_velocity": r.angular_velocity_noise,
        },
        "curriculum": dataclasses.asdict(config.curriculum),
    }
    airframes = getattr(config, "airframes", None)  # a task drawing whole airframes around the frame, where it can
    if airframes is not None:
        out["airframes"] = dataclasses.asdict(airframes)
        out["airframes_note"] = AIRFRAMES_NOTE
    return out


def _nominal_values(params: QuadrotorParams) -> dict[str, tuple[float, str]]:
    """(the frame's value, unit) of each scale factor of one number (not the thrust curve's)."""
    values = (
        params.mass, *params.inertia, None, params.torque_to_thrust, params.motor_rise_time_constant,
        params.motor_fall_time_constant,
    )  # fmt: skip
    units = ("kg", "kg*m^2", "kg*m^2", "kg*m^2", "", "m", "s", "s")
    named = zip(PARAM_SCALE_NAMES, values, units, strict=True)
    return {f"{name}_scale": (value, unit) for name, value, unit in named if value is not None}


def _group(
    quantity: str, names: list[str], unit: str, frame: str, noise: float, definition: str, **more: Any
) -> dict[str, Any]:
    group: dict[str, Any] = {"quantity": quantity, "names": names, "unit": unit, "frame": frame}
    group["definition"] = definition
    if noise > 0:
        group["noise_std"] = noise
        group["definition"] += f"; in training plus Gaussian noise of std {noise:g} per entry and step"
    return {**group, **more}


def _integral(config: HoverConfig) -> dict[str, Any]:
    limit = config.position_integral_limit
    return {
        "quantity": "position_error_integral",
        "names": _xyz("position_error_integral"),
        "unit": "m*s",
        "frame": "world",
        "definition": "the clipped time integral of the observed position error",
        "input": _xyz("position_error"),
        "dt": config.dt,
        "limit": limit,
        "initial_value": 0.0,
        "update": "I_k = clip(I_(k-1) + dt * e_k, -limit, limit) per axis, e_k the position_error entries of the same "
        "observation k (as observed, noise included); updated before it is observed, so observation k holds I_k",
        "reset": "I_(-1) = initial_value at the start of every episode (on a robot: when the policy takes control), "
        "so an episode's first observation holds clip(dt * e_0)",
    }


def _previous_actions(count: int, hover: list[float]) -> dict[str, Any]:
    return {
        "quantity": "previous_actions",
        "names": [f"previous_action_{k}_{i}" for k in range(count) for i in range(4)],
        "unit": "1",
        "frame": "action",
        "definition": "the policy's own actions, clipped to [-1, 1], as it output them (before any action latency)",
        "count": count,
        "order": "newest first: previous_action_k_i is entry i of the action output k + 1 steps before this "
        "observation (k = 0: the action just applied)",
        "initial_value": hover,
        "reset": "every previous_action_k_i = initial_value[i] at the start of every episode (before its first action)",
    }


def _xyz(prefix: str) -> list[str]:
    return [f"{prefix}_{axis}" for axis in "xyz"]
