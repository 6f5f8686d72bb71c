"""Cortex-M4 cost of an exported 64-64 quadrotor policy: instructions per inference in QEMU and sizes.

The policy: `--onnx FILE` (e.g. a trained quadrotor_hover_robust_ppo run's policy.onnx), or by default the
quadrotor_hover_robust_ppo actor (obs 30 → 64 → 64 → 4, ELU, observation normalizer, action clip and scaling)
with random weights, exported by robo_rl's own ONNX exporter. For float32 and the two int8 variants (int8 weights
with float activations; int8 weights and activations calibrated on observations sampled from the metadata
bounds) it reports:
- instructions per inference on `qemu-system-arm -M mps2-an386 -cpu cortex-m4` (`-icount shift=0` and the
  board's 25 MHz timer; method checked on known loops, error reported), and the estimated time on an STM32F405
  at 168 MHz for 1.0-1.5 cycles per instruction (an estimate: QEMU counts instructions, not cycles);
- text/data/bss of the policy object alone (`build_cortex_m4`) and of the whole test firmware;
- max |QEMU − onnxruntime| on the same observations (for int8: the quantization error, not a parity check).
Targets (issue 6): float text+data ≤ 24 KB, int8 ≤ 8 KB, ≤ 20k instructions per inference.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
from machine import machine_info

from robo_rl.firmware_export.build import build_cortex_m4
from robo_rl.firmware_export.codegen import generate_c
from robo_rl.firmware_export.ir import PolicyIR
from robo_rl.firmware_export.onnx_reader import load_policy
from robo_rl.firmware_export.qemu import estimated_latency_us, run_in_qemu
from robo_rl.firmware_export.quantize import QuantizedIR, quantize, sample_observations

RESULTS = Path(__file__).parent / "results" / "firmware_qemu.json"
CLOCK_HZ = 168e6
CPI_RANGE = (1.0, 1.25, 1.5)
TARGETS = {"float_flash_bytes": 24 * 1024, "int8_flash_bytes": 8 * 1024, "instructions_per_inference": 20_000}


def export_random_quadrotor_policy(path: Path) -> Path:
    """The quadrotor_hover_robust_ppo actor with random weights, exported as training would export it."""
    import torch

    from robo_rl.api.configs import preset
    from robo_rl.build import build_policy
    from robo_rl.config import config_hash
    from robo_rl.export.onnx import PolicyMetadata, export_onnx
    from robo_rl.sim import make

    cfg = preset("quadrotor_hover_robust_ppo")
    env = make(cfg.task.name, num_envs=1, seed=0, config=cfg.task.config)
    torch.manual_seed(0)
    policy = build_policy(cfg, env)
    metadata = PolicyMetadata(env.obs_spec, env.action_spec, env.dt, cfg.task.name, config_hash(cfg), "bench")
    return export_onnx(policy.deterministic_actor(), metadata, path)


def variants(ir: PolicyIR, seed: int) -> dict[str, QuantizedIR | None]:
    calibration = sample_observations(ir.info, 1024, seed=seed + 1)
    return {
        "float32": None,
        "int8_weights_float_activations": quantize(ir),
        "int8_weights_int8_activations": quantize(ir, calibration, activations="int8"),
    }


def measure(
    ir: PolicyIR, quantization: QuantizedIR | None, obs: np.ndarray, reference: np.ndarray, args: argparse.Namespace
) -> dict[str, Any]:
    sources = generate_c(ir, quantization=quantization)
    with tempfile.TemporaryDirectory(prefix="firmware_qemu_") as scratch:
        result = run_in_qemu(sources, obs, Path(scratch) / "qemu", timed_inferences=args.timed_inferences)
        policy_object = build_cortex_m4(sources, Path(scratch) / "object")
    if not np.all(result.codes == 0):
        raise RuntimeError(f"the policy rejected {int(np.sum(result.codes != 0))} finite observations")
    instructions = result.instructions_per_inference
    return {
        "instructions_per_inference": round(instructions, 1),
        "timed_inferences": result.timed_inferences,
        "instruction_count_max_relative_error": result.max_count_error,
        "known_loops": [
            {"expected": c.expected_instructions, "measured": c.measured_instructions} for c in result.loop_checks
        ],
        "estimated_us_at_168mhz": {
            f"cpi_{cpi}": round(estimated_latency_us(instructions, CLOCK_HZ, cpi), 1) for cpi in CPI_RANGE
        },
        "policy_object": _size(policy_object),
        "firmware": _size(result.firmware_size),
        "max_abs_error_vs_onnxruntime": float(np.max(np.abs(result.outputs - reference))),
    }


def _size(report: Any) -> dict[str, int]:
    return {"text": report.text, "data": report.data, "bss": report.bss, "flash": report.flash, "ram": report.ram}


def verdicts(rows: dict[str, dict[str, Any]]) -> dict[str, bool]:
    float_row = rows["float32"]
    int8_flash = min(row["policy_object"]["flash"] for name, row in rows.items() if name.startswith("int8"))
    return {
        "float_flash_within_target": float_row["policy_object"]["flash"] <= TARGETS["float_flash_bytes"],
        "int8_flash_within_target": int8_flash <= TARGETS["int8_flash_bytes"],
        "float_instructions_within_target": float_row["instructions_per_inference"]
        <= TARGETS["instructions_per_inference"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--onnx", type=Path, help="policy (default: random-weight quadrotor_hover_robust_ppo)")
    parser.add_argument("--inputs", type=int, default=100, help="observations run and compared (default 100)")
    parser.add_argument("--timed-inferences", type=int, default=256, help="inferences in the timed loop")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sampled observations")
    parser.add_argument("--output", type=Path, default=RESULTS, help="JSON results path")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="firmware_qemu_policy_") as scratch:
        onnx_path = args.onnx or export_random_quadrotor_policy(Path(scratch) / "policy.onnx")
        ir = load_policy(onnx_path)
        obs = sample_observations(ir.info, args.inputs, seed=args.seed)
        session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
        reference = session.run(None, {session.get_inputs()[0].name: obs})[0]
    rows = {}
    print(f"{'variant':<32}{'instructions':>13}{'~µs@168MHz':>12}{'text':>8}{'data':>6}{'bss':>6}{'max err':>10}")
    for name, quantization in variants(ir, args.seed).items():
        row = measure(ir, quantization, obs, reference, args)
        rows[name] = row
        size, us = row["policy_object"], row["estimated_us_at_168mhz"]["cpi_1.25"]
        print(
            f"{name:<32}{row['instructions_per_inference']:>13,.0f}{us:>12.0f}{size['text']:>8}{size['data']:>6}"
            f"{size['bss']:>6}{row['max_abs_error_vs_onnxruntime']:>10.2e}",
            flush=True,
        )
    policy = "random-weight quadrotor_hover_robust_ppo actor" if args.onnx is None else str(args.onnx)
    dense = [ir.obs_dim] + [layer.out_features for layer in ir.dense_layers]
    results = {
        "machine": machine_info(),
        "policy": {"source": policy, "obs_dim": ir.obs_dim, "action_dim": ir.action_dim, "dense_widths": dense},
        "method": "qemu-system-arm -M mps2-an386 -cpu cortex-m4 -icount shift=0; CMSDK timer at 25 MHz",
        "settings": {"inputs": args.inputs, "timed_inferences": args.timed_inferences, "seed": args.seed},
        "targets": TARGETS,
        "verdicts": verdicts(rows),
        "rows": rows,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
