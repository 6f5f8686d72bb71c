"""Pointwise activations in the generated C, with the generated e^x that ELU, sigmoid and tanh use."""

from __future__ import annotations

from robo_rl.firmware_export.c_text import float_literal
from robo_rl.firmware_export.ir import Activation

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
EXP_FUNCTION = (
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


def activation_code(layer: Activation, exp: str) -> list[str]:
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
