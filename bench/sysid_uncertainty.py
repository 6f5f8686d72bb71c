"""Do `robo-rl sysid`'s standard errors cover the truth? Excitation flights on simulators robo_rl did not write, with
different motor models, fitted from a deliberately wrong base frame; each fitted parameter's error in reported
standard errors (z), per simulator and seed.

    .venv/bin/python bench/sysid_uncertainty.py [--seeds 0 1 2] [--seconds 60] [--json results.json]

- L2F's Crazyflie (PyPI l2f): motors first order in the command, separate rise and fall constants.
- RotorPy's Crazyflie and Crazyflie Brushless (PyPI rotorpy): motors first order in rotor speed with one constant,
  thrust k_eta w^2, rotor drag, induced inflow and translational lift, RotorPy's IMU with its noise.

The flights and base frames are bench/sysid_l2f.py's. "covered" counts the parameters within 2 standard errors.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SIMULATORS = ("l2f", "rotorpy-crazyflie", "rotorpy-crazyfliebrushless")


def _flights() -> Any:
    spec = importlib.util.spec_from_file_location("sysid_l2f", ROOT / "bench" / "sysid_l2f.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def z_scores(fit: Any, truth: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Per parameter: fitted, true, relative error, standard error and z."""
    pairs = {
        "motor_rise_time_constant": (fit.motor_rise_time_constant, truth["motor_rise_time_constant"]),
        "motor_fall_time_constant": (fit.motor_fall_time_constant, truth["motor_fall_time_constant"]),
        **{f"inertia[{i}]": (fit.inertia[i], truth["inertia"][i]) for i in range(3)},
        **{f"thrust_curve[{i}]": (fit.thrust_curve[i], truth["thrust_curve"][i]) for i in range(3)},
    }
    out = {}
    for name, (estimate, true) in pairs.items():
        out[name] = {
            "fitted": estimate.value,
            "true": true,
            "error": estimate.value - true,
            "standard_error": estimate.standard_error,
            "z": (estimate.value - true) / estimate.standard_error,
            "widened_by": estimate.widened_by,
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--simulators", nargs="+", choices=SIMULATORS, default=list(SIMULATORS))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    from robo_rl.sysid import Airframe, NotIdentifiable, identify

    flights = _flights()
    rows = []
    for simulator in args.simulators:
        for seed in args.seeds:
            if simulator == "l2f":
                (log, truth), base = flights.l2f_flight(args.seconds, seed), flights.BASE
            else:
                vehicle = simulator.split("-", 1)[1]
                log, truth, base = flights.rotorpy_flight(args.seconds, seed, vehicle=vehicle)
            try:
                fit = identify(log, Airframe.from_fields(base))
            except NotIdentifiable as refused:
                rows.append({"simulator": simulator, "seed": seed, "refused": str(refused)})
                print(f"{simulator} seed {seed}: refused: {refused}")
                continue
            scores = z_scores(fit, truth)
            covered = sum(abs(s["z"]) <= 2.0 for s in scores.values())
            worst = max(abs(s["z"]) for s in scores.values())
            rows.append(
                {
                    "simulator": simulator,
                    "seed": seed,
                    "motor_model": fit.motor_model,
                    "aerodynamics": fit.aerodynamics,
                    "candidates": list(fit.candidates),
                    "covered": covered,
                    "parameters": len(scores),
                    "worst_z": worst,
                    "parameters_z": scores,
                }
            )
            relative = {k: f"{100 * s['error'] / s['true']:+.2f}%" for k, s in scores.items() if s["true"]}
            print(f"{simulator} seed {seed}: {covered}/{len(scores)} within 2 SE, worst |z| {worst:.2f}, {relative}")
    total = sum(r.get("covered", 0) for r in rows)
    count = sum(r.get("parameters", 0) for r in rows)
    worst = float(np.mean([r.get("worst_z", np.nan) for r in rows]))
    print(f"all: {total}/{count} parameters within 2 standard errors, mean worst |z| {worst:.2f}")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "covered": total, "parameters": count}, indent=1))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
