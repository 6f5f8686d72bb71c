"""Inference latency of exported camera policies on this CPU (issue 37, deliver 5): torch vs onnxruntime, batch 1.

Each case is a `CameraPolicy` with random weights, as pixel SAC builds it: DrQ's encoder per camera
(`robo_rl.modules.image_encoder`, four 3x3 convolutions of 32 filters, a 50-wide head) and a 256-256 squashed
Gaussian actor's deterministic path on the state (14 values) plus the features, 4 actions. Cameras are RGB, at
64x64 and 128x128, one ("wrist") or two ("wrist", "fixed"). Each is exported with
`robo_rl.export.camera.export_camera_policy`, checked for parity, then called with one observation (fixed random
frames) alternately in blocks by torch (`inference_mode`) and by onnxruntime (CPUExecutionProvider), so both see
the same load; one thread each (`--threads`), as a controller pinned to a core would run. Per call: median and
99th percentile of `--calls` calls, after a warm-up.

Usage: `python bench/vision_latency.py [--calls 2000] [--threads 1]`; results go to bench/results/vision_latency.json.

Measured 2026-11-27 on this 2-core shared VM ("Intel(R) Xeon(R) Processor", torch 2.13.0+cpu, onnxruntime
1.32.0), one thread each, 2000 calls per runtime and case, while other sessions ran: 1-min load 7.4 at start,
5.8 at end (bench/results/vision_latency.json). µs per call, median / p99; the p99 is mostly preemption at that
load. Two other runs (1-min load 2.8-4.9) gave medians within 25 % of these, but for one torch median of 6.1 ms
(128x128, two cameras):

    case              torch           onnxruntime     max |torch - onnxruntime|
    64x64   1 cam     1166 / 13218     562 / 11462    6e-08
    64x64   2 cams    1879 /  7067    1027 /  5285    1e-07
    128x128 1 cam     1417 /  6584     717 /  4920    5e-08
    128x128 2 cams    2961 / 16366    1416 /  9576    1e-07

onnxruntime takes about half torch's time at every size. 128x128 costs little more than 64x64: the first
convolutions of larger frames have stride 2 (`robo_rl.modules.image_encoder.MAX_SIDE_STRIDE_ONE`), so both end
in feature maps of similar size. Even at this load a two-camera 128x128 policy answers in ~1.5 ms (median),
well inside a 20-50 ms control period.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import torch
from machine import machine_info, warn_if_busy

from robo_rl.artifact import PolicyArtifact
from robo_rl.envs import SpaceSpec
from robo_rl.export.camera import camera_feeds, camera_parity, export_camera_policy, sample_camera_inputs
from robo_rl.export.onnx import ACTION_OUTPUT, PolicyMetadata, read_metadata
from robo_rl.image_spec import CameraIntrinsics, ImageSpec
from robo_rl.modules.camera_policy import CameraPolicy
from robo_rl.modules.image_encoder import ObservationEncoder
from robo_rl.modules.squashed_actor import SquashedGaussianActor

RESULTS = Path(__file__).parent / "results" / "vision_latency.json"
STATE_DIM, ACTIONS, HIDDEN = 14, 4, (256, 256)
SIDES = (64, 128)
CAMERA_NAMES = ("wrist", "fixed")
BLOCK = 100
"""Calls per block; torch and onnxruntime alternate blocks so a change of load hits both alike."""
WARM_UP = 50


@dataclass(frozen=True)
class Case:
    """One policy shape: square RGB frames of `side` pixels from `cameras` cameras."""

    side: int
    cameras: int

    @property
    def name(self) -> str:
        return f"{self.side}x{self.side} {self.cameras} cam{'s' if self.cameras > 1 else ''}"

    def specs(self) -> tuple[ImageSpec, ...]:
        intrinsics = CameraIntrinsics.from_fovy(60.0, self.side, self.side)
        return tuple(ImageSpec(name, self.side, self.side, 3, intrinsics) for name in CAMERA_NAMES[: self.cameras])


def build_policy(case: Case) -> CameraPolicy:
    torch.manual_seed(0)
    encoder = ObservationEncoder(STATE_DIM, case.specs())
    low, high = -torch.ones(ACTIONS), torch.ones(ACTIONS)
    actor = SquashedGaussianActor(encoder.output_dim, low, high, hidden=HIDDEN).deterministic_actor()
    return CameraPolicy(encoder, actor).eval()


def metadata() -> PolicyMetadata:
    action = SpaceSpec(tuple(f"a{i}" for i in range(ACTIONS)), (-1.0,) * ACTIONS, (1.0,) * ACTIONS, ("1",) * ACTIONS)
    return PolicyMetadata(SpaceSpec.unnamed("obs", STATE_DIM), action, 0.05, "bench/vision", "bench", "bench")


def timed_alternately(calls: dict[str, Callable[[], Any]], count: int) -> dict[str, np.ndarray]:
    """Seconds per call of each callable, `count` calls each, in alternating blocks of BLOCK after WARM_UP."""
    for call in calls.values():
        for _ in range(WARM_UP):
            call()
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(-(-count // BLOCK)):
        for name, call in calls.items():
            for _ in range(BLOCK):
                start = time.perf_counter()
                call()
                times[name].append(time.perf_counter() - start)
    return {name: np.array(values[:count]) for name, values in times.items()}


def measure(case: Case, directory: Path, count: int, threads: int) -> dict[str, Any]:
    policy = build_policy(case)
    path = export_camera_policy(policy, metadata(), directory / f"{case.side}_{case.cameras}.onnx")
    state, frames = sample_camera_inputs(case.specs(), STATE_DIM, batch=1, seed=1)
    error = camera_parity(policy, path, state, frames)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    artifact = PolicyArtifact.from_props(read_metadata(path))
    feeds = camera_feeds(artifact, state.numpy(), {name: frame.numpy() for name, frame in frames.items()})
    ordered = [frames[spec.name] for spec in policy.specs]

    def torch_call() -> Any:
        with torch.inference_mode():
            return policy(state, *ordered)

    def ort_call() -> Any:
        return session.run([ACTION_OUTPUT], feeds)

    times = timed_alternately({"torch": torch_call, "onnxruntime": ort_call}, count)
    row: dict[str, Any] = {"case": case.name, "side": case.side, "cameras": case.cameras, "parity": error}
    for name, seconds in times.items():
        row[f"{name}_median_us"] = float(np.median(seconds) * 1e6)
        row[f"{name}_p99_us"] = float(np.percentile(seconds, 99) * 1e6)
    row["onnx_bytes"] = path.stat().st_size
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000, help="timed calls per runtime and case")
    parser.add_argument("--threads", type=int, default=1, help="threads for torch and onnxruntime")
    parser.add_argument("--output", help="JSON file (default: bench/results/vision_latency.json)")
    args = parser.parse_args()
    load_start = warn_if_busy()
    torch.set_num_threads(args.threads)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in (Case(side, cameras) for side in SIDES for cameras in (1, 2)):
            row = measure(case, Path(tmp), args.calls, args.threads)
            rows.append(row)
            print(
                f"{case.name:15s} torch {row['torch_median_us']:7.0f} / {row['torch_p99_us']:7.0f} us   "
                f"onnxruntime {row['onnxruntime_median_us']:7.0f} / {row['onnxruntime_p99_us']:7.0f} us "
                f"(median / p99)   max |error| {row['parity']:.0e}",
                flush=True,
            )
    load = {"start_1min": load_start, "end_1min": os.getloadavg()[0]}
    print(f"1-min load average: {load['start_1min']:.2f} at start, {load['end_1min']:.2f} at end")
    output = RESULTS if args.output is None else Path(args.output)
    result = {"machine": machine_info(), "command": " ".join(sys.argv), "load": load, "rows": rows}
    output.write_text(json.dumps(result, indent=1))
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
