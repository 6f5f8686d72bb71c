"""Export targets: a policy ONNX file → a folder of C sources, templates, README and report for one platform.

`export_target` reads the file into the layer IR (a flow-matching policy: its sampler's parts, see `flow`),
optionally quantizes it to int8, generates the C99 sources, and writes a target folder:

- "c": the sources, an example `main.c` (policy on a zero observation, prints the actions) and a host Makefile.
- "cortex-m4": the sources and a Makefile that builds the object with arm-none-eabi-gcc and prints its size.
- "crazyflie": an out-of-tree controller app for crazyflie-firmware (`controllerOutOfTree*`), with the observation
  assembled from the state estimate by the policy's observation names (robo_rl's quadrotor tasks).
- "arduino": an Arduino library folder (`library.properties`, `src/`, `examples/RoboRlPolicy/RoboRlPolicy.ino`).

Each folder gets a README.md (build / flash) and report.json: the policy object's size (text/data/bss) for the
Cortex-M4F and the host; with `verify` the host C vs onnxruntime error, the non-finite input check, the host
latency and, for "cortex-m4"/"crazyflie", the QEMU run (error and instructions per inference); with `int8` the
quantization error. A missing compiler or emulator skips its check with a note. Only numpy, onnx and
onnxruntime are used here (no torch).

A policy with memory (a GRU, `robo_rl.memory`) is checked over one stream of steps with the state carried and
reset at episode starts (`onnx_reference.episode_starts`), its actions and states against onnxruntime run the
same way; it exports as float32 only (int8 is refused). The checks are in `checks`, the report in `report`.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np

from robo_rl.firmware_export import boards
from robo_rl.firmware_export.board import README_FILE, REPORT_FILE, TargetContext
from robo_rl.firmware_export.checks import CheckInputs, run_checks
from robo_rl.firmware_export.codegen import CSources, generate_c
from robo_rl.firmware_export.flow import generate_flow_c
from robo_rl.firmware_export.ir import Activation, Dense, Elementwise, Gru, Layer, PolicyIR
from robo_rl.firmware_export.policy_file import read_policy
from robo_rl.firmware_export.quantize import quantize, sample_observations
from robo_rl.firmware_export.report import ExportReport

Target = str
"""A board name (`robo_rl.firmware_export.boards`)."""
FIRMWARE_TARGETS: tuple[str, ...] = boards.names()
"""Targets `export_target` writes: the boards."""
TARGETS: tuple[str, ...] = ("onnx", *FIRMWARE_TARGETS)
"""`robo-rl export --target` values (`onnx` is the CLI's plain ONNX export of a run directory)."""
QEMU_TARGETS: tuple[str, ...] = tuple(name for name in FIRMWARE_TARGETS if boards.board(name).qemu)
"""Targets whose `verify` also runs the policy in QEMU on an emulated Cortex-M4."""
CALIBRATION_SAMPLES = 2048
"""Observations sampled from the bounds for int8 calibration when none are given."""


def export_target(
    onnx_path: Path,
    target: Target,
    out_dir: Path,
    int8: bool = False,
    verify: bool = False,
    calibration_obs: np.ndarray | None = None,
    *,
    int8_activations: bool = False,
    test_obs: np.ndarray | None = None,
    prefix: str = "robo_rl",
) -> ExportReport:
    """Write the `target` folder for the policy `onnx_path` into `out_dir` and return what was measured.

    target: one of FIRMWARE_TARGETS. int8: per-output-channel int8 weights (float activations, or int8
    activations too with `int8_activations`), calibrated on `calibration_obs` `(n, obs_dim)` (default:
    CALIBRATION_SAMPLES observations sampled from the metadata bounds). verify: host C vs onnxruntime parity on
    `checks.VERIFY_SAMPLES` observations sampled from the bounds (plus `test_obs`), the non-finite input check, and QEMU
    for QEMU_TARGETS when qemu-system-arm and arm-none-eabi-gcc are installed. The int8 error is measured on
    `test_obs` `(n, obs_dim)` (default: bounds samples). Raises ValueError for an unknown target, a policy the
    exporter cannot translate (UnsupportedOperatorError names op and node) or a policy the target cannot run.
    """
    board = boards.board(target)  # ValueError listing the boards
    onnx_path = Path(onnx_path)
    if not onnx_path.is_file():
        raise FileNotFoundError(f"{onnx_path}: no such ONNX file")
    flow, ir = read_policy(onnx_path)
    if board.check is not None:
        board.check(ir.info)  # refuse a policy the board cannot run before anything is written
    int8 = int8 or int8_activations
    if flow is not None and int8:
        raise ValueError("int8 export is not supported for flow-matching policies (float32 only)")
    sources = (
        generate_flow_c(flow, prefix)
        if flow is not None
        else _generate(ir, prefix, int8, int8_activations, calibration_obs)
    )
    float_sources = _generate(ir, prefix, False, False, None) if int8 else sources
    with tempfile.TemporaryDirectory(prefix="robo_rl_export_") as scratch:
        inputs = CheckInputs(ir, onnx_path, target, sources, float_sources, int8, verify, test_obs, board.qemu)
        checks = run_checks(inputs, Path(scratch))
    numerics = _numerics(int8, int8_activations)
    context = TargetContext(ir, onnx_path, target, sources, prefix, numerics)
    writer, out_dir = board.write, Path(out_dir)
    planned = writer(context, out_dir, dry_run=True)
    report = ExportReport(
        target=target,
        onnx_path=onnx_path,
        out_dir=out_dir,
        files=tuple(sorted({*planned, README_FILE, REPORT_FILE})),
        obs_dim=ir.obs_dim,
        action_dim=ir.action_dim,
        layers=flow.describe() if flow is not None else describe_layers(ir),
        numerics=numerics,
        **checks,
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    writer(context, out_dir, dry_run=False, report=report)
    (out_dir / REPORT_FILE).write_text(json.dumps(report.to_dict(), indent=2) + "\n")
    return report


def describe_layers(ir: PolicyIR) -> tuple[str, ...]:
    """Short layer descriptions, e.g. ("sub", "div", "clip", "dense 30→64", "elu", ...)."""
    return tuple(_describe_layer(layer) for layer in ir.layers)


def _describe_layer(layer: Layer) -> str:
    if isinstance(layer, Dense):
        return f"dense {layer.in_features}→{layer.out_features}"
    if isinstance(layer, Gru):
        return f"gru {layer.in_features}→{layer.hidden_size} (state)"
    if isinstance(layer, Activation):
        return layer.kind
    if isinstance(layer, Elementwise):
        return layer.op
    return "clip"


def _generate(
    ir: PolicyIR, prefix: str, int8: bool, int8_activations: bool, calibration: np.ndarray | None
) -> CSources:
    if not int8:
        return generate_c(ir, prefix=prefix)
    if calibration is None:
        calibration = sample_observations(ir.info, CALIBRATION_SAMPLES, seed=1)
    quantized = quantize(ir, np.asarray(calibration, np.float32), activations="int8" if int8_activations else "float")
    return generate_c(ir, prefix=prefix, quantization=quantized)


def _numerics(int8: bool, int8_activations: bool) -> str:
    if int8_activations:
        return "int8 weights (per output channel) and int8 activations (calibrated)"
    if int8:
        return "int8 weights (per output channel), float32 activations"
    return "float32"
