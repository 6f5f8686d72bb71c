"""Simulated camera throughput: frames/s of `robo_rl.sim.mujoco.cameras.BatchedCameras`, and what cameras cost a step.

Part 1 (frames): the peg arm's "wrist" and "side" cameras and the RC car's "front" camera (its textured track
scene), each alone, at `--sizes` pixels square and `--batches` envs: frames/s = envs x render calls / wall time,
posing each env's state included (the states of freshly reset envs; the arm's differ per env).

Part 2 (steps): env-steps/s of the camera envs (mujoco/peg_insert_pixels with both cameras, rc_car/race_pixels;
64 x 64) against the same envs without cameras (mujoco/peg_insert; rc_car/race on its torch backend, which the
camera env steps), random actions, side by side: the two variants alternate in `--rounds` rounds so that a change
of load on a shared machine hits both.

Rendering runs on the CPU (EGL on Mesa's llvmpipe here, or OSMesa): set `MUJOCO_GL` before running, default egl.
The load average is printed at the start and the end and stored in the JSON (`bench/results/camera_fps.json`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

os.environ.setdefault("MUJOCO_GL", "egl")

import mujoco  # after MUJOCO_GL is set
import numpy as np
import torch
from machine import machine_info, warn_if_busy

from robo_rl.sim.mujoco.cameras import BatchedCameras
from robo_rl.sim.mujoco.peg_insert import PegInsert, PegInsertConfig
from robo_rl.sim.mujoco.peg_pixels import PEG_PIXELS, PegInsertPixels
from robo_rl.sim.rc_car.race import RaceConfig, RCCarRace
from robo_rl.sim.rc_car.race_pixels import RACE_PIXELS, RCCarRacePixels
from robo_rl.sim.rc_car.track_scene import pose_car, track_model

RESULTS = Path(__file__).parent / "results" / "camera_fps.json"
Poser = Callable[[mujoco.MjData, int], None]


def peg_scene(num_envs: int) -> tuple[mujoco.MjModel, Poser]:
    """The peg model and a poser of `num_envs` freshly reset arms (random holes and starts)."""
    env = PegInsert(num_envs, config=PegInsertConfig(num_threads=0), seed=0)
    engine = env.engine

    def pose(data: mujoco.MjData, index: int) -> None:
        data.qpos[:] = engine.qpos[index]
        data.mocap_pos[:] = engine.mocap_pos[index]
        data.mocap_quat[:] = engine.mocap_quat[index]

    return env.model, pose


def car_scene(num_envs: int) -> tuple[mujoco.MjModel, Poser]:
    """The kidney track scene and a poser of `num_envs` cars at random places of the lap."""
    env = RCCarRace(num_envs, seed=0)
    poses = env.state[:, :3].double().numpy()

    def pose(data: mujoco.MjData, index: int) -> None:
        pose_car(data, *(float(v) for v in poses[index]))

    return track_model(env.track, env.params), pose


def frame_rows(sizes: list[int], batches: list[int], seconds: float) -> list[dict[str, Any]]:
    rows = []
    for scene, camera, build in (("arm", "wrist", peg_scene), ("arm", "side", peg_scene), ("car", "front", car_scene)):
        for size in sizes:
            for batch in batches:
                model, pose = build(batch)
                cameras = BatchedCameras(model, (camera,), size, size)
                cameras.render(pose, range(batch))  # GL context and texture upload outside the timing
                calls, start = 0, time.perf_counter()
                while time.perf_counter() - start < seconds:
                    cameras.render(pose, range(batch))
                    calls += 1
                fps = batch * calls / (time.perf_counter() - start)
                cameras.close()
                rows.append({"scene": scene, "camera": camera, "size": size, "envs": batch, "frames_per_s": fps})
                print(f"{scene:4s} {camera:6s} {size:4d} px  {batch:3d} envs  {fps:8.0f} frames/s", flush=True)
    return rows


def step_rate(env: Any, seconds: float) -> tuple[int, float]:
    """(env-steps, wall seconds) of random actions for about `seconds`."""
    low = torch.tensor(env.action_spec.low, dtype=torch.float32)
    high = torch.tensor(env.action_spec.high, dtype=torch.float32)
    generator = torch.Generator().manual_seed(0)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        action = low + (high - low) * torch.rand(env.num_envs, len(low), generator=generator)
        env.step(action)
        steps += env.num_envs
    return steps, time.perf_counter() - start


def step_rows(batches: list[int], seconds: float, rounds: int) -> list[dict[str, Any]]:
    variants: dict[str, tuple[Callable[[int], Any], Callable[[int], Any]]] = {
        "peg_insert (wrist + side, 64 px)": (
            lambda n: PegInsertPixels(n, config=replace(PEG_PIXELS, num_threads=0), seed=0),
            lambda n: PegInsert(n, config=PegInsertConfig(num_threads=0), seed=0),
        ),
        "rc_car race (front, 64 px)": (
            lambda n: RCCarRacePixels(n, config=RACE_PIXELS, seed=0),
            lambda n: RCCarRace(n, config=RaceConfig(backend="torch"), seed=0),
        ),
    }
    rows = []
    for task, (with_cameras, without) in variants.items():
        for batch in batches:
            envs = {"cameras": with_cameras(batch), "state only": without(batch)}
            totals = {name: [0, 0.0] for name in envs}
            for env in envs.values():
                step_rate(env, 0.2)  # warm-up (GL context, first allocations)
            for _ in range(rounds):
                for name, env in envs.items():
                    steps, wall = step_rate(env, seconds / rounds)
                    totals[name][0] += steps
                    totals[name][1] += wall
            rates = {name: steps / wall for name, (steps, wall) in totals.items()}
            rows.append({"task": task, "envs": batch, **{f"env_steps_per_s ({k})": v for k, v in rates.items()}})
            print(
                f"{task:34s} {batch:3d} envs  cameras {rates['cameras']:7.0f}  state only {rates['state only']:8.0f}"
                f" env-steps/s  ({rates['state only'] / rates['cameras']:.0f}x)",
                flush=True,
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=1.5, help="measured wall time per point (s)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 128], help="frame sizes (px, square)")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32], help="numbers of envs (frames)")
    parser.add_argument("--step-batches", type=int, nargs="+", default=[8, 32], help="numbers of envs (steps)")
    parser.add_argument("--rounds", type=int, default=3, help="alternations of the step variants")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--output", type=Path, default=RESULTS, help="JSON results path")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    load = warn_if_busy()
    print(f"MUJOCO_GL={os.environ['MUJOCO_GL']}  load average at start {load:.2f}  (CPUs: {os.cpu_count()})")
    report: dict[str, Any] = {
        "command": " ".join([sys.executable, *sys.argv]),
        "machine": machine_info(),
        "mujoco": mujoco.__version__,
        "mujoco_gl": os.environ["MUJOCO_GL"],
        "load_average_at_start": load,
        "frames": frame_rows(args.sizes, args.batches, args.seconds),
        "steps": step_rows(args.step_batches, args.seconds, args.rounds),
    }
    report["load_average_at_end"] = os.getloadavg()[0]
    print(f"load average at end {report['load_average_at_end']:.2f}")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    main()
