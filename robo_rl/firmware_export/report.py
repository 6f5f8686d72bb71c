"""What `export_target` measured: the parity comparisons, the QEMU run and the report (JSON and text)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from robo_rl.firmware_export.build import SizeReport

PARITY_TOLERANCE = 1e-5
"""Float C vs onnxruntime: max |error| ≤ this × max(1, max |action|)."""


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
