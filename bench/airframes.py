"""Zero-shot flights of one exported hover policy on airframes it never trained on (issue 47).

For each evaluation frame (the four bundled ones and the AscTec Hummingbird of ETH's rotors_simulator): the hover
gate (N flights of 5 s from random states: success = no crash and a mean position error under 10 cm over the last
second), the steady-state error (that mean over the flights that did not crash), and adaptation in flight: a
payload of +30 % mass, and rotor 0 at 80 % of its thrust, each at t = 2 s (robo_rl.sim.quadrotor.events). A flight
recovers when it does not crash and its position error stays within 10 cm from t = 3 s (1 s after the change) to
its end. The flights run the policy.onnx in onnxruntime (the deployed artifact, its memory carried and reset per
flight) on the torch step of the hover task, with the observation settings the policy recorded (its task config),
the frame's own parameters and no randomization.

The frames keep their own parameters, with one exception stated in the output: the action map. The policy sends a
normalized motor command mapped -1 -> 0, +1 -> 1 (its training frame's); px4_x500 and racing_250mm state an idle
command (min_command 0.15 and 0.0955) that would remap the same action onto another command, so they fly copies
with min_command 0 (the thrust curve over the command unchanged).

    python bench/airframes.py RUN/policy.onnx --flights 500 --output results/airframes_47.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml

from robo_rl.api.onnx_policy import onnx_actor, policy_artifact
from robo_rl.config import from_dict
from robo_rl.runners.policy_stepper import PolicyStepper
from robo_rl.sim.quadrotor.curriculum import CurriculumConfig
from robo_rl.sim.quadrotor.events import FlightEvent
from robo_rl.sim.quadrotor.hover import HoverConfig, QuadrotorHover
from robo_rl.sim.quadrotor.params import load_frame
from robo_rl.sim.quadrotor.randomization import RandomizationConfig

FRAMES = ("crazyflie_2_1", "crazyflie_2_1_bare_2023", "px4_x500", "racing_250mm", "asctec_hummingbird")
EVENTS = {
    "gate": None,
    "payload_+30%": FlightEvent(time=2.0, mass_scale=1.3),
    "motor0_80%": FlightEvent(time=2.0, motor=0, motor_scale=0.8),
}
POLICY_SPINS = ("ccw", "cw", "ccw", "cw")
"""The rotor spins of every frame the policies train on, in the action order (robo_rl.sim.quadrotor.params)."""
MIRRORED_SPINS = ("cw", "ccw", "cw", "ccw")
RECOVERY_WINDOW = 1.0
"""Seconds after the change within which the error must be back under `RECOVERY_ERROR` for good."""
RECOVERY_ERROR = 0.10


def frame_file(name: str, folder: Path) -> tuple[str, str]:
    """(the frame to fly, a note): the bundled frame, or a copy wired as a deployer wires it to the policy's rotor
    table (robo_rl.vehicle: rotor 0 front-right spinning ccw, then back-right cw, back-left ccw, front-left cw) and
    action map (-1 -> command 0)."""
    params = load_frame(name)
    fields = {f.name: getattr(params, f.name) for f in dataclasses.fields(params)}
    fields = {k: list(v) if isinstance(v, tuple) else v for k, v in fields.items()}
    notes = []
    if params.min_command != 0.0:
        fields["min_command"] = 0.0
        notes.append(f"min_command {params.min_command:g} -> 0 (the policy's action map)")
    if list(params.rotor_spin) == list(MIRRORED_SPINS):
        # The same rigid body with its x axis turned 90 degrees left: its front-left rotor becomes rotor 0
        # (front-right), so the spins read ccw, cw, ccw, cw; Ixx and Iyy trade places.
        fields["rotor_spin"] = list(POLICY_SPINS)
        ixx, iyy, izz = params.inertia
        fields["inertia"] = [iyy, ixx, izz]
        notes.append("rotors relabelled (forward turned 90 deg: its spins cw, ccw, cw, ccw -> the policy's table)")
    if not notes:
        return name, ""
    fields.pop("name", None)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(fields), encoding="utf-8")
    return str(path), "; ".join(notes)


def hover_config(policy: Path, frame: str, event: FlightEvent | None) -> HoverConfig:
    """The policy's recorded task config on `frame`, without randomization or airframes, on the torch step."""
    recorded = json.loads(policy_artifact(policy).task_config)
    trained = from_dict(HoverConfig, recorded)
    return dataclasses.replace(
        trained,
        frame=frame,
        airframes=None,
        randomization=RandomizationConfig(),
        curriculum=CurriculumConfig(),  # full ranges
        event=event,
        backend="torch",
    )


def fly(policy: Path, config: HoverConfig, flights: int, seed: int) -> dict[str, Any]:
    """One flight per env from a reset: success, steady-state error and recovery after `config.event`."""
    env = QuadrotorHover(flights, config=config, seed=seed)
    actor = onnx_actor(policy, env.obs_spec.dim, env.action_spec.dim)
    stepper = PolicyStepper(actor, flights)
    obs = env.reset(seed=seed)
    steps = config.max_episode_steps
    errors = torch.full((steps, flights), math.nan)
    crashed = torch.zeros(flights, dtype=torch.bool)
    finished = torch.zeros(flights, dtype=torch.bool)
    success = torch.zeros(flights, dtype=torch.bool)
    with torch.no_grad():
        for t in range(steps):
            obs, _, terminated, truncated, info = env.step(stepper(obs))
            live = ~finished
            errors[t] = torch.where(live, info["tracking_error"], errors[t])
            crashed |= terminated & live
            success |= info["success"] & live
            finished |= terminated | truncated
            stepper.restart(terminated | truncated)
    window = max(1, round(config.success_window / config.dt))
    last = errors[-window:].mean(0)
    result: dict[str, Any] = {
        "flights": flights,
        "success": float(success.float().mean()),
        "crash": float(crashed.float().mean()),
        "steady_state_error_m": float(last[~crashed].mean()) if (~crashed).any() else math.nan,
    }
    if config.event is not None:
        start = round((config.event.time + RECOVERY_WINDOW) / config.dt)
        held = (errors[start:] <= RECOVERY_ERROR).all(0) & ~crashed
        result["recovered_within_1s"] = float(held.float().mean())
        before = round(config.event.time / config.dt)
        peak = errors[before:].nan_to_num(0.0).amax(0)
        result["peak_error_after_event_m_median"] = float(peak[~crashed].median()) if (~crashed).any() else math.nan
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("policy", type=Path, help="an exported hover policy.onnx (with or without memory)")
    parser.add_argument("--flights", type=int, default=500, help="flights per frame and condition (default 500)")
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--frames", nargs="*", default=list(FRAMES))
    parser.add_argument("--output", type=Path, default=None, help="write the results as JSON here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows: dict[str, Any] = {"policy": str(args.policy), "seed": args.seed, "frames": {}}
    with tempfile.TemporaryDirectory() as folder:
        for name in args.frames:
            frame, note = frame_file(name, Path(folder))
            rows["frames"][name] = {"note": note} if note else {}
            for label, event in EVENTS.items():
                start = time.perf_counter()
                result = fly(args.policy, hover_config(args.policy, frame, event), args.flights, args.seed)
                rows["frames"][name][label] = result
                shown = {k: round(v, 4) if isinstance(v, float) else v for k, v in result.items()}
                print(f"{name:26s} {label:13s} {shown} ({time.perf_counter() - start:.0f} s)", flush=True)
    if args.output is not None:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(rows, indent=1, default=_json), encoding="utf-8")


def _json(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(type(value).__name__)


if __name__ == "__main__":
    main()
