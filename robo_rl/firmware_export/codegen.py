"""Generate C99 for a PolicyIR: one header and one source, weights as `static const` arrays, no heap.

The entry point is `int {prefix}_policy(const float *obs, float *action)`:
- `obs` `({PREFIX}_OBS_DIM,)` float, in the order of the metadata (several graph inputs joined by a Concat are
  passed concatenated, in the Concat's order); `action` `({PREFIX}_ACTION_CHUNK * {PREFIX}_ACTION_DIM,)` float,
  already clipped and scaled as in the ONNX graph: `{PREFIX}_ACTION_CHUNK` steps (1 unless the policy outputs an
  action chunk, `robo_rl.chunks`) of `{PREFIX}_ACTION_DIM` actions, step i's meant for i control periods after
  the observation. `obs` and `action` must not overlap.
- returns `{PREFIX}_OK` (0), or `{PREFIX}_ERR_NONFINITE` (1) when an observation is NaN or ±inf; `action` is
  then left untouched (nothing is written), so the caller keeps its previous command or its own fallback.

A policy with memory (a `Gru` layer, `ir.PolicyIR.state_size` > 0) has instead
`int {prefix}_policy_step(const float *obs, const float *h_in, float *action, float *h_out)`: `h_in`
`({PREFIX}_STATE_SIZE,)` is the state the previous step returned (or the reset state), `h_out` receives the next
one; `h_in` and `h_out` may be the same array (the state updated in place), no other arguments may overlap. A
NaN or infinite entry in `obs` or `h_in` returns `{PREFIX}_ERR_NONFINITE` with neither `action` nor `h_out`
written. `void {prefix}_policy_reset(float *state)` sets the state to the reset value the metadata states
(`{PREFIX}_STATE_RESET_VALUE`); the caller resets it where the metadata's reset rule says (an episode's start,
a hand-over to the policy, after a safe command). The GRU stage computes the gates' input and state parts with the
dense kernel (`W x + Wb` and `R h + Rb`, `3 * STATE_SIZE` rows each, into two static scratch vectors), then
`h' = (1 - z) * n + z * h` unit by unit, writing `h_out` directly; the layers after it read `h_out`.

Layout: consecutive layers run as stages; a stage is an optional Dense layer followed by the pointwise layers
after it (normalizer, activations, clips, action scaling), fused into one loop over the features (a loop that
several stages share, e.g. the same activation, becomes one function). Stages ping-pong between two static
float buffers of the widest intermediate width. One dense kernel per weight type serves every layer. Dense
weights are stored in blocks of output rows (`ROW_BLOCKS`: 16 for float weights, then blocks of 4, then single
rows), each block interleaved by input, `weight[block][input][row in block]`, so that the inner loop reads
them sequentially and keeps one accumulator per row in a register. Measured on the Cortex-M4F (QEMU): about
2.3 instructions per multiply-accumulate, against 6 for a plain row-major loop and 2.5 for blocks of 8.
Multiply-accumulates use `fmaf` where the target has a fast one (`FP_FAST_FMAF`, e.g. the Cortex-M4F's VFMA)
and `a + w * x` elsewhere.

int8 (see `quantize`): with float activations, int8 weights are converted on the fly (blocks of 4 rows, the
smallest code); with int8 activations, the layer input is first rounded to int8 codes, weights are stored by
pairs of inputs and pairs of rows, and on targets with the DSP extension (Cortex-M4: `__ARM_FEATURE_DSP`) each
`__smlad` of `<arm_acle.h>` does two multiply-accumulates on sign-extended halves (`__sxtb16`); elsewhere the
same bytes are summed one by one. The integer sums are exact, so both paths give the same bits.

Activations that need e^x (ELU, sigmoid, tanh) use a generated `{prefix}_exp` for x <= 0 (range reduction to
|r| <= ln2/2, a degree-6 polynomial, scaling through the exponent bits; relative error below 4e-7) instead of
libm's expf/expm1f/tanhf: it gives the same bits on the host and the microcontroller and, inlined into the
activation loop, costs about 35 instructions per element on the Cortex-M4F against about 65 for a call to
newlib's expm1f (18.6k instead of 20.8k instructions for a 30-64-64-4 ELU policy). Only `<math.h>` (fmaf,
fabsf), `<float.h>` (FLT_MAX), `<stdint.h>` (int8_t, int32_t, uint32_t) and, for SMLAD, `<arm_acle.h>` are
included; the compiler inlines fmaf (only where it is one instruction) and fabsf, so the object calls no
library function.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from robo_rl.firmware_export.ir import Activation, Clip, Dense, Elementwise, Gru, Pointwise, PolicyInfo, PolicyIR
from robo_rl.firmware_export.quantize import QuantizedDense, QuantizedIR

ROW_BLOCKS = {"float": 16, "int8": 4, "int8_codes": 4}
"""Output rows each dense kernel computes together (one register accumulator each), chosen by instruction counts
and code size measured on the Cortex-M4F (QEMU): 16 of its 32 float registers hold float accumulators (2.3
instructions per multiply-accumulate, 2.5 with 8); int8 weights with float activations are the size-first
option, so 4 (350 bytes less code than 16); int8 codes with SMLAD: 4, as 6 or 8 integer accumulators spill
the 13 core registers (4: 19.8k instructions and 8.1 kB for a 22-64-64-4 ELU policy; 8: 20.6k and 8.6 kB)."""
VALUES_PER_LINE = 8
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class CSources:
    """The generated header and source of one policy."""

    prefix: str
    """C identifier every public symbol starts with (`{prefix}_policy`, `{PREFIX}_OBS_DIM`, ...)."""
    header_name: str
    header: str
    source_name: str
    source: str

    def write(self, directory: Path) -> tuple[Path, Path]:
        """Write both files into `directory` (created if missing); returns (header path, source path)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        header, source = directory / self.header_name, directory / self.source_name
        header.write_text(self.header)
        source.write_text(self.source)
        return header, source


@dataclass(frozen=True)
class _Stage:
    """An optional Dense layer and the pointwise layers that follow it, computed in one pass; or a GRU alone."""

    index: int
    dense: Dense | QuantizedDense | None
    pointwise: tuple[tuple[int, Pointwise], ...]
    """(layer index in the IR, layer)."""
    in_width: int
    out_width: int
    gru: Gru | None = None
    """The stage is this GRU step (then `dense` is None and `pointwise` empty): its output is the new state."""


def generate_c(
    ir: PolicyIR | QuantizedIR, prefix: str = "robo_rl", quantization: QuantizedIR | None = None
) -> CSources:
    """C99 sources for `ir`; with `quantization` (made by `quantize(ir)`), its int8 Dense layers are emitted.

    A QuantizedIR may also be passed directly as `ir`. Several policies can be linked into one program when
    they have different prefixes.
    """
    if isinstance(ir, QuantizedIR):
        quantization = ir if quantization is None else quantization
        ir = ir.ir
    if quantization is not None and quantization.ir is not ir:
        raise ValueError("quantization was made from a different PolicyIR than the one given")
    _check_prefix(prefix)
    layers: Sequence[Dense | QuantizedDense | Pointwise | Gru] = (
        quantization.layers if quantization is not None else ir.layers
    )
    stages = _stages(layers, ir.obs_dim)
    header_name, source_name = f"{prefix}_policy.h", f"{prefix}_policy.c"
    kind = quantization.description if quantization is not None else "float32 weights and activations"
    header = _header(ir, prefix, header_name, kind, stages)
    source = _Source(ir, prefix, header_name, stages).render(kind)
    return CSources(prefix, header_name, header, source_name, source)


def _check_prefix(prefix: str) -> None:
    if not _IDENTIFIER.fullmatch(prefix):
        raise ValueError(f"prefix {prefix!r} is not a C identifier")


def _stages(layers: Sequence[Dense | QuantizedDense | Pointwise | Gru], obs_dim: int) -> tuple[_Stage, ...]:
    """Consecutive layers grouped into stages. A GRU is a stage of its own: the pointwise layers after it start a
    new stage, so that its output (the new state) is never changed in place."""
    groups: list[tuple[Dense | QuantizedDense | Gru | None, list[tuple[int, Pointwise]]]] = []
    for index, layer in enumerate(layers):
        if isinstance(layer, Dense | QuantizedDense | Gru):
            groups.append((layer, []))
        elif groups and not isinstance(groups[-1][0], Gru):
            groups[-1][1].append((index, layer))
        else:
            groups.append((None, [(index, layer)]))
    if not groups:
        groups.append((None, []))  # an identity policy still copies obs to action
    stages, width = [], obs_dim
    for number, (head, pointwise) in enumerate(groups):
        out = head.out_features if head is not None else width
        if isinstance(head, Gru):
            stages.append(_Stage(number, None, (), width, out, gru=head))
        else:
            stages.append(_Stage(number, head, tuple(pointwise), width, out))
        width = out
    return tuple(stages)


def float_literal(value: float) -> str:
    """The shortest C float literal that parses back to exactly `float32(value)` (INFINITY for infinities)."""
    single = np.float32(value)
    if math.isnan(single):
        raise ValueError("NaN constant in the policy")
    if math.isinf(single):
        return "INFINITY" if single > 0 else "-INFINITY"
    for digits in range(6, 10):
        text = f"{float(single):.{digits}g}"
        if np.float32(text) == single:
            break
    return (text if "e" in text or "." in text else text + ".0") + "f"


def _float_literals(values: np.ndarray, what: str) -> list[str]:
    flat = np.asarray(values, np.float32).reshape(-1)
    if not np.isfinite(flat).all():
        raise ValueError(f"{what}: non-finite constant in the policy")
    texts = [f"{v:.9g}" for v in flat.astype(np.float64).tolist()]
    return [t + "f" if ("e" in t or "." in t) else t + ".0f" for t in texts]


def _comment(text: str) -> str:
    """`text` made safe inside a /* */ comment: ASCII, one line, no comment end, no trigraphs."""
    ascii_text = text.encode("ascii", "replace").decode().replace("?", "_") if not text.isascii() else text
    return " ".join(ascii_text.replace("*/", "* /").replace("??", "? ?").split())


def _c_string(text: str) -> str:
    safe = _comment(text).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{safe}"'


def _macro_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_").upper()


def _bound(value: float) -> str:
    return "-inf" if value == -math.inf else "inf" if value == math.inf else f"{value:g}"


# ---------------------------------------------------------------------------------------------------- header


def _header(ir: PolicyIR, prefix: str, header_name: str, kind: str, stages: tuple[_Stage, ...]) -> str:
    upper = prefix.upper()
    guard = f"{_macro_name(header_name)}_"
    info = ir.info
    lines = [
        f"/* {header_name}: policy network generated by robo_rl.firmware_export. Do not edit. */",
        f"#ifndef {guard}",
        f"#define {guard}",
        "",
        *_description(ir, kind, stages),
        "",
        "#ifdef __cplusplus",
        'extern "C" {',
        "#endif",
        "",
        "/* Return codes of the policy function. */",
        f"#define {upper}_OK 0",
        f"#define {upper}_ERR_NONFINITE 1 /* an input is NaN or +-inf; nothing was written */",
        "",
        f"#define {upper}_OBS_DIM {ir.obs_dim}",
        f"#define {upper}_ACTION_DIM {len(info.action_names)} /* actions of one step */",
        f"#define {upper}_ACTION_CHUNK {info.action_chunk} /* steps per call: action holds CHUNK x DIM values */",
        f"#define {upper}_DT {float_literal(info.dt or 0.0)} /* control period (s); 0 = not in the metadata */",
        f"#define {upper}_TASK {_c_string(info.task or '')}",
        f"#define {upper}_ROBO_RL_VERSION {_c_string(info.version or '')}",
        f"#define {upper}_GIT_HASH {_c_string(info.git_hash or '')}",
        f"#define {upper}_CONFIG_HASH {_c_string(info.config_hash or '')}",
        "",
        *_state_defines(ir, upper),
        *_index_defines(f"{upper}_OBS", info.obs_names, "obs"),
        *_index_defines(f"{upper}_ACTION", info.action_names, "action"),
        *_bound_defines(upper, info),
        *(_step_declarations(prefix, upper) if ir.state_size else _policy_declaration(prefix, upper)),
        "",
        "#ifdef __cplusplus",
        "}",
        "#endif",
        "",
        f"#endif /* {guard} */",
        "",
    ]
    return "\n".join(lines)


def _policy_declaration(prefix: str, upper: str) -> list[str]:
    return [
        f"/* Runs the policy on obs[{upper}_OBS_DIM] and writes action[{upper}_ACTION_CHUNK * {upper}_ACTION_DIM]",
        f"   (step i's action j at action[i * {upper}_ACTION_DIM + j]).",
        f"   Returns {upper}_OK, or {upper}_ERR_NONFINITE without writing action when an observation is NaN",
        "   or infinite. obs and action must not overlap. Not reentrant: uses static scratch buffers. */",
        f"int {prefix}_policy(const float *obs, float *action);",
    ]


def _step_declarations(prefix: str, upper: str) -> list[str]:
    """The entry points of a policy with memory: one step with the state in and out, and the state's reset."""
    return [
        f"/* One control step: runs the policy on obs[{upper}_OBS_DIM] and the state h_in[{upper}_STATE_SIZE] (the",
        f"   previous step's h_out, or a reset state), writes action[{upper}_ACTION_CHUNK * {upper}_ACTION_DIM] and",
        f"   the next state h_out[{upper}_STATE_SIZE]. h_in and h_out may be the same array (the state updated in",
        "   place); nothing else may overlap. Returns "
        f"{upper}_OK, or {upper}_ERR_NONFINITE when an entry of obs or h_in is",
        "   NaN or infinite: then neither action nor h_out is written. Not reentrant: uses static scratch buffers. */",
        f"int {prefix}_policy_step(const float *obs, const float *h_in, float *action, float *h_out);",
        "",
        f"/* Sets state[{upper}_STATE_SIZE] to the reset state (every entry {upper}_STATE_RESET_VALUE): before an",
        "   episode's first step, when the policy takes over from another controller, after a safe command. */",
        f"void {prefix}_policy_reset(float *state);",
    ]


def _state_defines(ir: PolicyIR, upper: str) -> list[str]:
    memory = ir.info.memory
    if not ir.state_size or memory is None:
        return []
    return [
        f"/* The state carried from step to step ({memory.kind} memory, graph input {memory.input} -> output "
        f"{memory.output}). */",
        f"#define {upper}_STATE_SIZE {ir.state_size}",
        f"#define {upper}_STATE_RESET_VALUE {float_literal(memory.reset_value)}",
        "",
    ]


def _bound_defines(upper: str, info: PolicyInfo) -> list[str]:
    """Array initializers for the metadata bounds: they cost nothing unless a program uses them."""
    rows = (
        ("OBS_LOW", info.obs_low),
        ("OBS_HIGH", info.obs_high),
        ("ACTION_LOW", info.action_low),
        ("ACTION_HIGH", info.action_high),
    )
    unbounded = any(math.isinf(v) for _, values in rows for v in values)
    lines = [
        "/* Bounds from the metadata, as array initializers, e.g.",
        f"   static const float low[{upper}_ACTION_DIM] = {upper}_ACTION_LOW;",
        *(["   INFINITY marks an unbounded element (include <math.h> where you use these). */"] if unbounded else []),
    ]
    lines[-1] = lines[-1] if unbounded else lines[-1] + " */"
    for name, values in rows:
        lines.append(f"#define {upper}_{name} {{{', '.join(float_literal(v) for v in values)}}}")
    return [*lines, ""]


def _description(ir: PolicyIR, kind: str, stages: tuple[_Stage, ...]) -> list[str]:
    info = ir.info
    provenance = ", ".join(
        f"{label} {value}"
        for label, value in (
            ("robo_rl", info.version),
            ("git", info.git_hash),
            ("config", info.config_hash),
            ("producer", info.producer),
        )
        if value
    )
    lines = [
        f"Task: {info.task or 'unknown'}; control period dt = {info.dt if info.dt is not None else 'unknown'} s.",
        f"Provenance: {provenance or 'unknown'}.",
        f"Numerics: {kind}.",
        f"Network: {_network_summary(stages)}.",
        f"Graph inputs (concatenated into obs in this order): {', '.join(f'{n}[{w}]' for n, w in info.inputs)};"
        f" output: {info.output}.",
        *_memory_lines(info),
        "",
        "Observation obs[i]: name [unit] (low, high)",
        *_vector_table(info.obs_names, info.obs_units, info.obs_low, info.obs_high),
        *_chunk_line(info),
        "Action action[i]: name [unit] (low, high)",
        *_vector_table(info.action_names, info.action_units, info.action_low, info.action_high),
    ]
    return ["/*", *(f" * {_comment(line)}".rstrip() for line in lines), " */"]


def _memory_lines(info: PolicyInfo) -> list[str]:
    memory = info.memory
    if memory is None:
        return []
    return [
        f"Memory: {memory.kind} state of {memory.size} (graph input {memory.input} -> output {memory.output}), "
        f"reset value {memory.reset_value:g}. Reset rule: {memory.reset_rule}.",
    ]


def _chunk_line(info: PolicyInfo) -> list[str]:
    if info.action_chunk == 1:
        return []
    return [
        f"Action chunk: {info.action_chunk} steps per call, one step's actions each (below), step i meant for "
        f"i * dt after the observation; execute them with a receding horizon or temporal ensembling.",
    ]


def _network_summary(stages: tuple[_Stage, ...]) -> str:
    parts = [str(stages[0].in_width)]
    for stage in stages:
        if stage.gru is not None:
            parts.append(f"gru {stage.gru.hidden_size}")
        if stage.dense is not None:
            parts.append(f"dense {stage.dense.out_features}")
        parts.extend(_pointwise_summary(layer) for _, layer in stage.pointwise)
    return " -> ".join(parts)


def _pointwise_summary(layer: Pointwise) -> str:
    if isinstance(layer, Activation):
        return f"{layer.kind}({layer.alpha:g})" if layer.kind in ("elu", "leaky_relu") else layer.kind
    if isinstance(layer, Clip):
        return f"clip[{_bound(layer.low)}, {_bound(layer.high)}]"
    return f"{'const ' if layer.constant_first else ''}{layer.op}"


def _vector_table(names: Sequence[str], units: Sequence[str], low: Sequence[float], high: Sequence[float]) -> list[str]:
    return [
        f"  [{i:2d}] {name} [{unit or '-'}] ({_bound(lo)}, {_bound(hi)})"
        for i, (name, unit, lo, hi) in enumerate(zip(names, units, low, high, strict=True))
    ]


def _index_defines(stem: str, names: Sequence[str], what: str) -> list[str]:
    """`#define {stem}_{NAME} i` for each element, unless two names map to the same macro."""
    macros = [f"{stem}_{_macro_name(name) or i}" for i, name in enumerate(names)]
    if len(set(macros)) != len(macros):
        return [f"/* No {what} index macros: some {what} names coincide once made identifiers. */", ""]
    return [f"/* Index of each {what} element. */", *(f"#define {m} {i}" for i, m in enumerate(macros)), ""]


# ---------------------------------------------------------------------------------------------------- source

_KERNELS = {
    # kind: (weight type, extra parameters after the bias, input expression, accumulator type)
    "float": ("float", "", "x[i]", "float"),
    "int8": ("int8_t", "", "x[i]", "float"),
    "int8_codes": ("int8_t", ", float inverse", "codes[i]", "int32_t"),
}


def _kernel_kind(dense: Dense | QuantizedDense) -> str:
    if isinstance(dense, Dense):
        return "float"
    return "int8" if dense.input_scale is None else "int8_codes"


def _row_blocks(dense: Dense | QuantizedDense) -> tuple[int, ...]:
    """Rows per block, in storage order: blocks of the kernel's ROW_BLOCKS size, then of 4, then (int8 codes:
    of 2, whose pairs of rows SMLAD serves) single rows."""
    kind = _kernel_kind(dense)
    blocks, rest = [], dense.out_features
    for size in (ROW_BLOCKS[kind], 4, 2 if kind == "int8_codes" else 1, 1):
        blocks += [size] * (rest // size)
        rest %= size
    return tuple(blocks)


class _Source:
    """Builds the .c text: constants, scratch buffers, the shared dense kernels, one function per stage and the
    entry point."""

    def __init__(self, ir: PolicyIR, prefix: str, header_name: str, stages: tuple[_Stage, ...]) -> None:
        self.ir, self.prefix, self.header_name, self.stages = ir, prefix, header_name, stages
        self.upper = prefix.upper()
        self.gru_denses = {s.index: _gru_denses(s.gru) for s in stages if s.gru is not None}
        """Stage index → the GRU's input part (W, Wb) and state part (R, Rb) as Dense layers of 3H rows."""
        denses = [s.dense for s in stages if s.dense is not None]
        denses += [dense for pair in self.gru_denses.values() for dense in pair]
        self.kernels: dict[str, set[int]] = {}
        for dense in denses:
            self.kernels.setdefault(_kernel_kind(dense), set()).update(_row_blocks(dense))
        self.code_width = max((d.in_features for d in denses if _kernel_kind(d) == "int8_codes"), default=0)
        self.buffer_width = max((s.out_width for s in stages[:-1]), default=0)
        self.shared_pointwise = self._shared_pointwise()

    def render(self, kind: str) -> str:
        self.needs_exp = bool(self.gru_denses) or any(
            isinstance(layer, Activation) and layer.kind in EXP_ACTIVATIONS
            for stage in self.stages
            for _, layer in stage.pointwise
        )
        int8 = any(k != "float" for k in self.kernels)
        parts = [
            f"/* {self.prefix}_policy.c: policy network generated by robo_rl.firmware_export ({_comment(kind)}).",
            "   Do not edit; regenerate from the ONNX file instead. */",
            f'#include "{self.header_name}"',
            "",
            "#include <float.h>",
            "#include <math.h>",
            *(["#include <stdint.h>"] if int8 or self.needs_exp else []),
            "",
            "/* Fused multiply-add where the FPU has one (Cortex-M4F: VFMA), a separate multiply and add elsewhere. */",
            "#if defined(FP_FAST_FMAF) || defined(__FP_FAST_FMAF)",
            f"#define {self.upper}_MAC(acc, w, x) fmaf((w), (x), (acc))",
            "#else",
            f"#define {self.upper}_MAC(acc, w, x) ((acc) + (w) * (x))",
            "#endif",
            *(_DSP_SWITCH.replace("PREFIX", self.upper).splitlines() if self.code_width else []),
            "",
            *(self._constants(stage) for stage in self.stages),
            self._buffers(),
            _EXP_FUNCTION.replace("PREFIX", self.prefix) if self.needs_exp else "",
            *(self._kernel(kernel, rows) for kernel, rows in self.kernels.items()),
            *(self._shared_pointwise_function(key, name) for key, name in self.shared_pointwise.items()),
            *(self._stage_function(stage) for stage in self.stages),
            self._step_entry() if self.gru_denses else self._entry(),
        ]
        return "\n".join(part for part in parts if part)

    def _name(self, stage: _Stage, what: str) -> str:
        return f"{self.prefix}_stage{stage.index}_{what}"

    def _constants(self, stage: _Stage) -> str:
        if stage.gru is not None:
            inputs, states = self.gru_denses[stage.index]
            return self._dense_constants(stage, inputs, "input_") + self._dense_constants(stage, states, "state_")
        blocks = []
        if stage.dense is not None:
            blocks.append(self._dense_constants(stage, stage.dense))
        for index, layer in stage.pointwise:
            if isinstance(layer, Elementwise) and layer.constant.ndim == 1:
                values = _float_literals(layer.constant, layer.name)
                blocks.append(
                    f"/* Layer {index} '{_comment(layer.name)}': {_pointwise_summary(layer)} by a vector. */\n"
                    f"static const float {self._name(stage, f'c{index}')}[{len(values)}] = {_array_body(values)};\n"
                )
        return "".join(blocks)

    def _dense_constants(self, stage: _Stage, dense: Dense | QuantizedDense, stem: str = "") -> str:
        paired = _kernel_kind(dense) == "int8_codes"
        blocked = (_paired if paired else _blocked)(dense.weight, _row_blocks(dense))
        order = "[input pair][row pair][input][row] (inputs padded to even)" if paired else "[input][row in block]"
        lines = [
            f"/* Stage {stage.index}: dense '{_comment(dense.name)}', {dense.in_features} -> {dense.out_features}. "
            f"Weight rows in blocks of {'+'.join(map(str, _row_blocks(dense)))}, each stored {order}. */"
        ]
        weight_name, bias_name = self._name(stage, f"{stem}weight"), self._name(stage, f"{stem}bias")
        if isinstance(dense, QuantizedDense) and paired:
            scale = _float_literals(dense.output_scale, dense.name)
            weight = [str(int(v)) for v in blocked]
            lines += [
                f"static const union {{ int8_t bytes[{len(weight)}]; uint32_t words[{(len(weight) + 3) // 4}]; }} "
                f"{weight_name} = {{{_array_body(weight)}}};",
                "/* Per row: integer sum to output (weight scale x input scale). */",
                f"static const float {self._name(stage, 'scale')}[{len(scale)}] = {_array_body(scale)};",
            ]
        elif isinstance(dense, QuantizedDense):
            scale = _float_literals(dense.output_scale, dense.name)
            weight = [str(int(v)) for v in blocked]
            what = "weight scale x input scale" if dense.input_scale is not None else "weight scale"
            lines += [
                f"static const int8_t {weight_name}[{len(weight)}] = {_array_body(weight)};",
                f"/* Per row: integer sum to output ({what}). */",
                f"static const float {self._name(stage, 'scale')}[{len(scale)}] = {_array_body(scale)};",
            ]
        else:
            weight = _float_literals(blocked, dense.name)
            lines.append(f"static const float {weight_name}[{len(weight)}] = {_array_body(weight)};")
        bias = _float_literals(dense.bias, dense.name)
        lines.append(f"static const float {bias_name}[{len(bias)}] = {_array_body(bias)};")
        return "\n".join(lines) + "\n"

    def _buffers(self) -> str:
        used = sorted({stage.index % 2 for stage in self.stages[:-1] if stage.gru is None})  # a GRU writes h_out
        lines = [f"static float {self.prefix}_buffer{k}[{self.buffer_width}];" for k in used]
        for stage in self.stages:
            if stage.gru is not None:
                rows = 3 * stage.gru.hidden_size
                lines += [
                    f"static float {self.prefix}_stage{stage.index}_input_gates[{rows}]; /* W x + Wb: z, r, h */",
                    f"static float {self.prefix}_stage{stage.index}_state_gates[{rows}]; /* R h + Rb: z, r, h */",
                ]
        if self.code_width:
            even = self.code_width + self.code_width % 2
            lines += [
                f"static int8_t {self.prefix}_codes[{even}];",
                f"#if {self.prefix.upper()}_DSP",
                f"static uint32_t {self.prefix}_packed_codes[{even // 2}];",
                "#endif",
            ]
        if not lines:
            return ""
        return "/* Scratch: stages ping-pong between the float buffers. */\n" + "\n".join(lines) + "\n"

    def _kernel(self, kind: str, rows: set[int]) -> str:
        """The shared dense kernel of one kind, with a loop for each row-block size some layer needs."""
        if kind == "int8_codes":
            return self._codes_kernel(rows)
        weight_type, extra, _, _ = _KERNELS[kind]
        name = f"{self.prefix}_dense" + ("" if kind == "float" else f"_{kind}")
        scale = "const float *restrict scale, " if kind != "float" else ""
        lines = [
            f"/* y = W x + b for W stored in row blocks ({kind}). */",
            f"static void {name}(const {weight_type} *restrict w, {scale}const float *restrict bias,",
            f"    const float *restrict x{extra}, float *restrict y, int in, int out)",
            "{",
        ]
        lines.append("    int o = 0;")
        for block in sorted(rows, reverse=True):
            lines += self._row_loop(kind, block)
        lines.append("}")
        return "\n".join(lines) + "\n"

    def _codes_kernel(self, rows: set[int]) -> str:
        """int8 weights x int8 input codes with exact int32 sums. Weights come in pairs of inputs (`_paired`), so
        that with the DSP extension (Cortex-M4) one SMLAD does two multiply-accumulates on sign-extended halves;
        elsewhere the same layout is read byte by byte. Both give the same integer sums."""
        p = self.prefix
        lines = [
            "/* y = W x + b with x quantized to int8 codes, W int8 in row blocks of input pairs (int8 codes). */",
            f"static void {p}_dense_int8_codes(const uint32_t *restrict words, const float *restrict scale,",
            "    const float *restrict bias, const float *restrict x, float inverse, float *restrict y, int in,",
            "    int out)",
            "{",
            f"    int8_t *restrict codes = {p}_codes;",
            "    for (int i = 0; i < in; ++i) { /* round(clamp(x * inverse, +-127)), halves away from zero */",
            "        float v = x[i] * inverse;",
            "        if (v > 127.0f) v = 127.0f;",
            "        if (v < -127.0f) v = -127.0f;",
            "        codes[i] = (int8_t)(v < 0.0f ? v - 0.5f : v + 0.5f);",
            "    }",
            "    if (in & 1) codes[in++] = 0; /* weights are padded with a zero input to an even count */",
            "    const int pairs = in / 2;",
            f"#if {p.upper()}_DSP",
            f"    uint32_t *restrict packed = {p}_packed_codes;",
            "    for (int k = 0; k < pairs; ++k) {",
            "        packed[k] = (uint32_t)(uint16_t)codes[2 * k] | (uint32_t)(uint16_t)codes[2 * k + 1] << 16;",
            "    }",
            "#endif",
            "    const int8_t *w = (const int8_t *)words;",
            "    int o = 0;",
        ]
        for block in sorted(rows, reverse=True):
            lines += self._codes_row_loop(block)
        lines.append("}")
        return "\n".join(lines) + "\n"

    def _codes_row_loop(self, rows: int) -> list[str]:
        """`rows` outputs over all input pairs: the portable loop, and for even blocks the SMLAD one."""
        init = _declaration("int32_t", [f"a{r} = 0" for r in range(rows)])
        if rows == 1:
            macs = ["a0 += w[0] * x0 + w[1] * x1;"]
        else:
            macs = [
                f"a{2 * j} += w[{4 * j}] * x0 + w[{4 * j + 2}] * x1; "
                f"a{2 * j + 1} += w[{4 * j + 1}] * x0 + w[{4 * j + 3}] * x1;"
                for j in range(rows // 2)
            ]
        portable = [
            f"for (int k = 0; k < pairs; ++k, w += {2 * rows}) {{",
            "    const int32_t x0 = codes[2 * k], x1 = codes[2 * k + 1];",
            *(f"    {m}" for m in macs),
            "}",
        ]
        if rows > 1:
            words = rows // 2
            dsp = [
                "const uint32_t *wp = (const uint32_t *)(const void *)w;",
                f"for (int k = 0; k < pairs; ++k, wp += {words}) {{",
                "    const int32_t xk = (int32_t)packed[k];",
                *(
                    f"    a{2 * j} = __smlad(__sxtb16((int32_t)wp[{j}]), xk, a{2 * j}); "
                    f"a{2 * j + 1} = __smlad(__sxtb16((int32_t)(wp[{j}] >> 8 | wp[{j}] << 24)), xk, a{2 * j + 1});"
                    for j in range(words)
                ),
                "}",
                f"w += {2 * rows} * pairs;",
            ]
            body = [f"#if {self.prefix.upper()}_DSP", *dsp, "#else", *portable, "#endif"]
        else:
            body = portable
        stores = [f"y[o + {r}] = (float)a{r} * scale[o + {r}] + bias[o + {r}];" for r in range(rows)]
        loop = f"for (; o + {rows} <= out; o += {rows}) {{" if rows > 1 else "for (; o < out; ++o) {"
        lines = [*init, *body, *(" ".join(stores[i : i + 2]) for i in range(0, rows, 2))]
        return [f"    {loop}", *(line if line.startswith("#") else f"        {line}" for line in lines), "    }"]

    def _row_loop(self, kind: str, rows: int) -> list[str]:
        """Accumulate `rows` outputs at a time over all inputs; `w` advances through the block."""
        _, _, source, acc_type = _KERNELS[kind]
        if kind == "float":
            init = [f"a{r} = bias[o + {r}]" for r in range(rows)]
            macs = [f"a{r} = {self.upper}_MAC(a{r}, w[{r}], xi);" for r in range(rows)]
            stores = [f"y[o + {r}] = a{r};" for r in range(rows)]
        else:
            zero = "0.0f" if kind == "int8" else "0"
            init = [f"a{r} = {zero}" for r in range(rows)]
            if kind == "int8":
                macs = [f"a{r} = {self.upper}_MAC(a{r}, (float)w[{r}], xi);" for r in range(rows)]
            else:
                macs = [f"a{r} += w[{r}] * xi;" for r in range(rows)]
            cast = "(float)" if kind == "int8_codes" else ""
            stores = [f"y[o + {r}] = {cast}a{r} * scale[o + {r}] + bias[o + {r}];" for r in range(rows)]
        loop = f"for (; o + {rows} <= out; o += {rows}) {{" if rows > 1 else "for (; o < out; ++o) {"
        body = [
            *_declaration(acc_type, init),
            f"for (int i = 0; i < in; ++i, w += {rows}) {{",
            f"    const {acc_type} xi = {source};",
            *(f"    {' '.join(macs[i : i + 4])}" for i in range(0, rows, 4)),
            "}",
            *(" ".join(stores[i : i + 2]) for i in range(0, rows, 2)),
        ]
        return [f"    {loop}", *(f"        {line}" for line in body), "    }"]

    def _stage_function(self, stage: _Stage) -> str:
        if stage.gru is not None:
            return self._gru_function(stage, stage.gru)
        lines = [f"static void {self.prefix}_stage{stage.index}(const float *restrict x, float *restrict y)", "{"]
        dense = stage.dense
        if dense is not None:
            lines.append(f"    {self._dense_call(stage, dense)}")
        shared = self.shared_pointwise.get(self._pointwise_key(stage))
        ops = self._pointwise_lines(stage)
        if shared is not None and dense is not None:
            names = ", ".join(_comment(layer.name) for _, layer in stage.pointwise)
            lines.append(f"    {shared}(y, {stage.out_width}); /* {names} */")
        elif ops or dense is None:
            source = "y" if dense is not None else "x"
            lines += [
                f"    for (int i = 0; i < {stage.out_width}; ++i) {{",
                f"        float v = {source}[i];",
                *(f"        {line}" for line in ops),
                "        y[i] = v;",
                "    }",
            ]
        return "\n".join([*lines, "}"]) + "\n"

    def _gru_function(self, stage: _Stage, gru: Gru) -> str:
        """One GRU step: both gate parts with the dense kernel, then the update unit by unit. `y` may be `h`: unit
        i's old state is read before its new one is written, and the state part is computed before."""
        p, size = self.prefix, gru.hidden_size
        input_gates, state_gates = f"{p}_stage{stage.index}_input_gates", f"{p}_stage{stage.index}_state_gates"
        sigmoid, tanh = (_activation_code(Activation("", kind), f"{p}_exp") for kind in ("sigmoid", "tanh"))
        lines = [
            f"/* Stage {stage.index}: GRU '{_comment(gru.name)}', {gru.in_features} inputs, state {size} (ONNX GRU,",
            "   linear_before_reset=1): z = sigmoid(Wz x + Wbz + Rz h + Rbz), r = sigmoid(Wr x + Wbr + Rr h + Rbr),",
            "   n = tanh(Wh x + Wbh + r * (Rh h + Rbh)), h' = (1 - z) * n + z * h. */",
            f"static void {p}_stage{stage.index}(const float *restrict x, const float *h, float *y)",
            "{",
            f"    {p}_dense({self._name(stage, 'input_weight')}, {self._name(stage, 'input_bias')}, x, {input_gates}, "
            f"{gru.in_features}, {3 * size});",
            f"    {p}_dense({self._name(stage, 'state_weight')}, {self._name(stage, 'state_bias')}, h, {state_gates}, "
            f"{size}, {3 * size});",
            f"    const float *gx = {input_gates}, *gh = {state_gates};",
            f"    for (int i = 0; i < {size}; ++i) {{",
            "        float v = gx[i] + gh[i];",
            *(f"        {line}" for line in sigmoid),
            "        const float z = v;",
            f"        v = gx[{size} + i] + gh[{size} + i];",
            *(f"        {line}" for line in sigmoid),
            "        const float r = v;",
            f"        v = gx[{2 * size} + i] + r * gh[{2 * size} + i];",
            *(f"        {line}" for line in tanh),
            "        y[i] = (1.0f - z) * v + z * h[i];",
            "    }",
            "}",
        ]
        return "\n".join(lines) + "\n"

    def _dense_call(self, stage: _Stage, dense: Dense | QuantizedDense) -> str:
        kind = _kernel_kind(dense)
        weight, bias, scale = (self._name(stage, what) for what in ("weight", "bias", "scale"))
        sizes = f"y, {dense.in_features}, {dense.out_features});"
        if kind == "float":
            return f"{self.prefix}_dense({weight}, {bias}, x, {sizes}"
        if kind == "int8":
            return f"{self.prefix}_dense_int8({weight}, {scale}, {bias}, x, {sizes}"
        assert isinstance(dense, QuantizedDense)
        inverse = float_literal(float(dense.input_inverse_scale))
        return f"{self.prefix}_dense_int8_codes({weight}.words, {scale}, {bias}, x, {inverse}, {sizes}"

    def _pointwise_key(self, stage: _Stage) -> tuple[str, ...]:
        """The stage's pointwise code without layer names; empty when it reads vector constants (not shareable)."""
        if any(isinstance(layer, Elementwise) and layer.constant.ndim == 1 for _, layer in stage.pointwise):
            return ()
        return tuple(line for n, layer in stage.pointwise for line in self._pointwise_code(stage, n, layer))

    def _shared_pointwise(self) -> dict[tuple[str, ...], str]:
        """Pointwise code that several dense stages run (e.g. the same activation) → name of a shared function."""
        keys = [self._pointwise_key(stage) for stage in self.stages if stage.dense is not None]
        repeated = sorted({key for key in keys if key and keys.count(key) > 1}, key=keys.index)
        return {key: f"{self.prefix}_pointwise{n}" for n, key in enumerate(repeated)}

    def _shared_pointwise_function(self, key: tuple[str, ...], name: str) -> str:
        lines = [
            "/* In-place pointwise layers shared by several stages. */",
            f"static void {name}(float *y, int count)",
            "{",
            "    for (int i = 0; i < count; ++i) {",
            "        float v = y[i];",
            *(f"        {line}" for line in key),
            "        y[i] = v;",
            "    }",
            "}",
        ]
        return "\n".join(lines) + "\n"

    def _pointwise_lines(self, stage: _Stage) -> list[str]:
        lines: list[str] = []
        for number, layer in stage.pointwise:
            code = self._pointwise_code(stage, number, layer)
            lines.extend(f"{line} /* {_comment(layer.name)} */" if k == 0 else line for k, line in enumerate(code))
        return lines

    def _pointwise_code(self, stage: _Stage, number: int, layer: Pointwise) -> list[str]:
        if isinstance(layer, Activation):
            return _activation_code(layer, f"{self.prefix}_exp")
        if isinstance(layer, Clip):
            low, high = float_literal(layer.low), float_literal(layer.high)
            code = [
                *([f"if (v < {low}) v = {low};"] if layer.low > -math.inf else []),
                *([f"if (v > {high}) v = {high};"] if layer.high < math.inf else []),
            ]
            return code or ["(void)0; /* unbounded clip */"]
        if layer.constant.ndim == 0:
            c = float_literal(float(layer.constant))
        else:
            c = f"{self._name(stage, f'c{number}')}[i]"
        symbol = {"add": "+", "sub": "-", "mul": "*", "div": "/"}[layer.op]
        return [f"v = {c} {symbol} v;" if layer.constant_first else f"v = v {symbol} {c};"]

    def _entry(self) -> str:
        p, u = self.prefix, self.upper
        calls = []
        for stage in self.stages:
            src = "obs" if stage.index == 0 else f"{p}_buffer{(stage.index - 1) % 2}"
            dst = "action" if stage.index == len(self.stages) - 1 else f"{p}_buffer{stage.index % 2}"
            calls.append(f"    {p}_stage{stage.index}({src}, {dst});\n")
        return (
            f"int {p}_policy(const float *obs, float *action)\n"
            "{\n"
            "    /* Check every input before writing anything: !(x within +-FLT_MAX) holds for NaN and +-inf. */\n"
            f"    for (int i = 0; i < {u}_OBS_DIM; ++i) {{\n"
            "        if (!(obs[i] >= -FLT_MAX && obs[i] <= FLT_MAX)) {\n"
            f"            return {u}_ERR_NONFINITE;\n"
            "        }\n"
            "    }\n" + "".join(calls) + f"    return {u}_OK;\n"
            "}\n"
        )

    def _step_entry(self) -> str:
        """`{prefix}_policy_step` and `{prefix}_policy_reset` of a policy with memory: the GRU stage reads `h_in` and
        writes `h_out`, the stage after it reads `h_out`."""
        p, u = self.prefix, self.upper
        calls, source = [], "obs"
        for stage in self.stages:
            last = stage.index == len(self.stages) - 1
            if stage.gru is not None:
                calls.append(f"    {p}_stage{stage.index}({source}, h_in, h_out);\n")
                source = "h_out"
                if last:
                    calls.append(f"    for (int i = 0; i < {u}_STATE_SIZE; ++i) action[i] = h_out[i];\n")
                continue
            target = "action" if last else f"{p}_buffer{stage.index % 2}"
            calls.append(f"    {p}_stage{stage.index}({source}, {target});\n")
            source = target
        check = (
            "        if (!(VALUE[i] >= -FLT_MAX && VALUE[i] <= FLT_MAX)) {\n"
            f"            return {u}_ERR_NONFINITE;\n"
            "        }\n"
        )
        return (
            f"int {p}_policy_step(const float *obs, const float *h_in, float *action, float *h_out)\n"
            "{\n"
            "    /* Check every input before writing anything: !(x within +-FLT_MAX) holds for NaN and +-inf. */\n"
            f"    for (int i = 0; i < {u}_OBS_DIM; ++i) {{\n" + check.replace("VALUE", "obs") + "    }\n"
            f"    for (int i = 0; i < {u}_STATE_SIZE; ++i) {{\n"
            + check.replace("VALUE", "h_in")
            + "    }\n"
            + "".join(calls)
            + f"    return {u}_OK;\n"
            "}\n\n"
            f"void {p}_policy_reset(float *state)\n"
            "{\n"
            f"    for (int i = 0; i < {u}_STATE_SIZE; ++i) {{\n"
            f"        state[i] = {u}_STATE_RESET_VALUE;\n"
            "    }\n"
            "}\n"
        )


def _gru_denses(gru: Gru | None) -> tuple[Dense, Dense]:
    """A GRU's input part (W, Wb) and state part (R, Rb) as Dense layers of 3H rows (z, r, h)."""
    assert gru is not None
    return (
        Dense(f"{gru.name} W", gru.input_weight, gru.input_bias),
        Dense(f"{gru.name} R", gru.state_weight, gru.state_bias),
    )


_DSP_SWITCH = """
/* int8 x int8 sums with the DSP extension's SMLAD (two 16-bit multiply-accumulates per instruction). */
#if defined(__ARM_FEATURE_DSP) && defined(__ARM_FEATURE_SIMD32)
#include <arm_acle.h>
#define PREFIX_DSP 1
#else
#define PREFIX_DSP 0
#endif"""
EXP_ACTIVATIONS = ("elu", "sigmoid", "tanh")
_EXP_COEFFICIENTS = (
    "0.00137514085f",
    "0.00836892182f",
    "0.0416695337f",
    "0.166665184f",
    "0.499999886f",
    "1.0f",
    "1.0f",
)
"""e^r on |r| <= ln2/2, highest degree first: a least-squares fit of relative error (max 4e-9 before rounding)."""
_EXP_FUNCTION = (
    """/* e^x for x <= 0 (the activations only need that half): x = k ln2 + r with |r| <= ln2/2 (k rounded by the
   1.5 * 2^23 trick; ln2 split in two so that k ln2 is exact), e^r by a degree-6 polynomial, 2^k through the
   exponent bits. Relative error below 4e-7 down to -87, 0 below. The same bits on every IEEE-754 single-precision
   target evaluating float expressions in float (no fused operations, no libm). */
static inline float PREFIX_exp(float x)
{
    if (x < -87.0f) return 0.0f;
    const float k = (x * 1.44269504f + 12582912.0f) - 12582912.0f;
    const float r = (x - k * 0.693145752f) - k * 1.42860677e-6f;
    float p = """
    + _EXP_COEFFICIENTS[0]
    + ";\n"
    + "".join(f"    p = p * r + {c};\n" for c in _EXP_COEFFICIENTS[1:])
    + """    union { uint32_t bits; float value; } scale;
    scale.bits = (uint32_t)((int32_t)k + 127) << 23;
    return p * scale.value;
}
"""
)


def _activation_code(layer: Activation, exp: str) -> list[str]:
    """C statements applying `layer` to `float v`; `exp` names the generated e^x function."""
    alpha = float_literal(layer.alpha)
    if layer.kind == "relu":
        return ["if (v < 0.0f) v = 0.0f;"]
    if layer.kind == "tanh":  # tanh|v| = (1 - e^-2|v|) / (1 + e^-2|v|): absolute error ~1e-7
        return [f"{{ const float e = {exp}(-2.0f * fabsf(v)), t = (1.0f - e) / (1.0f + e); v = v < 0.0f ? -t : t; }}"]
    if layer.kind == "sigmoid":  # 1 / (1 + e^-|v|) for v >= 0, e^-|v| / (1 + e^-|v|) below
        return [f"{{ const float e = {exp}(-fabsf(v)), s = 1.0f / (1.0f + e); v = v < 0.0f ? e * s : s; }}"]
    if layer.kind == "elu":
        scaled = f"{exp}(v) - 1.0f" if layer.alpha == 1.0 else f"{alpha} * ({exp}(v) - 1.0f)"
        return [f"if (v < 0.0f) v = {scaled};"]
    return [f"if (v < 0.0f) v = {alpha} * v;"]


def _declaration(kind: str, items: list[str]) -> list[str]:
    """`kind a0 = ..., a1 = ...;` with four initializers per line."""
    lines = [", ".join(items[i : i + 4]) for i in range(0, len(items), 4)]
    ends = [","] * (len(lines) - 1) + [";"]
    return [f"{kind} {lines[0]}{ends[0]}", *(f"    {line}{end}" for line, end in zip(lines[1:], ends[1:], strict=True))]


def _blocked(weight: np.ndarray, blocks: Sequence[int]) -> np.ndarray:
    """(out, in) → flat blocks of `blocks` rows each, each block stored `[input][row in block]`."""
    parts, start = [], 0
    for rows in blocks:
        parts.append(weight[start : start + rows].T.reshape(-1))
        start += rows
    return np.concatenate(parts) if parts else np.zeros(0, weight.dtype)


def _paired(weight: np.ndarray, blocks: Sequence[int]) -> np.ndarray:
    """(out, in) → flat blocks of rows for SMLAD: inputs padded to an even count, then per input pair, per pair of
    rows, the bytes (row 2j input 2p, row 2j+1 input 2p, row 2j input 2p+1, row 2j+1 input 2p+1); a single-row
    block is stored in input order."""
    padded = np.pad(weight, ((0, 0), (0, weight.shape[1] % 2)))
    parts, start = [], 0
    for rows in blocks:
        block = padded[start : start + rows]
        if rows == 1:
            parts.append(block.reshape(-1))
        else:  # [row pair][row in pair][input pair][input in pair] → [input pair][row pair][input in pair][row]
            grouped = block.reshape(rows // 2, 2, -1, 2)
            parts.append(grouped.transpose(2, 0, 3, 1).reshape(-1))
        start += rows
    return np.concatenate(parts) if parts else np.zeros(0, weight.dtype)


def _array_body(values: Sequence[str]) -> str:
    lines = [", ".join(values[i : i + VALUES_PER_LINE]) for i in range(0, len(values), VALUES_PER_LINE)]
    return "{\n    " + ",\n    ".join(lines) + "\n}"
