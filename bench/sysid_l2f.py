"""robo-rl sysid against an outside simulator: fly L2F's native Crazyflie (PyPI `l2f`, the Learning to Fly
simulator) through robo_rl's excitation flight, write the log as a Crazyflie CSV, identify a frame from it with
`robo-rl sysid` (starting from a deliberately wrong base frame) and print the fitted values against L2F's own.

    .venv/bin/python bench/sysid_l2f.py [--seconds 60] [--out-dir /tmp/sysid_l2f] [--json results.json]

L2F integrates with RK4 at 100 Hz, its motor states moving toward the commands with separate rise and fall time
constants, thrust c0 + c1 u + c2 u^2 per rotor on u in [0, 1] (its action a in [-1, 1] is u = (a + 1) / 2), rotors
in robo_rl's order and spin. The log's accelerometer is the central difference of L2F's velocities (L2F has no
IMU output in this state), rotated into the body frame.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BASE = {
    "name": "wrong_start",
    "mass": 0.0306,
    "arm_length": 0.028 * math.sqrt(2.0),
    "inertia": [1.4e-5, 1.4e-5, 2.4e-5],
    "thrust_curve": [0.0, 0.0, 0.125],
    "torque_to_thrust": 4.665e-3,
    "motor_rise_time_constant": 0.03,
    "motor_fall_time_constant": 0.03,
    "min_command": 0.0,
    "max_command": 1.0,
    "linear_drag": [0.0, 0.0, 0.0],
    "gravity": 9.81,
    "rotor_spin": ["ccw", "cw", "ccw", "cw"],
    "source": "bench/sysid_l2f.py: a deliberately wrong starting point (mass, geometry and torque ratio as L2F's)",
}
"""The frame the identification starts from: L2F's mass, rotor geometry and torque_to_thrust (what sysid keeps),
and wrong values for everything it fits."""


def _find(tree: Any, key: str) -> Any:
    """The value of `key` anywhere in L2F's parameter JSON (it nests dynamics under its own keys)."""
    if isinstance(tree, dict):
        if key in tree:
            return tree[key]
        for value in tree.values():
            found = _find(value, key)
            if found is not None:
                return found
    return None


def l2f_truth(parameters: dict[str, Any]) -> dict[str, Any]:
    """L2F's parameters as frame fields. Its JSON prints 6 decimals (std::to_string), so the inertia comes from
    J_inv (printed with ~11 significant digits) rather than from J (1 or 2)."""
    inverse = _find(parameters, "J_inv")
    return {
        "mass": float(_find(parameters, "mass")),
        "thrust_curve": [float(v) for v in _find(parameters, "rotor_thrust_coefficients")[0]],
        "motor_rise_time_constant": float(_find(parameters, "rotor_time_constants_rising")[0]),
        "motor_fall_time_constant": float(_find(parameters, "rotor_time_constants_falling")[0]),
        "inertia": [1.0 / float(inverse[i][i]) for i in range(3)],
        "torque_to_thrust": float(_find(parameters, "rotor_torque_constants")[0]),
    }


def l2f_flight(seconds: float = 60.0, seed: int = 0) -> tuple[Any, dict[str, Any]]:
    """(FlightLog of the excitation flight on L2F's Crazyflie, L2F's true parameters as frame fields)."""
    import l2f

    from robo_rl.sysid.excitation import ExcitationPlan, HoverController, fly_excitation

    device, env, params, rng = l2f.Device(), l2f.Environment(), l2f.Parameters(), l2f.Rng()
    state, after = l2f.State(), l2f.State()
    l2f.initialize_environment(device, env)
    l2f.initialize_rng(device, rng, seed)
    l2f.initial_parameters(device, env, params)
    l2f.initial_state(device, env, params, state)
    truth = l2f_truth(json.loads(l2f.parameters_to_json(device, env, params)))
    start = np.concatenate([[0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0], np.zeros(6)])
    state.position = [0.0, 0.0, 1.0]
    state.rpm = [float(v) for v in HoverController(BASE)(start)]

    def step(commands: np.ndarray) -> np.ndarray:
        l2f.step(device, env, params, state, [float(2.0 * u - 1.0) for u in commands], after, rng)
        state.assign(after)
        return np.concatenate(
            [state.position, state.orientation, state.linear_velocity, state.angular_velocity]
        ).astype(np.float64)

    log = fly_excitation(step, start, BASE, ExcitationPlan(seconds=seconds, seed=seed), source="L2F crazyflie")
    return log, truth


ROTORPY_ORDER = (3, 0, 1, 2)
"""RotorPy's rotors r1..r4 (r1 front-left, r2 front-right, r3 back-right, r4 back-left) as robo_rl's rotor indices
(0 front-right, 1 back-right, 2 back-left, 3 front-left). RotorPy's rotor_directions (+1, -1, +1, -1) are the sign of
each rotor's yaw moment, so its r2 and r4 turn the body -z: robo_rl's ccw rotors 0 and 2."""


ROTORPY_VEHICLES = ("crazyflie", "crazyfliebrushless")
"""RotorPy's Crazyflie 2.x and Crazyflie 2.1 Brushless (44 g, 3.6 times its weight in thrust, 2.3 times the
inertia, ten times the rotor drag): `rotorpy.vehicles.<name>_params`."""


def rotorpy_params(vehicle: str = "crazyflie") -> dict[str, Any]:
    import importlib

    if vehicle not in ROTORPY_VEHICLES:
        raise ValueError(f"RotorPy vehicle {vehicle!r}: use one of {ROTORPY_VEHICLES}")
    return dict(importlib.import_module(f"rotorpy.vehicles.{vehicle}_params").quad_params)


def rotorpy_base(params: dict[str, Any]) -> dict[str, Any]:
    """A wrong starting frame for a RotorPy vehicle: its mass, arm and yaw torque ratio (what sysid keeps), wrong
    values for everything it fits (a quadratic curve at 80 % of its full thrust, motor and inertia as BASE's)."""
    arm = float(np.linalg.norm(params["rotor_pos"]["r1"][:2]))
    top = float(params["rotor_speed_max"])
    return {
        **BASE,
        "name": "wrong_start_rotorpy",
        "mass": float(params["mass"]),
        "arm_length": arm,
        "thrust_curve": [0.0, 0.0, 0.8 * float(params["k_eta"]) * top * top],
        "torque_to_thrust": float(params["k_m"]) / float(params["k_eta"]),
        "source": "bench/sysid_l2f.py: a wrong start for a RotorPy vehicle (mass, arm and torque ratio as its)",
    }


def rotorpy_flight(
    seconds: float = 60.0, seed: int = 0, aero: bool = True, vehicle: str = "crazyflie"
) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """(FlightLog, true parameters as frame fields, the base frame) of the excitation flight on RotorPy's `vehicle`
    (PyPI rotorpy): motors first order in rotor speed (one time constant, tau_m), thrust k_eta w^2, and with `aero`
    its rotor drag and induced inflow, which robo_rl's model does not have. The command u in [0, 1] is the rotor
    speed command u * rotor_speed_max (RotorPy's cmd_motor_speeds), so the true curve is k_eta w_max^2 u^2. The
    accelerometer and gyro are RotorPy's IMU (its default noise)."""
    from rotorpy.sensors.imu import Imu
    from rotorpy.vehicles.multirotor import Multirotor

    from robo_rl.sysid.excitation import ExcitationPlan, HoverController, fly_excitation

    np.random.seed(seed)  # RotorPy's IMU draws its noise from numpy's global generator
    params = rotorpy_params(vehicle)
    base = rotorpy_base(params)
    top = float(params["rotor_speed_max"])
    truth = {
        "mass": float(params["mass"]),
        "thrust_curve": [0.0, 0.0, float(params["k_eta"]) * top * top],
        "motor_rise_time_constant": float(params["tau_m"]),
        "motor_fall_time_constant": float(params["tau_m"]),
        "inertia": [float(params[k]) for k in ("Ixx", "Iyy", "Izz")],
        "torque_to_thrust": base["torque_to_thrust"],
    }
    start = np.concatenate([[0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0], np.zeros(6)])
    hover = HoverController(base)(start)
    order = list(ROTORPY_ORDER)
    state = {
        "x": np.array([0.0, 0.0, 1.0]),
        "v": np.zeros(3),
        "q": np.array([0.0, 0.0, 0.0, 1.0]),
        "w": np.zeros(3),
        "wind": np.zeros(3),
        "rotor_speeds": hover[order] * top,
    }
    vehicle = Multirotor(params, initial_state=state, aero=aero)
    imu = Imu(sampling_rate=100)
    readings: list[np.ndarray] = []
    rates: list[np.ndarray] = []

    def sense(control: dict[str, np.ndarray]) -> np.ndarray:
        measured = imu.measurement(state, vehicle.statedot(state, control, 0.01), with_noise=True)
        readings.append(measured["accel"])
        rates.append(measured["gyro"])
        x, y, z, w = state["q"]
        return np.concatenate([state["x"], [w, x, y, z], state["v"], state["w"]])

    def step(commands: np.ndarray) -> np.ndarray:
        nonlocal state
        control = {"cmd_motor_speeds": np.asarray(commands)[order] * top}
        if not readings:
            sense(control)  # the first sample's reading, under the first command
        state = vehicle.step(state, control, 0.01)
        return sense(control)

    log = fly_excitation(step, start, base, ExcitationPlan(seconds=seconds, seed=seed), source=f"RotorPy {vehicle}")
    if len(readings) < len(log):  # the last sample: no step after it
        sense({"cmd_motor_speeds": np.asarray(log.commands[-1])[order] * top})
    from dataclasses import replace

    log = replace(log, specific_force=np.array(readings), body_rates=np.array(rates))
    return log, truth, base


def robo_rl_flight(seconds: float = 60.0, seed: int = 0, frame: str = "crazyflie_2_1") -> tuple[Any, dict[str, Any]]:
    """(FlightLog of the excitation flight on robo_rl's own quadrotor simulator flying `frame`, its fields)."""
    import dataclasses
    import math

    import torch

    from robo_rl.sim.quadrotor.hover import HoverConfig, QuadrotorHover
    from robo_rl.sim.quadrotor.params import load_frame
    from robo_rl.sysid.excitation import ExcitationPlan, fly_excitation

    config = HoverConfig(
        frame=frame,
        episode_length=seconds + 10.0,
        init_position_range=0.0,
        init_attitude_range=0.0,
        init_velocity_range=0.0,
        init_angular_velocity_range=0.0,
        max_position_error=1e3,
        max_tilt=math.pi,
        max_angular_speed=1e3,
    )
    env = QuadrotorHover(1, config=config, seed=seed)
    env.reset(seed=seed)
    truth = dataclasses.asdict(load_frame(frame))

    def step(commands: np.ndarray) -> np.ndarray:
        env.step(torch.as_tensor(2.0 * commands - 1.0, dtype=torch.float32)[None])
        return env.state[0, :13].double().numpy()

    start = env.state[0, :13].double().numpy()
    log = fly_excitation(step, start, BASE, ExcitationPlan(seconds=seconds, seed=seed), source=f"robo_rl {frame}")
    return log, truth


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out-dir", type=Path, default=Path("/tmp/sysid_l2f"))
    parser.add_argument("--json", type=Path, help="write the fitted and true values here")
    parser.add_argument(
        "--simulator",
        choices=("l2f", "robo_rl", "rotorpy"),
        default="l2f",
        help="fly L2F (default), robo_rl's sim or RotorPy's Crazyflie (first-order rotor speed, rotor drag; "
        "bench/sysid_chain.py --vehicle takes its Brushless too)",
    )
    args = parser.parse_args(argv)

    import yaml

    from robo_rl.cli.main import main as robo_rl
    from robo_rl.sysid.crazyflie_csv import write_crazyflie_csv

    args.out_dir.mkdir(parents=True, exist_ok=True)
    base = BASE
    if args.simulator == "rotorpy":
        log, truth, base = rotorpy_flight(args.seconds, args.seed)
    else:
        log, truth = (l2f_flight if args.simulator == "l2f" else robo_rl_flight)(args.seconds, args.seed)
    csv_path, base_path, frame_path = (args.out_dir / n for n in ("l2f.csv", "base.yaml", "l2f_identified.yaml"))
    write_crazyflie_csv(csv_path, log)
    base_path.write_text(yaml.safe_dump(base, sort_keys=False))
    code = robo_rl(["sysid", str(csv_path), "--frame", str(base_path), "-o", str(frame_path)])
    if code:
        return code
    fitted = yaml.safe_load(frame_path.read_text())
    rows = []
    for key in ("thrust_curve", "motor_rise_time_constant", "motor_fall_time_constant", "inertia"):
        values, true = np.atleast_1d(fitted[key]), np.atleast_1d(truth[key])
        for i, (f, t) in enumerate(zip(values, true, strict=True)):
            rows.append({"parameter": f"{key}[{i}]" if len(values) > 1 else key, "fitted": f, "l2f": t})
            print(f"{rows[-1]['parameter']:<28} fitted {f:<12.5g} true {t:<12.5g} error {100 * (f - t) / t:+.2f} %")
    u = np.linspace(0.5, 1.0, 6)
    thrust = lambda c: c[0] + c[1] * u + c[2] * u * u  # noqa: E731
    worst = float(np.max(np.abs(thrust(fitted["thrust_curve"]) / thrust(truth["thrust_curve"]) - 1)))
    print(f"thrust at u = 0.5..1.0: worst error {100 * worst:.2f} %")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "worst_thrust_error": worst}, indent=1))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
