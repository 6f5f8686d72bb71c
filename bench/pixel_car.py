"""The camera car against the state car: flying lap times on the same start places (issue 51).

A camera run (`robo-rl train rc_car_race_pixels_sac [--set off_policy.teacher=STATE_RUN]`: the car sees its
64 x 64 forward camera, its speed and its last commands) and a state run (`rc_car_race_ppo`: look-ahead points,
offsets, velocities) each drive `--laps` cars on their runs' evaluation tasks, every car from a random place of
the track (the same places: the same seed, the same track and car) for a first lap and then a timed flying lap
(`robo_rl.sim.rc_car.lap_timing`); pure pursuit drives the state task beside them. Reported: flying lap times
(mean, median, best, worst), first laps, off-track events, and the camera car's mean flying lap over the state
car's. The camera car also drives for 30 s with every frame replaced by mid grey: what it does without its camera
(it has no other way to know where the track goes). Both policies are their runs' best.pt (or latest.pt), or with
`--onnx` the RUN/policy.onnx files that `robo-rl export` writes, run by onnxruntime.

Usage: `python bench/pixel_car.py --camera-run RUN --state-run RUN [--laps 32] [--onnx]`; results in
`bench/results/pixel_car.json` (one entry per camera run, merged).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import torch
from machine import machine_info, warn_if_busy

from robo_rl.api.runs import load_trained, make_env
from robo_rl.envs import STATE_KEY
from robo_rl.sim.rc_car.lap_timing import time_laps
from robo_rl.sim.rc_car.pure_pursuit import PurePursuit

RESULTS = Path(__file__).parent / "results" / "pixel_car.json"
BLIND_SECONDS = 30.0
"""Simulated seconds the camera car drives with grey frames (one evaluation episode; the seeing car laps twice in
about 14 s)."""


def driver_of(run: Path, use_onnx: bool, blind: bool = False) -> tuple[Any, Any, int]:
    """The run's deterministic driver of observations (dicts for a camera run), its evaluation env's config, and
    the checkpoint iteration (-1 for ONNX); `blind`: every frame replaced by mid grey (what the camera adds)."""
    trained = load_trained(run)
    names = [spec.name for spec in getattr(trained.actor, "specs", ())]
    if use_onnx:
        from robo_rl.api.onnx_policy import onnx_actor

        actor: Any = onnx_actor(run / "policy.onnx")
    else:
        actor = trained.actor

    def drive(obs: torch.Tensor | dict[str, torch.Tensor]) -> torch.Tensor:
        if isinstance(obs, dict) and blind:
            obs = {key: torch.full_like(value, 128) if key in names else value for key, value in obs.items()}
        if isinstance(obs, dict):
            if use_onnx:
                return actor(obs)
            return actor(obs[STATE_KEY], *(obs[name] for name in names))
        return actor(obs)

    return drive, trained.cfg, -1 if use_onnx else trained.iteration


def timed(run: Path, laps: int, seed: int, use_onnx: bool, blind: bool = False) -> dict[str, Any]:
    drive, cfg, iteration = driver_of(run, use_onnx, blind)
    env = make_env(cfg, num_envs=laps, device="cpu", evaluation=True)
    max_time = BLIND_SECONDS if blind else 120.0
    summary = time_laps(env, drive, seed, max_time).summary()  # type: ignore[arg-type]
    close = getattr(env, "close", None)
    if close is not None:
        close()
    return {"run": str(run), "task": cfg.task.name, "checkpoint_iteration": iteration, **summary}


def pure_pursuit(state_run: Path, laps: int, seed: int) -> dict[str, Any]:
    cfg = load_trained(state_run).cfg
    env: Any = make_env(cfg, num_envs=laps, device="cpu", evaluation=True)
    expert = PurePursuit()
    return time_laps(env, lambda obs: expert(env), seed).summary()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--camera-run", type=Path, required=True, help="rc_car_race_pixels_sac run directory")
    parser.add_argument("--state-run", type=Path, required=True, help="rc_car_race_ppo run directory")
    parser.add_argument("--laps", type=int, default=32, help="cars (flying laps) per driver (default 32)")
    parser.add_argument("--seed", type=int, default=12345, help="seed of the start places (default 12345)")
    parser.add_argument("--onnx", action="store_true", help="drive RUN/policy.onnx (onnxruntime) for both runs")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--output", type=Path, default=RESULTS, help=f"results file (default {RESULTS})")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    load = warn_if_busy()
    camera = timed(args.camera_run, args.laps, args.seed, args.onnx)
    blind = timed(args.camera_run, args.laps, args.seed, args.onnx, blind=True)
    state = timed(args.state_run, args.laps, args.seed, args.onnx)
    baseline = pure_pursuit(args.state_run, args.laps, args.seed)
    ratio = None
    if camera["mean_flying_lap_s"] and state["mean_flying_lap_s"]:
        ratio = camera["mean_flying_lap_s"] / state["mean_flying_lap_s"]
    rows = (("camera car", camera), ("frames grey", blind), ("state car", state), ("pure pursuit", baseline))
    for name, summary in rows:
        print(
            f"{name:<13} mean flying lap {summary['mean_flying_lap_s']} s (best {summary['best_flying_lap_s']}, "
            f"worst {summary['worst_flying_lap_s']}), {summary['flying_laps']} of {summary['cars']} cars, "
            f"off track {summary['off_track']}"
        )
    print(f"camera car / state car mean flying lap: {ratio}")
    entry = {
        "camera": camera,
        "camera_frames_grey": blind,
        "state": state,
        "pure_pursuit": baseline,
        "camera_over_state_lap_time": ratio,
        "laps": args.laps,
        "seed": args.seed,
        "onnx": args.onnx,
        "load_average_start": load,
        "machine": machine_info(),
        "command": " ".join(["python", *sys.argv]),
    }
    results = json.loads(args.output.read_text()) if args.output.is_file() else {}
    results[f"{args.camera_run.name}{'-onnx' if args.onnx else ''}"] = entry
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
