"""Inference cost of exported flow policies by number of Euler steps K (issue 9): host C, Cortex-M4, onnxruntime.

Policies with random weights and the quadrotor hover sizes (22 observations, 4 actions, 64-64 ELU networks, an
observation normalizer with non-trivial statistics):
  flow K      the K-step flow sampler from a fixed noise (what `robo-rl export` writes for a cloned flow policy);
  fql         FQL's one-step policy (one MLP call whatever K the flow it distills has);
  dsrl K=10   a 64-64 latent actor picking the noise, then the 10-step flow.
Each is exported to policy.onnx, then `export_target(..., "cortex-m4", verify=True)`: host C parity and time per
call, the Cortex-M4 object size, and QEMU (mps2-an386) instructions per call with its error against
onnxruntime. onnxruntime's time per call (batch 1, one thread) is measured on the same file.

Usage: `python bench/flow_inference.py [--steps 1 2 4 10]`; results go to bench/results/flow_inference.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import timeit
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import torch
from machine import machine_info, warn_if_busy
from torch import nn

from robo_rl.algorithms.dsrl import DSRLConfig, dsrl
from robo_rl.algorithms.fql import FQL, FQLConfig
from robo_rl.envs import SpaceSpec
from robo_rl.export.onnx import PolicyMetadata, export_onnx
from robo_rl.firmware_export.targets import export_target
from robo_rl.modules.flow import FlowPolicy

RESULTS = Path(__file__).parent / "results" / "flow_inference.json"
OBS, ACTIONS, HIDDEN = 22, 4, (64, 64)


def metadata() -> PolicyMetadata:
    obs = SpaceSpec(tuple(f"o{i}" for i in range(OBS)), (-5.0,) * OBS, (5.0,) * OBS, ("1",) * OBS)
    action = SpaceSpec(tuple(f"a{i}" for i in range(ACTIONS)), (0.0,) * ACTIONS, (0.15,) * ACTIONS, ("N",) * ACTIONS)
    return PolicyMetadata(obs, action, 0.01, "quadrotor/hover", "bench", "bench")


def policies(steps: list[int]) -> dict[str, nn.Module]:
    torch.manual_seed(0)
    low, high = torch.zeros(ACTIONS), torch.full((ACTIONS,), 0.15)
    actors: dict[str, nn.Module] = {}
    for k in steps:
        flow = FlowPolicy(OBS, low, high, HIDDEN, "elu", steps=k, normalize_obs=True)
        flow.obs_normalizer.update(torch.randn(256, OBS) * 2 + 0.5)
        actors[f"flow K={k}"] = flow.deterministic_actor()
    nets = {"actor_hidden": HIDDEN, "flow_hidden": HIDDEN, "critic_hidden": HIDDEN, "activation": "elu"}
    actors["fql (one step)"] = FQL(OBS, OBS, low, high, FQLConfig(**nets)).actor.deterministic_actor()
    actors["dsrl K=10"] = dsrl(OBS, OBS, low, high, DSRLConfig(**nets, flow_steps=10)).actor.deterministic_actor()
    return actors


def measure(name: str, actor: nn.Module, directory: Path) -> dict[str, Any]:
    path = export_onnx(actor.eval(), metadata(), directory / f"{name.replace(' ', '_')}.onnx")
    report = export_target(path, "cortex-m4", directory / name.replace(" ", "_"), verify=True)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    obs = np.zeros((1, OBS), dtype=np.float32)
    runs = timeit.repeat(lambda: session.run(None, {"obs": obs}), number=200, repeat=5)
    qemu = report.qemu
    return {
        "policy": name,
        "onnx_bytes": path.stat().st_size,
        "onnxruntime_us": min(runs) / 200 * 1e6,
        "host_c_us": report.host_latency_us,
        "host_c_max_abs_error": None if report.host_parity is None else report.host_parity.max_abs_error,
        "cortex_m4_text_bytes": None if report.cortex_m4_size is None else report.cortex_m4_size.text,
        "cortex_m4_bss_bytes": None if report.cortex_m4_size is None else report.cortex_m4_size.bss,
        "qemu_instructions": None if qemu is None else qemu.instructions_per_inference,
        "qemu_max_abs_error": None if qemu is None else qemu.vs_onnxruntime.max_abs_error,
        "ok": report.ok,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, nargs="+", default=[1, 2, 4, 10])
    parser.add_argument("--output", help="JSON file (default: bench/results/flow_inference.json)")
    args = parser.parse_args()
    warn_if_busy()
    torch.set_num_threads(1)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, actor in policies(args.steps).items():
            row = measure(name, actor, Path(tmp))
            rows.append(row)
            print(
                f"{name:15s} onnxruntime {row['onnxruntime_us']:6.1f} us, host C {row['host_c_us']:5.2f} us, "
                f"M4 {row['qemu_instructions']} instructions, text {row['cortex_m4_text_bytes']} B, ok {row['ok']}",
                flush=True,
            )
    output = RESULTS if args.output is None else Path(args.output)
    output.write_text(json.dumps({"machine": machine_info(), "command": " ".join(sys.argv), "rows": rows}, indent=1))
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
