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
reset at episode starts (every `EPISODE_STEPS` steps and at random ones in between), its actions and states
against onnxruntime run the same way; it exports as float32 only (int8 is refused).
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from robo_rl.firmware_export import boards, qemu
from robo_rl.firmware_export.board import README_FILE, REPORT_FILE, TargetContext
from robo_rl.firmware_export.build import (
    SizeReport,
    ToolNotFoundError,
    build_cortex_m4,
    build_host,
    build_host_object,
    build_host_recurrent,
)
from robo_rl.firmware_export.codegen import CSources, generate_c
from robo_rl.firmware_export.flow import generate_flow_c
from robo_rl.firmware_export.ir import Activation, Dense, Elementwise, Gru, Layer, PolicyInfo, PolicyIR
from robo_rl.firmware_export.policy_file import read_policy
from robo_rl.firmware_export.quantize import quantize, sample_observations

Target = str
"""A board name (`robo_rl.firmware_export.boards`)."""
FIRMWARE_TARGETS: tuple[str, ...] = boards.names()
"""Targets `export_target` writes: the boards."""
TARGETS: tuple[str, ...] = ("onnx", *FIRMWARE_TARGETS)
"""`robo-rl export --target` values (`onnx` is the CLI's plain ONNX export of a run directory)."""
QEMU_TARGETS: tuple[str, ...] = tuple(name for name in FIRMWARE_TARGETS if boards.board(name).qemu)
"""Targets whose `verify` also runs the policy in QEMU on an emulated Cortex-M4."""

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
EPISODE_STEPS = 200
"""A policy with memory: steps between the resets of its verification stream."""
RANDOM_RESET_PROBABILITY = 0.02
"""A policy with memory: chance that any other step of the verification stream starts an episode too."""


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
        checks = _run_checks(
            _CheckInputs(ir, onnx_path, target, sources, float_sources, int8, verify, test_obs), Path(scratch)
        )
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


def episode_starts(count: int, seed: int = 0, episode_steps: int = EPISODE_STEPS) -> np.ndarray:
    """`(count,)` bool: where a stream of `count` steps starts an episode (its state reset): step 0, every
    `episode_steps` steps, and at random steps in between (`RANDOM_RESET_PROBABILITY` each)."""
    starts = np.random.default_rng(seed).random(count) < RANDOM_RESET_PROBABILITY
    starts[::episode_steps] = True
    return starts


def onnxruntime_episode(
    onnx_path: Path, obs: np.ndarray, starts: np.ndarray, info: PolicyInfo
) -> tuple[np.ndarray, np.ndarray]:
    """A policy with memory in onnxruntime over a stream of steps: obs `(T, obs_dim)`, the state set to the reset
    value where `starts` `(T,)` is true (and at step 0) and carried from `h_out` otherwise. Returns (actions
    `(T, action_dim)`, states `(T, state_size)`: each step's `h_out`)."""
    import onnxruntime as ort

    memory = info.memory
    if memory is None:
        raise ValueError("the policy has no memory: use onnxruntime_actions")
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    obs = np.asarray(obs, dtype=np.float32)
    bounds = np.cumsum([0] + [width for _, width in info.inputs])
    reset = np.full((1, memory.size), memory.reset_value, np.float32)
    h, actions, states = reset, [], []
    for t in range(len(obs)):
        h = reset if starts[t] or t == 0 else h
        feeds = {name: obs[t : t + 1, bounds[i] : bounds[i + 1]] for i, (name, _) in enumerate(info.inputs)}
        action, h = session.run([info.output, memory.output], {**feeds, memory.input: h})
        actions.append(action[0])
        states.append(h[0])
    return np.asarray(actions, np.float32), np.asarray(states, np.float32)


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


# --- Crazyflie observation/action mapping ------------------------------------------------------------------------

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
    """Best-of-5 mean time of one call of the exported C policy on the host, through ctypes, in µs (with memory:
    one step, the state carried in place)."""
    _require("gcc")
    obs = np.ascontiguousarray(_verify_observations(inputs)[:1])
    action = np.zeros((1, inputs.ir.action_dim), np.float32)
    if inputs.ir.state_size:
        recurrent = build_host_recurrent(inputs.sources, directory)
        state = recurrent.reset_state()
        step, addresses = recurrent.step_function, (obs.ctypes.data, state.ctypes.data, action.ctypes.data)

        def call() -> None:
            step(*addresses, addresses[1])

    else:
        function, obs_address, action_address = (
            build_host(inputs.sources, directory).function,
            obs.ctypes.data,
            action.ctypes.data,
        )

        def call() -> None:
            function(obs_address, action_address)

    batch, best = HOST_TIMING_CALLS // 5, math.inf
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(batch):
            call()
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
    if inputs.ir.state_size:
        return _host_episode_parity(inputs, directory)
    obs = _verify_observations(inputs)
    with_nan = np.concatenate([obs, _nonfinite_observation(inputs.ir.obs_dim)])
    actions, codes = _host_actions(inputs.float_sources, with_nan, directory)
    reference = onnxruntime_actions(inputs.onnx_path, obs, inputs.ir.info)
    comparison = _compare("onnxruntime", actions[:-1], reference)
    return comparison, bool(np.all(codes[:-1] == 0) and codes[-1] != 0)


def _host_episode_parity(inputs: _CheckInputs, directory: Path) -> tuple[Comparison, bool]:
    """A policy with memory: the host C over one stream of steps with resets (`episode_starts`) vs onnxruntime,
    actions and states side by side; a NaN observation in a last step must get the error code."""
    _require("gcc")
    obs = _verify_observations(inputs)
    starts = episode_starts(len(obs), seed=2)
    with_nan = np.concatenate([obs, _nonfinite_observation(inputs.ir.obs_dim)])
    host = build_host_recurrent(inputs.float_sources, directory)
    actions, states, codes = host.episode(with_nan, np.concatenate([starts, [False]]))
    reference = np.concatenate(onnxruntime_episode(inputs.onnx_path, obs, starts, inputs.ir.info), axis=1)
    comparison = _compare("onnxruntime", np.concatenate([actions, states], axis=1)[:-1], reference)
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
    if inputs.ir.state_size:
        starts = episode_starts(len(obs), seed=3, episode_steps=len(obs) // 2)
        result = qemu.run_in_qemu(inputs.sources, with_nan, directory / "firmware", resets=np.append(starts, False))
        assert result.states is not None
        outputs = np.concatenate([result.outputs, result.states], axis=1)[:-1]
        host_actions, host_states, _ = build_host_recurrent(inputs.sources, directory / "host").episode(obs, starts)
        host = np.concatenate([host_actions, host_states], axis=1)
        reference = np.concatenate(onnxruntime_episode(inputs.onnx_path, obs, starts, inputs.ir.info), axis=1)
    else:
        result = qemu.run_in_qemu(inputs.sources, with_nan, directory / "firmware")
        outputs = result.outputs[:-1]
        host, _ = _host_actions(inputs.sources, obs, directory / "host")
        reference = onnxruntime_actions(inputs.onnx_path, obs, inputs.ir.info)
    instructions = result.instructions_per_inference
    return QemuCheck(
        vs_onnxruntime=_compare("onnxruntime", outputs, reference),
        vs_host=_compare("host C", outputs, host),
        instructions_per_inference=instructions,
        estimated_latency_us=None if instructions is None else qemu.estimated_latency_us(instructions),
        count_error=result.max_count_error,
        nonfinite_rejected=bool(np.all(result.codes[:-1] == 0) and result.codes[-1] != 0),
        firmware_size=result.firmware_size,
    )
