"""Generated C policy vs onnxruntime, batch 1, on the host; and its Cortex-M4F size (and QEMU instruction count).

The policy is a robo_rl actor with random weights and a non-trivial normalizer, exported by robo_rl's own ONNX
exporter: obs (30 by default, also 22) → 64 → 64 → 4, ELU, normalizer (Sub, Div, Clip) and action scaling
(Clip, Mul, Add), i.e. the quadrotor hover policy's shape. Timed per call, after a warm-up:
- `c_loop`: the generated C called from a small C program, clock_gettime around each call; built with the
  parity tests' flags (gcc -O2 -std=c99: x86-64 baseline, SSE2, no FMA), and `c_loop_native` again with
  -march=native (AVX2/FMA where the CPU has them), as firmware built for this CPU would be;
- `c_ctypes`: the same library called through ctypes with preallocated buffers (Python call overhead included);
- `onnxruntime`: `InferenceSession.run` on a (1, obs_dim) array, one intra-op thread.
Observations cycle through 256 samples spread over the metadata bounds. Reported: median and p99 latency (µs)
and the onnxruntime/C ratio (target: ≥ 10× for the C loop). Then `arm-none-eabi-size` of the policy object for
float, int8 weights (float activations) and int8 weights + activations, and, where QEMU is installed, the
instructions per inference on the emulated Cortex-M4 (targets: float ≤ 24 KB text+data, int8 ≤ 8 KB, ≤ 20k
instructions). Results go to bench/results/firmware_host.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch
from machine import machine_info, warn_if_busy

from robo_rl.envs import SpaceSpec
from robo_rl.export.onnx import PolicyMetadata, export_onnx
from robo_rl.firmware_export.build import (
    CORTEX_M4_CC,
    HOST_CC,
    HOST_CFLAGS,
    build_cortex_m4,
    build_host,
    find_tool,
)
from robo_rl.firmware_export.codegen import CSources, generate_c
from robo_rl.firmware_export.evaluate import evaluate
from robo_rl.firmware_export.ir import PolicyIR
from robo_rl.firmware_export.onnx_reader import load_policy
from robo_rl.firmware_export.quantize import quantization_error, quantize, sample_observations
from robo_rl.modules.actor_critic import ActorCritic

RESULTS = Path(__file__).parent / "results" / "firmware_host.json"
SAMPLES = 256
WARMUP = 2000
NATIVE_FLAGS = ("-march=native",)
"""Second C-loop build: the same code with the host's vector units (AVX2/FMA here), as firmware for this CPU
would be built; the first build uses the portable x86-64 baseline (SSE2, no FMA) of the parity tests."""

TIMING_PROGRAM = r"""
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "@HEADER@"

static const float observations[@SAMPLES@][@UPPER@_OBS_DIM] = {@OBS@};

static int compare(const void *a, const void *b)
{
    const long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    const long calls = argc > 1 ? atol(argv[1]) : 100000;
    long *ns = malloc((size_t)calls * sizeof *ns);
    float action[@UPPER@_ACTION_DIM], checksum = 0.0f;
    int errors = 0;
    struct timespec t0, t1;
    for (long i = 0; i < @WARMUP@; ++i) errors += @PREFIX@_policy(observations[i % @SAMPLES@], action);
    for (long i = 0; i < calls; ++i) {
        clock_gettime(CLOCK_MONOTONIC, &t0);
        errors += @PREFIX@_policy(observations[i % @SAMPLES@], action);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        ns[i] = (t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec);
        checksum += action[0];
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < calls; ++i) errors += @PREFIX@_policy(observations[i % @SAMPLES@], action);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const double mean_ns = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / (double)calls;
    qsort(ns, (size_t)calls, sizeof *ns, compare);
    printf("{\"median_us\": %.4f, \"p99_us\": %.4f, \"mean_untimed_us\": %.4f, \"calls\": %ld, "
           "\"errors\": %d, \"checksum\": %.6g}\n",
           ns[calls / 2] / 1e3, ns[calls * 99 / 100] / 1e3, mean_ns / 1e3, calls, errors, (double)checksum);
    free(ns);
    return 0;
}
"""


def quadrotor_sized_onnx(path: Path, obs_dim: int, seed: int = 0) -> Path:
    """A robo_rl actor obs_dim → 64 → 64 → 4 (ELU) with random weights and normalizer statistics, exported by
    robo_rl's ONNX exporter."""
    torch.manual_seed(seed)
    low, high = torch.full((4,), -1.0), torch.ones(4)
    policy = ActorCritic(obs_dim, low, high)
    with torch.no_grad():
        policy.obs_normalizer.mean.copy_(torch.randn(obs_dim) * 0.3)
        policy.obs_normalizer.var.copy_(torch.rand(obs_dim) + 0.1)
        policy.obs_normalizer.count.fill_(1000.0)
    names = tuple(f"obs_{i}" for i in range(obs_dim))
    obs_spec = SpaceSpec(names, (-5.0,) * obs_dim, (5.0,) * obs_dim, ("1",) * obs_dim)
    action_spec = SpaceSpec(("m0", "m1", "m2", "m3"), (-1.0,) * 4, (1.0,) * 4, ("1",) * 4)
    metadata = PolicyMetadata(obs_spec, action_spec, 0.01, "quadrotor/hover", "bench", "0" * 40)
    return export_onnx(policy.deterministic_actor(), metadata, path)


def percentiles_us(samples_ns: np.ndarray) -> dict:
    return {
        "median_us": round(float(np.median(samples_ns)) / 1e3, 4),
        "p99_us": round(float(np.percentile(samples_ns, 99)) / 1e3, 4),
    }


def time_onnxruntime(path: Path, obs: np.ndarray, calls: int) -> dict:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    rows = [obs[i : i + 1] for i in range(len(obs))]
    for i in range(WARMUP):
        session.run(None, {name: rows[i % len(rows)]})
    samples = np.empty(calls, np.int64)
    for i in range(calls):
        start = time.perf_counter_ns()
        session.run(None, {name: rows[i % len(rows)]})
        samples[i] = time.perf_counter_ns() - start
    return {**percentiles_us(samples), "calls": calls, "intra_op_threads": 1}


def time_ctypes(sources: CSources, obs: np.ndarray, directory: Path, calls: int) -> dict:
    host = build_host(sources, directory)
    function = host.function
    rows = [np.ascontiguousarray(row) for row in obs]
    pointers = [row.ctypes.data for row in rows]
    action = np.zeros(host.action_dim, np.float32)
    action_pointer = action.ctypes.data
    for i in range(WARMUP):
        function(pointers[i % len(rows)], action_pointer)
    samples = np.empty(calls, np.int64)
    for i in range(calls):
        start = time.perf_counter_ns()
        function(pointers[i % len(rows)], action_pointer)
        samples[i] = time.perf_counter_ns() - start
    return {**percentiles_us(samples), "calls": calls}


def time_c_loop(
    sources: CSources, obs: np.ndarray, directory: Path, calls: int, extra_flags: tuple[str, ...] = ()
) -> dict:
    """Compile the policy with a small timing main() (HOST_CFLAGS + `extra_flags`) and run it."""
    _, policy_c = sources.write(directory)
    rows = ",\n".join("{" + ", ".join(f"{v:.9g}f" for v in row) + "}" for row in obs)
    program = (
        TIMING_PROGRAM.replace("@HEADER@", sources.header_name)
        .replace("@UPPER@", sources.prefix.upper())
        .replace("@PREFIX@", sources.prefix)
        .replace("@SAMPLES@", str(len(obs)))
        .replace("@WARMUP@", str(WARMUP))
        .replace("@OBS@", rows)
    )
    main_c = directory / "timing_main.c"
    main_c.write_text(program)
    binary = directory / "timing"
    command = [find_tool(HOST_CC), *HOST_CFLAGS, *extra_flags, "-o", str(binary), str(main_c), str(policy_c), "-lm"]
    subprocess.run(command, check=True, cwd=directory)
    output = subprocess.run([str(binary), str(calls)], check=True, capture_output=True, text=True).stdout
    result = json.loads(output)
    if result["errors"]:
        raise RuntimeError(f"the policy returned an error code {result['errors']} times")
    return result | {"flags": " ".join((*HOST_CFLAGS, *extra_flags))}


def cortex_m4_report(ir: PolicyIR, calibration: np.ndarray, directory: Path, qemu_inputs: np.ndarray) -> dict:
    """Object sizes (and QEMU instructions per inference where available) for float and both int8 modes, with
    the int8 error against the float policy on 1000 held-out observations."""
    test_obs = sample_observations(ir.info, 1000, seed=3)
    variants = {
        "float": None,
        "int8_weights": quantize(ir, calibration, activations="float"),
        "int8_weights_activations": quantize(ir, calibration, activations="int8"),
    }
    report = {}
    for name, quantized in variants.items():
        sources = generate_c(ir, quantization=quantized)
        size = build_cortex_m4(sources, directory / name)
        row = {"text": size.text, "data": size.data, "bss": size.bss, "flash": size.flash, "ram": size.ram}
        if quantized is not None:
            error = quantization_error(quantized, test_obs)
            row |= {"int8_max_abs_error": error.max_abs_error, "int8_mean_abs_error": error.mean_abs_error}
        row |= qemu_instructions(sources, qemu_inputs, directory / f"{name}_qemu")
        report[name] = row
    return report


def qemu_instructions(sources: CSources, inputs: np.ndarray, directory: Path) -> dict:
    try:
        from robo_rl.firmware_export.qemu import missing_tools, run_in_qemu
    except ImportError:
        return {"instructions_per_inference": None, "qemu": "robo_rl.firmware_export.qemu not available"}
    if missing_tools():
        return {"instructions_per_inference": None, "qemu": f"missing {', '.join(missing_tools())}"}
    result = run_in_qemu(sources, inputs, directory)
    return {"instructions_per_inference": result.instructions_per_inference}


def bench_policy(obs_dim: int, calls: int, directory: Path) -> dict:
    path = quadrotor_sized_onnx(directory / f"policy_{obs_dim}.onnx", obs_dim)
    ir = load_policy(path)
    obs = sample_observations(ir.info, SAMPLES, seed=1)
    sources = generate_c(ir, prefix="bench")
    host = build_host(sources, directory / "parity")
    parity = float(np.abs(host(obs)[0] - evaluate(ir, obs)).max())
    c_loop = time_c_loop(sources, obs, directory / "c_loop", calls)
    c_native = time_c_loop(sources, obs, directory / "c_loop_native", calls, NATIVE_FLAGS)
    int8_sources = generate_c(ir, prefix="bench", quantization=quantize(ir, obs, "int8"))
    int8_loop = time_c_loop(int8_sources, obs, directory / "c_loop_int8", calls)
    c_ctypes = time_ctypes(sources, obs, directory / "ctypes", calls)
    onnxruntime = time_onnxruntime(path, obs, calls)
    row = {
        "obs_dim": obs_dim,
        "architecture": f"{obs_dim}-64-64-4 elu, normalizer + action scaling",
        "max_abs_c_vs_numpy": parity,
        "c_loop": c_loop,
        "c_loop_native": c_native,
        "c_loop_int8_activations": int8_loop,
        "c_ctypes": c_ctypes,
        "onnxruntime": onnxruntime,
        "speedup_c_loop_median": round(onnxruntime["median_us"] / c_loop["median_us"], 1),
        "speedup_c_loop_native_median": round(onnxruntime["median_us"] / c_native["median_us"], 1),
        "speedup_c_ctypes_median": round(onnxruntime["median_us"] / c_ctypes["median_us"], 1),
    }
    try:
        find_tool(CORTEX_M4_CC)
        calibration = sample_observations(ir.info, 1024, seed=2)
        row["cortex_m4"] = cortex_m4_report(ir, calibration, directory / "cortex_m4", obs[:32])
    except RuntimeError as error:
        row["cortex_m4"] = {"skipped": str(error)}
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=100_000, help="timed calls per method")
    parser.add_argument("--obs-dims", type=int, nargs="+", default=(30, 22), help="observation sizes to bench")
    parser.add_argument("--output", type=Path, default=RESULTS, help="JSON results path")
    args = parser.parse_args()
    load = warn_if_busy()
    torch.set_num_threads(1)
    rows = []
    with tempfile.TemporaryDirectory(prefix="firmware_host_") as tmp:
        for obs_dim in args.obs_dims:
            row = bench_policy(obs_dim, args.calls, Path(tmp) / f"obs{obs_dim}")
            rows.append(row)
            print(
                f"obs {obs_dim}: C loop {row['c_loop']['median_us']:.2f} µs (p99 {row['c_loop']['p99_us']:.2f}), "
                f"-march=native {row['c_loop_native']['median_us']:.2f} µs (p99 {row['c_loop_native']['p99_us']:.2f}), "
                f"ctypes {row['c_ctypes']['median_us']:.2f} µs, onnxruntime {row['onnxruntime']['median_us']:.2f} µs"
                f" (p99 {row['onnxruntime']['p99_us']:.2f}); onnxruntime / C loop = {row['speedup_c_loop_median']}x, "
                f"native {row['speedup_c_loop_native_median']}x",
                flush=True,
            )
            for name, m4 in row["cortex_m4"].items():
                print(f"    cortex-m4 {name}: {m4}", flush=True)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    result = {"machine": machine_info(), "load_average_at_start": load, "calls": args.calls, "rows": rows}
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
