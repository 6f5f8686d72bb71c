"""From a flight log of a quadrotor robo_rl has never seen to a policy that flies it, in one command, judged on that
quadrotor: `robo-rl sysid LOG --frame BASE --train quadrotor_hover_ppo`, then policy.onnx flown back in the
simulator the log came from by robo_rl's hover gate (flights of the task's length from its random initial states;
success: no crash and within 0.10 m of the target over the last second).

    .venv/bin/python bench/sysid_chain.py --simulator rotorpy [--vehicle crazyfliebrushless] [--seconds 60]
        [--episodes 200] [--out-dir DIR] [--also OTHER/policy.onnx]

- rotorpy: RotorPy's Crazyflie (PyPI rotorpy): motors first order in rotor speed, thrust k_eta w^2, rotor drag and
  induced inflow, its IMU. The policy's motor command u is its rotor speed command u * rotor_speed_max.
- l2f: L2F's Crazyflie (PyPI l2f); the chain's own last step already flies it there.

The excitation flight and the deliberately wrong base frame are bench/sysid_l2f.py's. Writes DIR/result.json.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


class RotorPyEngine:
    """n RotorPy Crazyflies in `robo_rl.sim.quadrotor.l2f_gate.Engine`'s layout (state (n, 17): position,
    quaternion w x y z, world velocity, body rates, motor commands reached; kinematics (n, 18): position, rotation
    body-to-world row-major, velocity, body rates), stepping dt s with commands held."""

    def __init__(self, n: int, seed: int, dt: float, params: dict[str, Any], aero: bool = True) -> None:
        from rotorpy.vehicles.multirotor import Multirotor

        np.random.seed(seed)
        self.params = params
        self.top = float(self.params["rotor_speed_max"])
        self.dt = dt
        self.order = [3, 0, 1, 2]  # RotorPy's r1..r4 as robo_rl's rotors (bench/sysid_l2f.py ROTOR_ORDER)
        self.vehicles = [Multirotor(self.params, aero=aero) for _ in range(n)]
        self.states: list[dict[str, np.ndarray]] = []

    @property
    def hover_command(self) -> float:
        p = self.params
        return math.sqrt(p["mass"] * 9.81 / 4 / p["k_eta"]) / self.top

    def set_state(self, state: np.ndarray) -> None:
        self.states = [
            {
                "x": row[0:3].astype(np.float64),
                "q": np.array([row[4], row[5], row[6], row[3]], dtype=np.float64),
                "v": row[7:10].astype(np.float64),
                "w": row[10:13].astype(np.float64),
                "wind": np.zeros(3),
                "rotor_speeds": row[13:17][self.order].astype(np.float64) * self.top,
            }
            for row in state
        ]

    def step(self, command: np.ndarray) -> None:
        for i, vehicle in enumerate(self.vehicles):
            control = {"cmd_motor_speeds": np.asarray(command[i], dtype=np.float64)[self.order] * self.top}
            self.states[i] = vehicle.step(self.states[i], control, self.dt)

    def kinematics(self) -> np.ndarray:
        from scipy.spatial.transform import Rotation

        out = np.empty((len(self.states), 18), dtype=np.float32)
        for i, s in enumerate(self.states):
            out[i] = np.concatenate([s["x"], Rotation.from_quat(s["q"]).as_matrix().ravel(), s["v"], s["w"]])
        return out


def fly_rotorpy(onnx: Path, episodes: int, params: dict[str, Any], name: str, seed: int = 12345) -> dict[str, Any]:
    """policy.onnx flown in the RotorPy vehicle `params` (`name`) by robo_rl's hover gate."""
    from robo_rl.api.l2f_transfer import read_l2f_policy
    from robo_rl.sim.quadrotor.l2f_gate import EnginePlant, fly

    policy = read_l2f_policy(onnx)
    hover = RotorPyEngine(1, 0, policy.dt, params).hover_command
    plant = EnginePlant(
        f"RotorPy 3.0.0 {name} (rotor drag on)", hover, lambda n, s: RotorPyEngine(n, s, policy.dt, params)
    )
    result = fly(
        policy.act,
        policy.obs_names,
        policy.dt,
        policy.actuator,
        plant,
        episodes,
        seed,
        policy.config,
        policy.integral_limit,
        policy.start_episodes,
    )
    return {"success_rate": result.success_rate, "crash_rate": result.crash_rate, "episodes": episodes}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--simulator", choices=("rotorpy", "l2f"), default="rotorpy")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=0, help="the log's and the training's seed")
    parser.add_argument("--episodes", type=int, default=200, help="flights in the log's simulator")
    parser.add_argument("--out-dir", type=Path, default=Path("/tmp/sysid_chain"))
    parser.add_argument("--max-iterations", type=int)
    parser.add_argument("--vehicle", default="crazyflie", help="RotorPy's crazyflie or crazyfliebrushless")
    parser.add_argument("--also", type=Path, action="append", default=[], help="another policy.onnx to fly there")
    args = parser.parse_args(argv)

    import importlib.util

    import yaml

    from robo_rl.cli.main import main as robo_rl
    from robo_rl.sysid.crazyflie_csv import write_crazyflie_csv

    spec = importlib.util.spec_from_file_location("sysid_l2f", ROOT / "bench" / "sysid_l2f.py")
    assert spec is not None and spec.loader is not None
    flights = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(flights)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    if args.simulator == "rotorpy":
        log, truth, base = flights.rotorpy_flight(args.seconds, args.seed, vehicle=args.vehicle)
    else:
        (log, truth), base = flights.l2f_flight(args.seconds, args.seed), flights.BASE
    csv, base_path, frame = (args.out_dir / n for n in ("flight.csv", "base.yaml", "fitted.yaml"))
    write_crazyflie_csv(csv, log)
    base_path.write_text(yaml.safe_dump(base, sort_keys=False))
    runs = args.out_dir / "runs"
    command = ["sysid", str(csv), "--frame", str(base_path), "-o", str(frame), "--train", "quadrotor_hover_ppo"]
    command += ["--runs-root", str(runs), "--seed", str(args.seed)]
    if args.max_iterations:
        command += ["--max-iterations", str(args.max_iterations)]
    start = time.perf_counter()
    code = robo_rl(command)
    chain_seconds = time.perf_counter() - start
    result: dict[str, Any] = {"command": "robo-rl " + " ".join(command), "exit": code, "truth": truth}
    result["chain_seconds"] = round(chain_seconds, 1)
    made = sorted(runs.glob("*/*"))
    if not made:  # refused before training (the fit, or the frame)
        (args.out_dir / "result.json").write_text(json.dumps(result, indent=1, default=str))
        return code
    run = made[-1]
    result["report"] = json.loads((run / "sysid_report.json").read_text())
    if args.simulator == "rotorpy":
        params = flights.rotorpy_params(args.vehicle)
        flown = ([run / "policy.onnx"] if code == 0 else []) + list(args.also)
        result["rotorpy"] = {str(p): fly_rotorpy(p, args.episodes, params, args.vehicle) for p in flown}
        print(f"in RotorPy's {args.vehicle}: {result['rotorpy']}")
    (args.out_dir / "result.json").write_text(json.dumps(result, indent=1, default=str))
    return code


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
