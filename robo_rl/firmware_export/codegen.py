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
weights are stored in blocks of output rows (`c_kernels.ROW_BLOCKS`: 16 for float weights, then blocks of 4, then single
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

The parts: `c_stages` groups the layers, `c_header` writes the header, `c_source` the .c file with the dense
kernels of `c_kernels` and the activations of `c_activations`; `c_text` formats literals and comments.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from robo_rl.firmware_export.c_header import header
from robo_rl.firmware_export.c_source import Source
from robo_rl.firmware_export.c_stages import stages as group_stages
from robo_rl.firmware_export.ir import Dense, Gru, Pointwise, PolicyIR
from robo_rl.firmware_export.quantize import QuantizedDense, QuantizedIR

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
    stages = group_stages(layers, ir.obs_dim)
    header_name, source_name = f"{prefix}_policy.h", f"{prefix}_policy.c"
    kind = quantization.description if quantization is not None else "float32 weights and activations"
    header_text = header(ir, prefix, header_name, kind, stages)
    source = Source(ir, prefix, header_name, stages).render(kind)
    return CSources(prefix, header_name, header_text, source_name, source)


def _check_prefix(prefix: str) -> None:
    if not _IDENTIFIER.fullmatch(prefix):
        raise ValueError(f"prefix {prefix!r} is not a C identifier")
