"""The cost of one SAC update from camera frames against one from state, side by side on this CPU.

Every case is a real `PixelSAC` (DrQ: the encoder in the critic's loss, random shifts) or `SAC` update on a batch of
random transitions, timed in rounds that visit the cases in turn so that the machine's load falls on all alike; the
median over rounds is reported with its ratio to the state update of the same round set. The state case has the
peg's sizes (17 values, 4 actions); the camera cases add one or two cameras to the same state.

    python bench/pixel_update.py                          # the default cases, batch 256, one thread
    python bench/pixel_update.py --rounds 20 --out /tmp/u.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from machine import machine_info, warm_up_torch, warn_if_busy

from robo_rl.algorithms.drq import sac as build_sac
from robo_rl.algorithms.encoder_config import EncoderConfig
from robo_rl.algorithms.off_policy import OffPolicyAlgorithm
from robo_rl.algorithms.sac import SACConfig
from robo_rl.image_spec import ImageSpec
from robo_rl.storage.replay import Transitions

RESULTS = Path(__file__).parent / "results" / "pixel_update.json"
STATE_DIM, ACTION_DIM = 17, 4


@dataclass(frozen=True)
class Case:
    name: str
    side: int = 0
    """Frame side in pixels; 0: state only."""
    cameras: int = 1
    channels: int = 32
    strides: tuple[int, ...] = ()
    bf16: bool = False

    def specs(self) -> tuple[ImageSpec, ...]:
        names = ("wrist", "side")[: self.cameras] if self.side else ()
        return tuple(ImageSpec(name, self.side, self.side, 3) for name in names)


CASES = (
    Case("state"),
    Case("32x32, DrQ encoder", 32),
    Case("64x64, DrQ encoder", 64),
    Case("64x64, DrQ encoder, 16 filters", 64, channels=16),
    Case("64x64, strides 2-2-2-2, 32 filters", 64, strides=(2, 2, 2, 2)),
    Case("64x64, strides 2-2-2-2, 16 filters", 64, channels=16, strides=(2, 2, 2, 2)),
    Case("64x64, strides 2-2-2-2, 16 filters, bf16", 64, channels=16, strides=(2, 2, 2, 2), bf16=True),
    Case("2 x 64x64, strides 2-2-2-2, 16 filters", 64, cameras=2, channels=16, strides=(2, 2, 2, 2)),
    Case("2 x 64x64, strides 2-2-2-2, 16 filters, bf16", 64, cameras=2, channels=16, strides=(2, 2, 2, 2), bf16=True),
)


def algorithm(case: Case) -> OffPolicyAlgorithm:
    encoder = EncoderConfig(channels=case.channels, strides=case.strides, bf16=case.bf16)
    cfg = SACConfig(encoder=encoder)
    bounds = torch.ones(ACTION_DIM)
    return build_sac(STATE_DIM, STATE_DIM, -bounds, bounds, cfg, "cpu", case.specs())


def batch(case: Case, size: int, generator: torch.Generator) -> Transitions:
    def state() -> torch.Tensor:
        return torch.randn(size, STATE_DIM, generator=generator)

    def frames() -> dict[str, torch.Tensor] | None:
        specs = case.specs()
        if not specs:
            return None
        shape = (size, case.side, case.side, 3)
        return {s.name: torch.randint(0, 256, shape, generator=generator, dtype=torch.uint8) for s in specs}

    obs, next_obs = state(), state()
    no = torch.zeros(size, dtype=torch.bool)
    return Transitions(
        obs=obs,
        critic_obs=obs,
        actions=torch.rand(size, ACTION_DIM, generator=generator) * 2 - 1,
        rewards=torch.randn(size, generator=generator),
        costs=torch.zeros(size),
        next_obs=next_obs,
        next_critic_obs=next_obs,
        terminated=no,
        truncated=no,
        intervened=no,
        is_demo=no,
        images=frames(),
        next_images=frames(),
    )


def time_update(algo: OffPolicyAlgorithm, data: Transitions) -> float:
    start = time.perf_counter()
    algo.update(data)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=10, help="timed rounds, each visiting every case once")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    load = warn_if_busy()
    warm_up_torch()
    generator = torch.Generator().manual_seed(0)
    built = [(case, algorithm(case), batch(case, args.batch_size, generator)) for case in CASES]
    for _, algo, data in built:  # warm-up: first calls allocate
        time_update(algo, data)
    seconds: dict[str, list[float]] = {case.name: [] for case in CASES}
    for index in range(args.rounds):
        for case, algo, data in built:
            seconds[case.name].append(time_update(algo, data))
        print(f"round {index + 1}/{args.rounds}", file=sys.stderr, flush=True)
    state_ms = statistics.median(seconds["state"]) * 1e3
    rows: list[dict[str, Any]] = []
    for case in CASES:
        median_ms = statistics.median(seconds[case.name]) * 1e3
        rows.append({**asdict(case), "median_ms": median_ms, "ratio_to_state": median_ms / state_ms})
        print(f"{case.name:42s} {median_ms:8.1f} ms  {median_ms / state_ms:5.1f}x state")
    end_load = warn_if_busy()
    results = {
        "machine": machine_info(),
        "settings": {k: str(v) for k, v in vars(args).items()},
        "load_average": [load, end_load],
        "cases": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
