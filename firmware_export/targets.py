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
"""

from __future__ import annotations

import json
import math
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

import robo_rl
from robo_rl.firmware_export import qemu
from robo_rl.firmware_export.build import (
    SizeReport,
    ToolNotFoundError,
    build_cortex_m4,
    build_host,
    build_host_object,
)
from robo_rl.firmware_export.codegen import CSources, generate_c
from robo_rl.firmware_export.flow import generate_flow_c
from robo_rl.firmware_export.ir import Activation, Dense, Elementwise, Layer, PolicyInfo, PolicyIR
from robo_rl.firmware_export.policy_file import read_policy
from robo_rl.firmware_export.quantize import quantize, sample_observations

Target = Literal["onnx", "c", "cortex-m4", "crazyflie", "arduino"]
TARGETS: tuple[str, ...] = ("onnx", "c", "cortex-m4", "crazyflie", "arduino")
FIRMWARE_TARGETS: tuple[str, ...] = ("c", "cortex-m4", "crazyflie", "arduino")
"""Targets `export_target` writes (`onnx` is the CLI's plain ONNX export of a run directory)."""
QEMU_TARGETS: tuple[str, ...] = ("cortex-m4", "crazyflie")
"""Targets whose `verify` also runs the policy in QEMU on an emulated Cortex-M4."""

TEMPLATES = Path(__file__).parent / "templates"
PARITY_TOLERANCE = 1e-5
"""Float C vs onnxruntime: max |error| ≤ this × max(1, max |action|)."""
VERIFY_SAMPLES = 1024
"""Observations of the host parity check (sampled from the metadata bounds)."""
CALIBRATION_SAMPLES = 2048
"""Observations sampled from the bounds for int8 calibration when none are given."""
QEMU_SAMPLES = 32
"""Observations run in QEMU (each is printed bit-exact, so keep it small)."""
HOST_TIMING_CALLS = 2000
"""Calls of the host latency measurement (best of 5 batches)."""
REPORT_FILE = "report.json"
README_FILE = "README.md"
CRAZYFLIE_MAP_HEADER = "robo_rl_crazyflie_map.h"
CRAZYFLIE_HOVER_ACTION = -0.1102
"""Motor action of robo_rl's Crazyflie 2.1 model in hover (`hover_action("motor", crazyflie_2_1)`)."""
_PLACEHOLDER = re.compile(r"@@([A-Za-z_0-9]+)@@")


@dataclass(frozen=True)
class Comparison:
    """How far one implementation's actions are from a reference's on the same observations."""

    reference: str
    """What was compared against, e.g. "onnxruntime" or "host C"."""
    samples: int
    max_abs_error: float
    """Largest |action - reference action| over all samples and action elements (action units)."""
    output_scale: float
    """Largest |reference action|: the error is judged relative to max(1, this)."""

    @property
    def relative_error(self) -> float:
        return self.max_abs_error / max(1.0, self.output_scale)

    @property
    def within_tolerance(self) -> bool:
        return self.relative_error <= PARITY_TOLERANCE


@dataclass(frozen=True)
class QemuCheck:
    """The policy on an emulated Cortex-M4 (QEMU mps2-an386) vs onnxruntime and vs the host build."""

    vs_onnxruntime: Comparison
    vs_host: Comparison
    instructions_per_inference: float | None
    """Mean executed instructions of one call (QEMU -icount), None when no input was accepted."""
    estimated_latency_us: float | None
    """Rough time at 168 MHz (STM32F405) from the instruction count; an estimate, not a measurement."""
    count_error: float
    """Largest relative error of the instruction count on known loops (the method's own check)."""
    nonfinite_rejected: bool
    """The firmware returned the error code for a NaN observation."""
    firmware_size: SizeReport
    """Whole test firmware (startup code, libm and test harness included), not the policy alone."""


@dataclass(frozen=True)
class ExportReport:
    """What `export_target` wrote and measured. Fields are None where a check was not run (see `notes`)."""

    target: str
    onnx_path: Path
    out_dir: Path
    files: tuple[str, ...]
    """Written files, relative to out_dir."""
    obs_dim: int
    action_dim: int
    layers: tuple[str, ...]
    """One short description per IR layer."""
    numerics: str
    cortex_m4_size: SizeReport | None = None
    """The policy object alone, built with the Cortex-M4F flags."""
    host_size: SizeReport | None = None
    """The policy object alone, built by the host gcc (-O2), measured with `size`."""
    host_latency_us: float | None = None
    """Host C time per call through ctypes (ctypes' own overhead of about a microsecond included; with verify)."""
    host_parity: Comparison | None = None
    """Float C (host gcc) vs onnxruntime (with verify)."""
    nonfinite_rejected: bool | None = None
    """The host build returned the error code for a NaN observation (with verify)."""
    int8_error: Comparison | None = None
    """Quantized C (host gcc) vs float onnxruntime (with int8)."""
    qemu: QemuCheck | None = None
    notes: tuple[str, ...] = field(default=())
    """Why a check was skipped, and other remarks."""

    @property
    def ok(self) -> bool:
        """True when every check that ran passed (the int8 error is reported, never judged)."""
        checks = [
            self.host_parity is None or self.host_parity.within_tolerance,
            self.nonfinite_rejected is not False,
            self.qemu is None or (self.qemu.vs_host.within_tolerance and self.qemu.nonfinite_rejected),
        ]
        if self.qemu is not None and self.int8_error is None:
            checks.append(self.qemu.vs_onnxruntime.within_tolerance)
        return all(checks)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (paths as strings, derived error ratios included)."""
        data = asdict(self)
        data["onnx_path"], data["out_dir"] = str(self.onnx_path), str(self.out_dir)
        sizes = [data["cortex_m4_size"], data["host_size"], data["qemu"] and data["qemu"]["firmware_size"]]
        for size in filter(None, sizes):
            del size["object_path"]  # a scratch file, gone after the export
        data["ok"] = self.ok
        for name, comparison in (("host_parity", self.host_parity), ("int8_error", self.int8_error)):
            if comparison is not None:
                data[name]["relative_error"] = comparison.relative_error
        if self.qemu is not None:
            data["qemu"]["vs_onnxruntime"]["relative_error"] = self.qemu.vs_onnxruntime.relative_error
        return data

    def lines(self) -> tuple[str, ...]:
        """The human-readable report, one finding per line."""
        lines = [
            f"{self.target}: wrote {len(self.files)} files to {self.out_dir}",
            f"policy: {self.obs_dim} → {self.action_dim}, {', '.join(self.layers)}; numerics: {self.numerics}",
        ]
        if self.cortex_m4_size is not None:
            size = self.cortex_m4_size
            lines.append(
                f"cortex-m4 object: text {size.text} B, data {size.data} B, bss {size.bss} B "
                f"(flash {size.flash} B, static RAM {size.ram} B)"
            )
        if self.host_size is not None:
            lines.append(
                f"host object: text {self.host_size.text} B, data {self.host_size.data} B, bss {self.host_size.bss} B"
            )
        if self.host_parity is not None:
            lines.append(_comparison_line("host C (float) vs onnxruntime", self.host_parity, judged=True))
        if self.host_latency_us is not None:
            lines.append(f"host C latency: {self.host_latency_us:.2f} µs per call (through ctypes)")
        if self.nonfinite_rejected is not None:
            lines.append(f"non-finite observation → error code: {'ok' if self.nonfinite_rejected else 'FAILED'}")
        if self.int8_error is not None:
            lines.append(_comparison_line("host C (int8) vs onnxruntime (float)", self.int8_error, judged=False))
        if self.qemu is not None:
            lines.extend(_qemu_lines(self.qemu, judge_onnxruntime=self.int8_error is None))
        lines.extend(f"note: {note}" for note in self.notes)
        return tuple(lines)


def _comparison_line(what: str, comparison: Comparison, judged: bool) -> str:
    verdict = ""
    if judged:
        verdict = " (ok)" if comparison.within_tolerance else f" (MISMATCH: above {PARITY_TOLERANCE:g} × scale)"
    return (
        f"{what}: max |error| {comparison.max_abs_error:.3g} over {comparison.samples} observations, "
        f"{comparison.relative_error:.3g} of output scale {max(1.0, comparison.output_scale):.3g}{verdict}"
    )


def _qemu_lines(check: QemuCheck, judge_onnxruntime: bool) -> list[str]:
    lines = [
        _comparison_line("QEMU cortex-m4 vs onnxruntime", check.vs_onnxruntime, judged=judge_onnxruntime),
        _comparison_line("QEMU cortex-m4 vs host C", check.vs_host, judged=True),
        f"QEMU non-finite observation → error code: {'ok' if check.nonfinite_rejected else 'FAILED'}",
    ]
    if check.instructions_per_inference is not None:
        lines.append(
            f"QEMU instructions per inference: {check.instructions_per_inference:.0f} (count checked to "
            f"{check.count_error:.1e} on known loops); ≈ {check.estimated_latency_us:.0f} µs at 168 MHz (estimate)"
        )
    return lines


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
    VERIFY_SAMPLES observations sampled from the bounds (plus `test_obs`), the non-finite input check, and QEMU
    for QEMU_TARGETS when qemu-system-arm and arm-none-eabi-gcc are installed. The int8 error is measured on
    `test_obs` `(n, obs_dim)` (default: bounds samples). Raises ValueError for an unknown target, a policy the
    exporter cannot translate (UnsupportedOperatorError names op and node) or a policy the target cannot run.
    """
    if target not in FIRMWARE_TARGETS:
        raise ValueError(f"unknown firmware target {target!r}; choose one of {', '.join(FIRMWARE_TARGETS)}")
    onnx_path = Path(onnx_path)
    if not onnx_path.is_file():
        raise FileNotFoundError(f"{onnx_path}: no such ONNX file")
    flow, ir = read_policy(onnx_path)
    if target == "crazyflie":
        crazyflie_map_header(ir.info)  # refuse a policy the controller cannot feed before writing anything
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
        checks = _run_checks(
            _CheckInputs(ir, onnx_path, target, sources, float_sources, int8, verify, test_obs), Path(scratch)
        )
    numerics = _numerics(int8, int8_activations)
    context = _TargetContext(ir, onnx_path, target, sources, prefix, numerics)
    writer, out_dir = _WRITERS[target], Path(out_dir)
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


def onnxruntime_actions(onnx_path: Path, obs: np.ndarray, info: PolicyInfo) -> np.ndarray:
    """Actions `(n, action_dim)` of the ONNX file in onnxruntime for `obs` `(n, obs_dim)` (split over the graph
    inputs in `info.inputs` order); models with a fixed batch of 1 run row by row."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    obs = np.asarray(obs, dtype=np.float32)
    bounds = np.cumsum([0] + [width for _, width in info.inputs])
    batch_dims = {node.name: node.shape[0] for node in session.get_inputs()}

    def run(rows: np.ndarray) -> np.ndarray:
        feeds = {name: rows[:, bounds[i] : bounds[i + 1]] for i, (name, _) in enumerate(info.inputs)}
        return np.asarray(session.run([info.output], feeds)[0], dtype=np.float32)

    if all(dim == 1 for dim in batch_dims.values()):
        return np.concatenate([run(obs[i : i + 1]) for i in range(len(obs))])
    return run(obs)


def describe_layers(ir: PolicyIR) -> tuple[str, ...]:
    """Short layer descriptions, e.g. ("sub", "div", "clip", "dense 30→64", "elu", ...)."""
    return tuple(_describe_layer(layer) for layer in ir.layers)


def _describe_layer(layer: Layer) -> str:
    if isinstance(layer, Dense):
        return f"dense {layer.in_features}→{layer.out_features}"
    if isinstance(layer, Activation):
        return layer.kind
    if isinstance(layer, Elementwise):
        return layer.op
    return "clip"


def render(template: str, values: Mapping[str, str]) -> str:
    """Replace every `@@NAME@@` in `template` with `values[NAME]`; a placeholder without a value is an error."""
    missing = sorted({name for name in _PLACEHOLDER.findall(template) if name not in values})
    if missing:
        raise KeyError(f"template placeholders without a value: {', '.join(missing)}")
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], template)


def c_string(text: str) -> str:
    """`text` as a C string literal (ASCII; other bytes as octal escapes)."""
    out = []
    for byte in text.encode():
        char = chr(byte)
        if char in '"\\':
            out.append("\\" + char)
        elif 32 <= byte < 127:
            out.append(char)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def c_comment(text: str) -> str:
    """`text` made safe inside a C block comment."""
    return text.replace("*/", "* /").replace("/*", "/ *")


# --- Crazyflie observation/action mapping ------------------------------------------------------------------------

_CF_VECTORS = ("position_error", "velocity", "velocity_error", "reference_velocity", "angular_velocity")
_CF_VECTOR_NAME = re.compile(rf"^({'|'.join(_CF_VECTORS)})_([xyz])$")
_CF_ROTATION_NAME = re.compile(r"^rotation_([0-2])([0-2])$")
_CF_HISTORY_NAME = re.compile(r"^previous_action_(\d+)_([0-3])$")
CRAZYFLIE_ACTIONS = ("rotor_0", "rotor_1", "rotor_2", "rotor_3")
_CF_RATES_HZ = (1000, 500, 250, 100, 50, 25)
"""Rates with a RATE_<N>_HZ constant in the firmware (divisors of its 1 kHz stabilizer loop)."""


def crazyflie_observation_source(name: str) -> str:
    """The C expression (in the controller's terms) that gives the observation element `name`.

    Supported: robo_rl's quadrotor observation names: position_error_{x,y,z}, rotation_{r}{c}, velocity_{x,y,z},
    velocity_error_{x,y,z}, reference_velocity_{x,y,z}, angular_velocity_{x,y,z}, previous_action_{k}_{i}.
    """
    if match := _CF_VECTOR_NAME.match(name):
        return f"signals->{match.group(1)}[{'xyz'.index(match.group(2))}]"
    if match := _CF_ROTATION_NAME.match(name):
        return f"signals->rotation[{3 * int(match.group(1)) + int(match.group(2))}]"
    if match := _CF_HISTORY_NAME.match(name):
        return f"history[{int(match.group(1))}][{int(match.group(2))}]"
    raise ValueError(name)


def crazyflie_map_header(info: PolicyInfo) -> str:
    """`robo_rl_crazyflie_map.h`: the policy rate, the action bounds and rotor order, and the function that
    fills the observation from the controller's signals, generated from the policy's metadata.

    Raises ValueError when the policy cannot be flown by the controller: observation names it cannot compute,
    actions other than rotor_0..3 with finite bounds, or a control period that is not a firmware rate.
    """
    sources = _crazyflie_sources(info.obs_names)
    rate = _crazyflie_rate(info.dt)
    rotor_index = _crazyflie_rotor_index(info)
    history_rows = max([int(m.group(1)) + 1 for n in info.obs_names if (m := _CF_HISTORY_NAME.match(n))], default=0)
    lows = ", ".join(_c_float(info.action_low[i]) for i in rotor_index)
    highs = ", ".join(_c_float(info.action_high[i]) for i in rotor_index)
    fill = "\n".join(
        f"    obs[{i}] = {source}; /* {c_comment(name)} [{c_comment(unit)}] */"
        for i, (name, unit, source) in enumerate(zip(info.obs_names, info.obs_units, sources, strict=True))
    )
    return (
        f"/* Generated by robo_rl {robo_rl.__version__} for task {c_comment(info.task or 'unknown')}: how the\n"
        " * Crazyflie controller builds the policy's observation and reads its actions. Included once, by\n"
        " * robo_rl_controller.c, after robo_rl_cf_signals_t. */\n"
        "#ifndef ROBO_RL_CRAZYFLIE_MAP_H\n#define ROBO_RL_CRAZYFLIE_MAP_H\n\n"
        f"#define ROBO_RL_CF_POLICY_RATE_HZ {rate} /* policy control period {info.dt:g} s */\n"
        f"#define ROBO_RL_CF_HISTORY_LENGTH {history_rows} /* previous actions in the observation */\n"
        f"#define ROBO_RL_CF_HISTORY_ROWS {max(history_rows, 1)}\n"
        f"#ifndef ROBO_RL_CF_INITIAL_ACTION\n#define ROBO_RL_CF_INITIAL_ACTION ({CRAZYFLIE_HOVER_ACTION}f)\n#endif\n\n"
        "/* Action index of rotor i (0 front-right, 1 back-right, 2 back-left, 3 front-left = M1..M4). */\n"
        f"static const int robo_rl_cf_rotor_action[4] = {{{', '.join(map(str, rotor_index))}}};\n"
        "#define ROBO_RL_CF_ROTOR_ACTION(i) (robo_rl_cf_rotor_action[(i)])\n"
        "/* Bounds of rotor i's action: low = zero thrust, high = full thrust. */\n"
        f"static const float robo_rl_cf_action_low[4] = {{{lows}}};\n"
        f"static const float robo_rl_cf_action_high[4] = {{{highs}}};\n\n"
        "static void robo_rl_cf_fill_observation(float *obs, const robo_rl_cf_signals_t *signals,\n"
        "                                        const float (*history)[4])\n{\n"
        f"{'    (void)history;' + chr(10) if history_rows == 0 else ''}"
        f"{fill}\n}}\n\n#endif\n"
    )


def _crazyflie_sources(names: Sequence[str]) -> list[str]:
    sources, unknown = [], []
    for name in names:
        try:
            sources.append(crazyflie_observation_source(name))
        except ValueError:
            unknown.append(name)
    if unknown:
        raise ValueError(
            f"crazyflie target: the controller cannot compute observation(s) {', '.join(unknown[:6])}"
            f"{' ...' if len(unknown) > 6 else ''}; it supports robo_rl's quadrotor observations (position_error_*, "
            "rotation_rc, velocity_*, velocity_error_*, reference_velocity_*, angular_velocity_*, previous_action_k_i)"
        )
    return sources


def _crazyflie_rate(dt: float | None) -> int:
    if dt is None:
        raise ValueError("crazyflie target: the ONNX file has no control period (robo_rl.dt metadata)")
    for rate in _CF_RATES_HZ:
        if math.isclose(dt * rate, 1.0, rel_tol=1e-6):
            return rate
    raise ValueError(
        f"crazyflie target: control period {dt:g} s is not one of the firmware rates "
        f"{', '.join(f'{r} Hz' for r in _CF_RATES_HZ)}"
    )


def _crazyflie_rotor_index(info: PolicyInfo) -> list[int]:
    if sorted(info.action_names) != list(CRAZYFLIE_ACTIONS):
        raise ValueError(
            f"crazyflie target: actions {list(info.action_names)} are not the motor commands "
            f"{list(CRAZYFLIE_ACTIONS)} (train with action_mode=motor)"
        )
    index = [info.action_names.index(name) for name in CRAZYFLIE_ACTIONS]
    for i in index:
        low, high = info.action_low[i], info.action_high[i]
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise ValueError(
                f"crazyflie target: action {info.action_names[i]} needs finite bounds, got [{low}, {high}]"
            )
    return index


def _c_float(value: float) -> str:
    return f"{float(np.float32(value))!r}f"


# --- checks -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _CheckInputs:
    ir: PolicyIR
    onnx_path: Path
    target: str
    sources: CSources
    """CSources actually exported (quantized with int8)."""
    float_sources: CSources
    """Float CSources (the same object without int8)."""
    int8: bool
    verify: bool
    test_obs: np.ndarray | None


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


def _run_checks(inputs: _CheckInputs, scratch: Path) -> dict[str, Any]:
    """ExportReport fields from the size, host and QEMU checks; a missing tool skips its check with a note."""
    found: dict[str, Any] = {"notes": []}
    found["cortex_m4_size"] = _skippable(found, "cortex-m4 size", lambda: _cortex_m4_size(inputs, scratch / "m4"))
    found["host_size"] = _skippable(found, "host size", lambda: _host_size(inputs, scratch / "size"))
    if inputs.verify:
        parity = _skippable(found, "host parity", lambda: _host_parity(inputs, scratch / "host"))
        if parity is not None:
            found["host_parity"], found["nonfinite_rejected"] = parity
        found["host_latency_us"] = _skippable(found, "host timing", lambda: _host_latency_us(inputs, scratch / "time"))
    if inputs.int8:
        found["int8_error"] = _skippable(found, "int8 error", lambda: _int8_error(inputs, scratch / "int8"))
    if inputs.verify and inputs.target in QEMU_TARGETS:
        found["qemu"] = _skippable(found, "QEMU check", lambda: _qemu_check(inputs, scratch / "qemu"))
    found["notes"] = tuple(found["notes"])
    return found


class _ToolMissing(RuntimeError):
    """A compiler or emulator is not installed: the check is skipped, and the report says why."""


def _skippable(found: dict[str, Any], what: str, check: Callable[[], Any]) -> Any:
    try:
        return check()
    except (_ToolMissing, ToolNotFoundError) as missing:
        found["notes"].append(f"{what} skipped: {missing}")
        return None


def _require(*tools: str) -> None:
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if missing:
        raise _ToolMissing(f"{', '.join(missing)} not found on PATH (the Makefile installs it with apt)")


def _cortex_m4_size(inputs: _CheckInputs, directory: Path) -> SizeReport:
    _require("arm-none-eabi-gcc", "arm-none-eabi-size")
    return build_cortex_m4(inputs.sources, directory)


def _host_size(inputs: _CheckInputs, directory: Path) -> SizeReport:
    _require("gcc", "size")
    return build_host_object(inputs.sources, directory)


def _host_latency_us(inputs: _CheckInputs, directory: Path) -> float:
    """Best-of-5 mean time of one call of the exported C policy on the host, through ctypes, in µs."""
    _require("gcc")
    host = build_host(inputs.sources, directory)
    obs = np.ascontiguousarray(_verify_observations(inputs)[:1])
    action = np.zeros((1, inputs.ir.action_dim), np.float32)
    call, obs_address, action_address = host.function, obs.ctypes.data, action.ctypes.data
    batch, best = HOST_TIMING_CALLS // 5, math.inf
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(batch):
            call(obs_address, action_address)
        best = min(best, (time.perf_counter() - start) / batch)
    return best * 1e6


def _verify_observations(inputs: _CheckInputs) -> np.ndarray:
    sampled = sample_observations(inputs.ir.info, VERIFY_SAMPLES, seed=2)
    if inputs.test_obs is None:
        return sampled
    return np.concatenate([np.asarray(inputs.test_obs, np.float32).reshape(-1, inputs.ir.obs_dim), sampled])


def _host_actions(sources: CSources, obs: np.ndarray, directory: Path) -> tuple[np.ndarray, np.ndarray]:
    _require("gcc")
    host = build_host(sources, directory)
    actions, codes = host(obs)
    return np.asarray(actions, np.float32), np.asarray(codes)


def _compare(reference_name: str, got: np.ndarray, reference: np.ndarray) -> Comparison:
    error = np.abs(got.astype(np.float64) - reference.astype(np.float64))
    max_error = float(np.max(error)) if np.all(np.isfinite(error)) else math.inf
    return Comparison(reference_name, len(reference), max_error, float(np.max(np.abs(reference))))


def _nonfinite_observation(obs_dim: int) -> np.ndarray:
    row = np.zeros((1, obs_dim), np.float32)
    row[0, obs_dim // 2] = np.nan
    return row


def _host_parity(inputs: _CheckInputs, directory: Path) -> tuple[Comparison, bool]:
    """Float host C vs onnxruntime, and whether a NaN observation gets the error code."""
    obs = _verify_observations(inputs)
    with_nan = np.concatenate([obs, _nonfinite_observation(inputs.ir.obs_dim)])
    actions, codes = _host_actions(inputs.float_sources, with_nan, directory)
    reference = onnxruntime_actions(inputs.onnx_path, obs, inputs.ir.info)
    comparison = _compare("onnxruntime", actions[:-1], reference)
    return comparison, bool(np.all(codes[:-1] == 0) and codes[-1] != 0)


def _int8_error(inputs: _CheckInputs, directory: Path) -> Comparison:
    obs = inputs.test_obs
    if obs is None:
        obs = sample_observations(inputs.ir.info, VERIFY_SAMPLES, seed=3)
    obs = np.asarray(obs, np.float32).reshape(-1, inputs.ir.obs_dim)
    actions, _ = _host_actions(inputs.sources, obs, directory)
    return _compare("onnxruntime (float)", actions, onnxruntime_actions(inputs.onnx_path, obs, inputs.ir.info))


def _qemu_check(inputs: _CheckInputs, directory: Path) -> QemuCheck:
    missing = qemu.missing_tools()
    if missing:
        raise _ToolMissing(f"{', '.join(missing)} not found on PATH (the Makefile installs them with apt)")
    obs = _verify_observations(inputs)[:QEMU_SAMPLES]
    with_nan = np.concatenate([obs, _nonfinite_observation(inputs.ir.obs_dim)])
    result = qemu.run_in_qemu(inputs.sources, with_nan, directory / "firmware")
    host_actions, _ = _host_actions(inputs.sources, obs, directory / "host")
    instructions = result.instructions_per_inference
    return QemuCheck(
        vs_onnxruntime=_compare(
            "onnxruntime", result.outputs[:-1], onnxruntime_actions(inputs.onnx_path, obs, inputs.ir.info)
        ),
        vs_host=_compare("host C", result.outputs[:-1], host_actions),
        instructions_per_inference=instructions,
        estimated_latency_us=None if instructions is None else qemu.estimated_latency_us(instructions),
        count_error=result.max_count_error,
        nonfinite_rejected=bool(np.all(result.codes[:-1] == 0) and result.codes[-1] != 0),
        firmware_size=result.firmware_size,
    )


# --- target folders -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _TargetContext:
    ir: PolicyIR
    onnx_path: Path
    target: str
    sources: CSources
    prefix: str
    numerics: str

    def values(self) -> dict[str, str]:
        """Placeholder values shared by all templates."""
        info = self.ir.info
        stem = Path(self.sources.source_name).stem
        period = info.dt if info.dt is not None else 0.01
        return {
            "PREFIX": self.prefix.upper(),
            "prefix": self.prefix,
            "POLICY_NAME": f"{self.prefix}_policy",
            "POLICY_HEADER": self.sources.header_name,
            "POLICY_SOURCE": self.sources.source_name,
            "SOURCE_STEM": stem,
            "TASK": c_comment(info.task or "unknown"),
            "ROBO_RL_VERSION": robo_rl.__version__,
            "ONNX_NAME": self.onnx_path.name,
            "DT": f"{info.dt:g}" if info.dt is not None else "unknown",
            "TARGET": self.target,
            "NUMERICS": self.numerics,
            "ACTION_NAME_LIST": ", ".join(c_string(name) for name in info.action_names),
            "PERIOD_US": str(max(1, round(period * 1e6))),
            "LIBRARY_VERSION": _library_version(robo_rl.__version__),
        }


def _library_version(version: str) -> str:
    """A semver-like x.y.z for library.properties (local/dev suffixes dropped)."""
    numbers = re.findall(r"\d+", version.split("+")[0])[:3]
    return ".".join([*numbers, "0", "0", "0"][:3])


_Writer = Callable[..., list[str]]


class _FolderWriter:
    """Collects (relative path → text) and writes them, or only lists them on a dry run."""

    def __init__(self, out_dir: Path, dry_run: bool) -> None:
        self.out_dir, self.dry_run, self.paths = out_dir, dry_run, []

    def put(self, relative: str, text: str) -> None:
        self.paths.append(relative)
        if not self.dry_run:
            path = self.out_dir / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)

    def sources(self, sources: CSources, folder: str = "") -> None:
        self.put(f"{folder}{sources.header_name}", sources.header)
        self.put(f"{folder}{sources.source_name}", sources.source)


def _template(relative: str) -> str:
    return (TEMPLATES / relative).read_text()


def _readme(context: _TargetContext, template: str, report: ExportReport | None, extra: dict[str, str]) -> str:
    values = {**context.values(), **extra}
    files = report.files if report is not None else ()
    values["FILE_LIST"] = "\n".join(f"- `{name}`" for name in files)
    values["REPORT"] = _report_markdown(report) if report is not None else ""
    return render(template, values)


def _report_markdown(report: ExportReport) -> str:
    lines = "\n".join(f"- {line}" for line in report.lines()[1:])
    return f"{lines}\n\nThe same numbers are in `{REPORT_FILE}`."


def _write_c(context: _TargetContext, out_dir: Path, dry_run: bool, report: ExportReport | None = None) -> list[str]:
    folder = _FolderWriter(out_dir, dry_run)
    values = context.values()
    folder.sources(context.sources)
    folder.put("main.c", render(_template("generic/main.c"), values))
    folder.put("Makefile", render(_template("generic/Makefile"), values))
    build = render(_template("generic/build_c.md"), values).rstrip("\n")
    folder.put(README_FILE, _readme(context, _template("generic/README.md"), report, {"BUILD_SECTION": build}))
    return folder.paths


def _write_cortex_m4(
    context: _TargetContext, out_dir: Path, dry_run: bool, report: ExportReport | None = None
) -> list[str]:
    folder = _FolderWriter(out_dir, dry_run)
    values = context.values()
    folder.sources(context.sources)
    folder.put("Makefile", render(_template("generic/cortex-m4.mk"), values))
    build = render(_template("generic/build_cortex-m4.md"), values).rstrip("\n")
    folder.put(README_FILE, _readme(context, _template("generic/README.md"), report, {"BUILD_SECTION": build}))
    return folder.paths


def _write_crazyflie(
    context: _TargetContext, out_dir: Path, dry_run: bool, report: ExportReport | None = None
) -> list[str]:
    folder = _FolderWriter(out_dir, dry_run)
    info = context.ir.info
    values = context.values()
    rate = _crazyflie_rate(info.dt)
    for name in ("Makefile", "Kbuild", "app-config", "src/Kbuild", "src/robo_rl_controller.c"):
        folder.put(name, render(_template(f"crazyflie/{name}"), values))
    folder.sources(context.sources, "src/")
    folder.put(f"src/{CRAZYFLIE_MAP_HEADER}", crazyflie_map_header(info))
    observation_list = "\n".join(
        f"  - `obs[{i}]` {name} ({unit}) = `{crazyflie_observation_source(name)}`"
        for i, (name, unit) in enumerate(zip(info.obs_names, info.obs_units, strict=True))
    )
    extra = {
        "RATE_HZ": f"RATE_{rate}_HZ",
        "PERIOD_MS": f"{1000 / rate:g}",
        "OBSERVATION_LIST": observation_list,
        "INITIAL_ACTION": f"{CRAZYFLIE_HOVER_ACTION}",
    }
    folder.put(README_FILE, _readme(context, _template("crazyflie/README.md"), report, extra))
    return folder.paths


def _write_arduino(
    context: _TargetContext, out_dir: Path, dry_run: bool, report: ExportReport | None = None
) -> list[str]:
    folder = _FolderWriter(out_dir, dry_run)
    values = context.values()
    folder.put("library.properties", render(_template("arduino/library.properties"), values))
    folder.put("src/RoboRlPolicy.h", render(_template("arduino/src/RoboRlPolicy.h"), values))
    folder.sources(context.sources, "src/")
    example = "examples/RoboRlPolicy/RoboRlPolicy.ino"
    folder.put(example, render(_template(f"arduino/{example}"), values))
    folder.put(README_FILE, _readme(context, _template("arduino/README.md"), report, {}))
    return folder.paths


_WRITERS: dict[str, _Writer] = {
    "c": _write_c,
    "cortex-m4": _write_cortex_m4,
    "crazyflie": _write_crazyflie,
    "arduino": _write_arduino,
}
