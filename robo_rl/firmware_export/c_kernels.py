"""The shared dense kernels of the generated C (one per weight type) and the weight layouts they read: rows in
blocks, each block interleaved by input; int8 codes by pairs of inputs for SMLAD."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from robo_rl.firmware_export.c_text import declaration
from robo_rl.firmware_export.ir import Dense
from robo_rl.firmware_export.quantize import QuantizedDense

ROW_BLOCKS = {"float": 16, "int8": 4, "int8_codes": 4}
"""Output rows each dense kernel computes together (one register accumulator each), chosen by instruction counts
and code size measured on the Cortex-M4F (QEMU): 16 of its 32 float registers hold float accumulators (2.3
instructions per multiply-accumulate, 2.5 with 8); int8 weights with float activations are the size-first
option, so 4 (350 bytes less code than 16); int8 codes with SMLAD: 4, as 6 or 8 integer accumulators spill
the 13 core registers (4: 19.8k instructions and 8.1 kB for a 22-64-64-4 ELU policy; 8: 20.6k and 8.6 kB)."""
KERNELS = {
    # kind: (weight type, extra parameters after the bias, input expression, accumulator type)
    "float": ("float", "", "x[i]", "float"),
    "int8": ("int8_t", "", "x[i]", "float"),
    "int8_codes": ("int8_t", ", float inverse", "codes[i]", "int32_t"),
}
DSP_SWITCH = """
/* int8 x int8 sums with the DSP extension's SMLAD (two 16-bit multiply-accumulates per instruction). */
#if defined(__ARM_FEATURE_DSP) && defined(__ARM_FEATURE_SIMD32)
#include <arm_acle.h>
#define PREFIX_DSP 1
#else
#define PREFIX_DSP 0
#endif"""


def kernel_kind(dense: Dense | QuantizedDense) -> str:
    if isinstance(dense, Dense):
        return "float"
    return "int8" if dense.input_scale is None else "int8_codes"


def row_blocks(dense: Dense | QuantizedDense) -> tuple[int, ...]:
    """Rows per block, in storage order: blocks of the kernel's ROW_BLOCKS size, then of 4, then (int8 codes:
    of 2, whose pairs of rows SMLAD serves) single rows."""
    kind = kernel_kind(dense)
    blocks, rest = [], dense.out_features
    for size in (ROW_BLOCKS[kind], 4, 2 if kind == "int8_codes" else 1, 1):
        blocks += [size] * (rest // size)
        rest %= size
    return tuple(blocks)


def kernel(prefix: str, kind: str, rows: set[int]) -> str:
    """The shared dense kernel of one kind, with a loop for each row-block size some layer needs."""
    if kind == "int8_codes":
        return _codes_kernel(prefix, rows)
    weight_type, extra, _, _ = KERNELS[kind]
    name = f"{prefix}_dense" + ("" if kind == "float" else f"_{kind}")
    scale = "const float *restrict scale, " if kind != "float" else ""
    lines = [
        f"/* y = W x + b for W stored in row blocks ({kind}). */",
        f"static void {name}(const {weight_type} *restrict w, {scale}const float *restrict bias,",
        f"    const float *restrict x{extra}, float *restrict y, int in, int out)",
        "{",
    ]
    lines.append("    int o = 0;")
    for block in sorted(rows, reverse=True):
        lines += _row_loop(prefix, kind, block)
    lines.append("}")
    return "\n".join(lines) + "\n"


def _codes_kernel(prefix: str, rows: set[int]) -> str:
    """int8 weights x int8 input codes with exact int32 sums. Weights come in pairs of inputs (`paired_rows`), so
    that with the DSP extension (Cortex-M4) one SMLAD does two multiply-accumulates on sign-extended halves;
    elsewhere the same layout is read byte by byte. Both give the same integer sums."""
    p = prefix
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
        lines += _codes_row_loop(prefix, block)
    lines.append("}")
    return "\n".join(lines) + "\n"


def _codes_row_loop(prefix: str, rows: int) -> list[str]:
    """`rows` outputs over all input pairs: the portable loop, and for even blocks the SMLAD one."""
    init = declaration("int32_t", [f"a{r} = 0" for r in range(rows)])
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
        body = [f"#if {prefix.upper()}_DSP", *dsp, "#else", *portable, "#endif"]
    else:
        body = portable
    stores = [f"y[o + {r}] = (float)a{r} * scale[o + {r}] + bias[o + {r}];" for r in range(rows)]
    loop = f"for (; o + {rows} <= out; o += {rows}) {{" if rows > 1 else "for (; o < out; ++o) {"
    lines = [*init, *body, *(" ".join(stores[i : i + 2]) for i in range(0, rows, 2))]
    return [f"    {loop}", *(line if line.startswith("#") else f"        {line}" for line in lines), "    }"]


def _row_loop(prefix: str, kind: str, rows: int) -> list[str]:
    """Accumulate `rows` outputs at a time over all inputs; `w` advances through the block."""
    _, _, source, acc_type = KERNELS[kind]
    if kind == "float":
        init = [f"a{r} = bias[o + {r}]" for r in range(rows)]
        macs = [f"a{r} = {prefix.upper()}_MAC(a{r}, w[{r}], xi);" for r in range(rows)]
        stores = [f"y[o + {r}] = a{r};" for r in range(rows)]
    else:
        zero = "0.0f" if kind == "int8" else "0"
        init = [f"a{r} = {zero}" for r in range(rows)]
        if kind == "int8":
            macs = [f"a{r} = {prefix.upper()}_MAC(a{r}, (float)w[{r}], xi);" for r in range(rows)]
        else:
            macs = [f"a{r} += w[{r}] * xi;" for r in range(rows)]
        cast = "(float)" if kind == "int8_codes" else ""
        stores = [f"y[o + {r}] = {cast}a{r} * scale[o + {r}] + bias[o + {r}];" for r in range(rows)]
    loop = f"for (; o + {rows} <= out; o += {rows}) {{" if rows > 1 else "for (; o < out; ++o) {"
    body = [
        *declaration(acc_type, init),
        f"for (int i = 0; i < in; ++i, w += {rows}) {{",
        f"    const {acc_type} xi = {source};",
        *(f"    {' '.join(macs[i : i + 4])}" for i in range(0, rows, 4)),
        "}",
        *(" ".join(stores[i : i + 2]) for i in range(0, rows, 2)),
    ]
    return [f"    {loop}", *(f"        {line}" for line in body), "    }"]


def blocked_rows(weight: np.ndarray, blocks: Sequence[int]) -> np.ndarray:
    """(out, in) → flat blocks of `blocks` rows each, each block stored `[input][row in block]`."""
    parts, start = [], 0
    for rows in blocks:
        parts.append(weight[start : start + rows].T.reshape(-1))
        start += rows
    return np.concatenate(parts) if parts else np.zeros(0, weight.dtype)


def paired_rows(weight: np.ndarray, blocks: Sequence[int]) -> np.ndarray:
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
