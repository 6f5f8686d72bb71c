"""Runs generated policy C code on an emulated Cortex-M4 (QEMU `mps2-an386`) and counts its instructions.

`run_in_qemu` builds a small bare-metal test firmware around the policy sources (templates/qemu: vector table and
reset handler that enables the FPU, linker script, semihosting output, a `main` that runs the policy on stored
inputs), boots it in `qemu-system-arm -M mps2-an386 -cpu cortex-m4` and parses what it prints. Inputs go into the
firmware and outputs come back as IEEE-754 bit patterns, so the comparison with onnxruntime is exact, not rounded.

Instruction counting: QEMU here has no TCG plugins, so the firmware runs under `-icount shift=0`, where virtual
time advances exactly 1 ns per executed guest instruction, and reads the board's CMSDK APB timer 0, which counts
the 25 MHz system clock in virtual time: one timer tick = 40 instructions. The firmware times K inferences in a
loop (so the resolution is 40 / K instructions) and, as a check of the method on every run, two `subs`/`bne`
loops whose instruction counts are known exactly (`QemuResult.loop_checks`). The count is QEMU's count of
executed instructions (each counts 1, whatever its cycle cost on silicon); `estimated_latency_us` turns it into
an estimated time on a real MCU.

A policy with memory (`{prefix}_policy_step`, `{PREFIX}_STATE_SIZE`) runs its inputs as one stream of steps: the
state is reset (with its own reset function) where `resets` says and carried from each step's `h_out` otherwise;
`QemuResult.states` holds each step's `h_out`, and the timed loop carries the state in place from a reset, so
its count is the cost of one control step.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from robo_rl.firmware_export.build import (
    CORTEX_M4_CC,
    CORTEX_M4_CFLAGS,
    CORTEX_M4_SIZE,
    CompileError,
    SizeReport,
    ToolNotFoundError,
    header_define,
    object_size,
    output_width,
    state_size,
)

TEMPLATES = Path(__file__).parent / "templates" / "qemu"
TEMPLATE_SOURCES = ("startup.c", "semihosting.c", "main.c")
LINKER_SCRIPT = "mps2_an386.ld"
POLICY_CONFIG_HEADER = "qemu_policy.h"
INPUTS_HEADER = "qemu_inputs.h"
FIRMWARE_NAME = "firmware.elf"

QEMU = "qemu-system-arm"
# Every file is compiled with the policy's Cortex-M4F flags (build.py). Own startup code and semihosting
# calls; newlib (nano) only for libm's expf/tanhf and what they need.
LINK_FLAGS = ("-nostartfiles", "-Wl,--gc-sections", "--specs=nano.specs", "-lm")

SYSCLK_HZ = 25_000_000
"""Clock of the mps2 board's CMSDK APB timers (QEMU hw/arm/mps2.c, SYSCLK_FRQ)."""
ICOUNT_SHIFT = 0
"""`-icount shift=N`: each guest instruction advances virtual time by 2**N ns."""
INSTRUCTIONS_PER_TICK = 1e9 / SYSCLK_HZ / 2**ICOUNT_SHIFT
"""Guest instructions per timer tick under `-icount shift=0`: 40."""

LOOP_SHORT = 10_007
"""Iterations of the short known loop (about one inference of a 64-64 policy: 20,014 instructions)."""
LOOP_LONG = 500_009
"""Iterations of the long known loop (about as long as the whole timed policy loop)."""
TIMED_INFERENCES = 64
"""Default number of inferences timed in one loop; the count's resolution is 40 / this many instructions."""

TAG = "ROBO_RL_QEMU"
ACTION_MARKER_BITS = 0x7FC0DEAD
"""NaN bit pattern the firmware writes into the action buffer before each call: a slot still holding it was
left unwritten by the policy."""


class PolicySources(Protocol):
    """What the QEMU runner needs from codegen's `CSources`: the prefix of `int {prefix}_policy(...)` and
    `{PREFIX}_OBS_DIM`/`{PREFIX}_ACTION_DIM` (and, with memory, `{prefix}_policy_step`/`_reset` and
    `{PREFIX}_STATE_SIZE`), file names and contents, written to a folder (read-only: frozen dataclasses fit)."""

    @property
    def prefix(self) -> str: ...
    @property
    def header_name(self) -> str: ...
    @property
    def header(self) -> str: ...
    @property
    def source_name(self) -> str: ...
    @property
    def source(self) -> str: ...

    def write(self, directory: Path) -> tuple[Path, Path]: ...


class QemuError(RuntimeError):
    """QEMU failed, timed out or hit a CPU fault, or the test firmware's output could not be parsed."""


@dataclass(frozen=True)
class LoopCheck:
    """One validation of the instruction count: a loop of known length measured with the timer."""

    iterations: int
    measured_instructions: float

    @property
    def expected_instructions(self) -> int:
        """Two instructions per iteration (`subs`, `bne`); the call, return and timer reads come on top (< 10)."""
        return 2 * self.iterations

    @property
    def relative_error(self) -> float:
        """(measured - expected) / expected."""
        return (self.measured_instructions - self.expected_instructions) / self.expected_instructions


@dataclass(frozen=True)
class QemuResult:
    """What the test firmware printed.

    outputs: (num_inputs, action_dim) float32, the action buffer after each call, bit-exact; slots the policy
        did not write hold a NaN marker (see `written`).
    codes: (num_inputs,) int, the policy's return codes (0 = ok).
    instructions_per_inference: mean guest instructions of one call (including the call and the timing loop's
        few instructions of bookkeeping), over `timed_inferences` calls on the accepted inputs; None when the
        policy accepted no input.
    firmware_size: `arm-none-eabi-size` of the whole test firmware ELF (policy, test driver, stored inputs,
        startup code and the libm functions used), not of the policy alone (that is `build.build_cortex_m4`).
    loop_checks: known-length loops measured the same way; their relative errors bound the method's error.
    states: (num_inputs, state_size) float32, each step's h_out (NaN marker where unwritten) for a policy with
        memory; None without.
    """

    outputs: np.ndarray
    codes: np.ndarray
    instructions_per_inference: float | None
    timed_inferences: int
    firmware_size: SizeReport
    loop_checks: tuple[LoopCheck, ...]
    log: str
    states: np.ndarray | None = None

    @property
    def written(self) -> np.ndarray:
        """(num_inputs, action_dim) bool: which action slots the policy wrote."""
        return self.outputs.view(np.uint32) != ACTION_MARKER_BITS

    @property
    def max_count_error(self) -> float:
        """Largest |relative error| of the instruction count on the known loops."""
        return max(abs(check.relative_error) for check in self.loop_checks)


def missing_tools() -> tuple[str, ...]:
    """Names of the programs `run_in_qemu` needs that are not on PATH (empty when it can run)."""
    return tuple(tool for tool in (CORTEX_M4_CC, CORTEX_M4_SIZE, QEMU) if shutil.which(tool) is None)


def estimated_latency_us(instructions: float, clock_hz: float = 168e6, cycles_per_instruction: float = 1.25) -> float:
    """Rough time (µs) of `instructions` on a real Cortex-M4F (default: STM32F405 at 168 MHz).

    An estimate only: QEMU counts instructions, not cycles. On a Cortex-M4F most ALU and single-precision FPU
    instructions take 1 cycle, but loads take 1-2, a fused multiply-add 3, a division 14, branches 2-4, and
    flash wait states add more where the cache misses, hence a cycles-per-instruction above 1.
    """
    return instructions * cycles_per_instruction / clock_hz * 1e6


def run_in_qemu(
    sources: PolicySources,
    inputs: np.ndarray,
    directory: Path,
    timeout: float = 60.0,
    timed_inferences: int = TIMED_INFERENCES,
    resets: np.ndarray | None = None,
) -> QemuResult:
    """Builds the test firmware for `sources`, runs it in QEMU on `inputs` and returns what it printed.

    inputs: (num_inputs, obs_dim) or (obs_dim,) observations, cast to float32 (non-finite values are allowed:
        they exercise the policy's error code). directory: where sources, firmware and log are written.
    timeout: seconds QEMU may run. resets: (num_inputs,) bool, for a policy with memory only: the state is
        reset before those steps (default: before the first only; the first always is).
    Raises ToolNotFoundError when a program is missing, CompileError when the firmware does not build,
    QemuError when the run fails, faults, times out or prints something unexpected.
    """
    directory = Path(directory)
    firmware = build_firmware(sources, inputs, directory, timed_inferences, resets)
    log = _run_qemu(firmware, timeout)
    (directory / "qemu.log").write_text(log)
    num_inputs = len(_as_observations(inputs, header_define(sources, "OBS_DIM")))
    return _parse_log(log, num_inputs, output_width(sources), object_size(firmware), state_size(sources))


def build_firmware(
    sources: PolicySources,
    inputs: np.ndarray,
    directory: Path,
    timed_inferences: int = TIMED_INFERENCES,
    resets: np.ndarray | None = None,
) -> Path:
    """Writes the policy sources and the generated firmware headers into `directory` and links the test
    firmware (one compiler call). inputs: (num_inputs, obs_dim) observations; resets: see `run_in_qemu`.
    Returns the ELF's path."""
    _require_tools()
    if timed_inferences < 1:
        raise ValueError(f"timed_inferences must be >= 1, got {timed_inferences}")
    observations = _as_observations(inputs, header_define(sources, "OBS_DIM"))
    starts = _as_resets(resets, len(observations), state_size(sources))
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    _, source_path = sources.write(directory)
    (directory / POLICY_CONFIG_HEADER).write_text(_policy_config_header(sources))
    (directory / INPUTS_HEADER).write_text(_inputs_header(observations, timed_inferences, starts))
    firmware = directory / FIRMWARE_NAME
    command = [
        CORTEX_M4_CC,
        *CORTEX_M4_CFLAGS,
        f"-I{directory}",
        f"-I{TEMPLATES}",
        *(str(TEMPLATES / name) for name in TEMPLATE_SOURCES),
        str(source_path),
        "-T",
        str(TEMPLATES / LINKER_SCRIPT),
        *LINK_FLAGS,
        "-o",
        str(firmware),
    ]
    status, output = _run(command, "building the QEMU test firmware", timeout=120.0)
    if status != 0:
        raise CompileError(f"building the QEMU test firmware failed: {' '.join(command)}\n{output.strip()[-4000:]}")
    return firmware


def _require_tools() -> None:
    missing = missing_tools()
    if missing:
        raise ToolNotFoundError(
            f"not found on PATH: {', '.join(missing)} (install gcc-arm-none-eabi, libnewlib-arm-none-eabi and "
            "qemu-system-arm, e.g. with `make system-deps` as root)"
        )


def _run(command: Sequence[str], what: str, timeout: float) -> tuple[int, str]:
    """Exit status and output (stdout, then stderr) of `command`; QemuError when it runs past `timeout` s."""
    try:
        done = subprocess.run(
            command, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired as error:
        raise QemuError(f"{what}: timed out after {timeout:g} s: {' '.join(command)}") from error
    return done.returncode, done.stdout + done.stderr


def _run_qemu(firmware: Path, timeout: float) -> str:
    command = [
        QEMU,
        "-M",
        "mps2-an386",
        "-cpu",
        "cortex-m4",
        "-nographic",
        "-nic",
        "none",  # no network device: the firmware never sends a packet anywhere
        "-monitor",
        "none",
        "-semihosting-config",
        "enable=on,target=native",
        "-icount",
        f"shift={ICOUNT_SHIFT}",
        "-kernel",
        str(firmware),
    ]
    # Semihosting output goes to QEMU's stderr, which _run captures with stdout.
    status, output = _run(command, "running the test firmware in QEMU", timeout)
    if f"{TAG} FAULT" in output:
        raise QemuError(f"the test firmware hit a CPU fault (HardFault) in QEMU:\n{output.strip()[-4000:]}")
    if status != 0:
        raise QemuError(f"QEMU exited with status {status}: {' '.join(command)}\n{output.strip()[-4000:]}")
    return output


def _policy_config_header(sources: PolicySources) -> str:
    obs_dim, action_dim, size = header_define(sources, "OBS_DIM"), output_width(sources), state_size(sources)
    if size:
        entry = (
            f"#define QEMU_POLICY_STEP {sources.prefix}_policy_step\n"
            f"#define QEMU_POLICY_RESET {sources.prefix}_policy_reset\n"
        )
    else:
        entry = f"#define QEMU_POLICY {sources.prefix}_policy\n"
    return (
        "/* Generated by robo_rl.firmware_export.qemu: which policy the QEMU test firmware runs. */\n"
        "#ifndef ROBO_RL_QEMU_POLICY_H\n#define ROBO_RL_QEMU_POLICY_H\n"
        f'#include "{sources.header_name}"\n{entry}'
        f"#define QEMU_OBS_DIM {obs_dim}\n#define QEMU_ACTION_DIM {action_dim}\n#define QEMU_STATE_SIZE {size}\n"
        "#endif\n"
    )


def _as_resets(resets: np.ndarray | None, count: int, size: int) -> np.ndarray | None:
    """The reset flags `(count,)` bool of a policy with memory (step 0 always resets); None without memory."""
    if not size:
        if resets is not None:
            raise ValueError("resets are for a policy with memory; this policy has none")
        return None
    starts = np.zeros(count, bool) if resets is None else np.asarray(resets, bool).reshape(-1)
    if starts.shape != (count,):
        raise ValueError(f"resets must have shape ({count},), got {starts.shape}")
    starts = starts.copy()
    starts[0] = True
    return starts


def _as_observations(inputs: np.ndarray, obs_dim: int) -> np.ndarray:
    observations = np.atleast_2d(np.asarray(inputs, dtype=np.float32))
    if observations.ndim != 2 or observations.shape[1] != obs_dim or len(observations) == 0:
        raise ValueError(f"inputs must have shape (num_inputs >= 1, {obs_dim}), got {np.shape(inputs)}")
    return observations


def _inputs_header(observations: np.ndarray, timed_inferences: int, resets: np.ndarray | None = None) -> str:
    rows = ",\n".join(
        "    {{" + ", ".join(f"0x{bits:08x}u" for bits in row) + "}}" for row in observations.view(np.uint32)
    )
    flags = ""
    if resets is not None:
        values = ", ".join(str(int(flag)) for flag in resets)
        flags = f"static const uint8_t qemu_resets[QEMU_NUM_INPUTS] = {{{values}}};\n"
    return (
        "/* Generated by robo_rl.firmware_export.qemu: observations as float32 bit patterns. */\n"
        "#ifndef ROBO_RL_QEMU_INPUTS_H\n#define ROBO_RL_QEMU_INPUTS_H\n#include <stdint.h>\n"
        f"#define QEMU_NUM_INPUTS {len(observations)}u\n#define QEMU_TIMED_INFERENCES {timed_inferences}u\n"
        f"#define QEMU_LOOP_SHORT {LOOP_SHORT}u\n#define QEMU_LOOP_LONG {LOOP_LONG}u\n"
        "typedef union {\n    uint32_t bits[QEMU_OBS_DIM];\n    float values[QEMU_OBS_DIM];\n} qemu_input_t;\n"
        f"static const qemu_input_t qemu_inputs[QEMU_NUM_INPUTS] = {{\n{rows}\n}};\n{flags}#endif\n"
    )


def _tagged_lines(log: str) -> list[list[str]]:
    lines = [line.split()[1:] for line in log.splitlines() if line.startswith(TAG + " ")]
    if not lines or lines[0][:1] != ["BEGIN"] or lines[-1] != ["END"]:
        raise QemuError(f"the test firmware's output is incomplete (no BEGIN/END lines):\n{log[-4000:]}")
    return lines


def _parse_log(log: str, num_inputs: int, action_dim: int, size: SizeReport, state: int = 0) -> QemuResult:
    lines = _tagged_lines(log)
    outputs = [[int(word, 16) for word in line[1:]] for line in lines if line[0] == "OUT"]
    ticks = {line[1]: (int(line[2], 16), int(line[3], 16)) for line in lines if line[0] == "TICKS"}
    if len(outputs) != num_inputs or any(len(row) != 2 + action_dim + state for row in outputs):
        raise QemuError(
            f"expected {num_inputs} OUT lines with {action_dim} actions and {state} state entries each:\n{log[-4000:]}"
        )
    if [row[0] for row in outputs] != list(range(num_inputs)):
        raise QemuError(f"OUT lines out of order:\n{log[-4000:]}")
    if not {"policy", "loop_short", "loop_long"} <= ticks.keys():
        raise QemuError(f"TICKS lines missing:\n{log[-4000:]}")
    words = np.array([row[2:] for row in outputs], dtype=np.uint32).reshape(num_inputs, action_dim + state)
    bits = np.ascontiguousarray(words[:, :action_dim])
    states = np.ascontiguousarray(words[:, action_dim:]).view(np.float32) if state else None
    codes = np.array([row[1] for row in outputs], dtype=np.uint32).view(np.int32).astype(np.int64)
    repetitions, policy_ticks = ticks["policy"]
    per_inference = policy_ticks * INSTRUCTIONS_PER_TICK / repetitions if repetitions else None
    checks = tuple(
        LoopCheck(ticks[name][0], ticks[name][1] * INSTRUCTIONS_PER_TICK) for name in ("loop_short", "loop_long")
    )
    return QemuResult(bits.view(np.float32), codes, per_inference, repetitions, size, checks, log, states)
