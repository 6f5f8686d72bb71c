"""int8 post-training quantization of a PolicyIR: per-output-channel weight scales, float or int8 activations.

Weights: each Dense row `o` is stored as int8 `q[o, :]` with a float scale `s[o] = max|W[o, :]| / 127` (symmetric,
round half away from zero), so `W[o, i] ≈ q[o, i] · s[o]` with `|error| ≤ s[o] / 2`.

Activations:
- "float": the Dense input stays float; `y[o] = (Σ_i q[o, i] · x[i]) · s[o] + b[o]` (float accumulation).
  4× smaller weights, same code path otherwise.
- "int8": each Dense input is quantized with a per-layer scale `a = max|x| / 127` measured on calibration
  observations: `xq[i] = round(clamp(x[i] / a, ±127))`; `y[o] = (Σ_i q[o, i] · xq[i]) · (s[o] · a) + b[o]` with
  exact int32 accumulation. Inputs beyond the calibrated range saturate at ±127.
Everything else (normalizer, activations, clip, action scaling) stays float.

`evaluate_quantized` simulates exactly the arithmetic of the generated C in numpy; `quantization_error` reports
the error against the float policy on a test set and `error_bound` a per-sample worst-case bound for it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

import numpy as np

from robo_rl.firmware_export.evaluate import apply_pointwise, evaluate
from robo_rl.firmware_export.ir import Activation, Clip, Dense, Elementwise, Gru, Pointwise, PolicyInfo, PolicyIR

ActivationMode = Literal["float", "int8"]
INT8_MAX = 127
UNBOUNDED_OBS_STD = 3.0
"""Calibration samples of an observation without finite bounds: normal with this standard deviation."""


@dataclass(frozen=True, eq=False)
class QuantizedDense:
    """A Dense layer with int8 weights and one float scale per output row."""

    name: str
    weight: np.ndarray = field(repr=False)
    """(out_features, in_features) int8."""
    weight_scale: np.ndarray = field(repr=False)
    """(out_features,) float32: real weight ≈ weight · weight_scale[:, None]."""
    bias: np.ndarray = field(repr=False)
    """(out_features,) float32."""
    input_scale: float | None
    """int8 activations: real input ≈ xq · input_scale. None: the input stays float."""

    @property
    def in_features(self) -> int:
        return int(self.weight.shape[1])

    @property
    def out_features(self) -> int:
        return int(self.weight.shape[0])

    @property
    def input_inverse_scale(self) -> np.float32:
        """float32 `1 / input_scale`, the factor the C code multiplies inputs by before rounding."""
        if self.input_scale is None:
            raise ValueError(f"{self.name}: float activations have no input scale")
        return np.float32(1.0) / np.float32(self.input_scale)

    @property
    def output_scale(self) -> np.ndarray:
        """(out_features,) float32: the factor from the integer accumulator to the float output."""
        scale = self.weight_scale if self.input_scale is None else self.weight_scale * np.float32(self.input_scale)
        return scale.astype(np.float32)

    def dequantized_weight(self) -> np.ndarray:
        """(out_features, in_features) float32 weights the int8 values stand for."""
        return (self.weight.astype(np.float32) * self.weight_scale[:, None]).astype(np.float32)


QuantizedLayer: TypeAlias = QuantizedDense | Pointwise


@dataclass(frozen=True)
class QuantizedIR:
    """A PolicyIR whose Dense layers are quantized; other layers are those of `ir`."""

    ir: PolicyIR
    layers: tuple[QuantizedLayer, ...]
    activations: ActivationMode

    @property
    def description(self) -> str:
        return f"int8 weights (per-output-channel scales), {self.activations} activations"


@dataclass(frozen=True)
class QuantizationReport:
    """Error of a quantized policy against the float policy on a test set."""

    max_abs_error: float
    """max over samples and actions of |quantized − float| (action units)."""
    mean_abs_error: float
    output_scale: float
    """max |float action| over the test set."""
    relative_error: float
    """max_abs_error / max(1, output_scale)."""
    samples: int


def sample_observations(info: PolicyInfo, count: int, seed: int = 0) -> np.ndarray:
    """(count, obs_dim) float32 observations uniform within the metadata bounds; an observation without finite
    bounds is drawn from a normal distribution with standard deviation 3 (as `robo-rl export` does)."""
    rng = np.random.default_rng(seed)
    low, high = np.asarray(info.obs_low, np.float64), np.asarray(info.obs_high, np.float64)
    finite = np.isfinite(low) & np.isfinite(high)
    span = np.minimum(np.where(finite, high - low, 0.0), 1e6)
    uniform = np.where(finite, low, 0.0) + span * rng.random((count, low.size))
    normal = UNBOUNDED_OBS_STD * rng.standard_normal((count, low.size))
    return np.where(finite, uniform, normal).astype(np.float32)


def quantize(
    ir: PolicyIR,
    calibration_obs: np.ndarray | None = None,
    activations: ActivationMode = "float",
    seed: int = 0,
) -> QuantizedIR:
    """Quantize every Dense layer of `ir` to int8 weights with per-output-channel scales (ValueError for a policy
    with memory: float32 only).

    `activations="int8"` also quantizes each Dense input with a per-layer scale from the largest magnitude the
    float policy produces there on `calibration_obs` `(n, obs_dim)`; without them, 1024 observations are
    sampled from the metadata bounds (`sample_observations`), which is only as good as those bounds.
    """
    if activations not in ("float", "int8"):
        raise ValueError(f"activations must be 'float' or 'int8', not {activations!r}")
    if ir.state_size:
        raise ValueError(
            "int8 export of a policy with memory (a GRU) is not supported: its state feeds its own rounding error "
            "back at every step, which the per-step error report and bound here do not cover; export it as float32"
        )
    ranges: list[float] = []
    if activations == "int8":
        obs = calibration_obs if calibration_obs is not None else sample_observations(ir.info, 1024, seed)
        ranges = _dense_input_ranges(ir, _checked_obs(ir, obs))
    layers: list[QuantizedLayer] = []
    dense_index = 0
    for layer in ir.layers:
        if isinstance(layer, Dense):
            input_scale = _activation_scale(ranges[dense_index]) if ranges else None
            layers.append(quantize_dense(layer, input_scale))
            dense_index += 1
        else:
            assert not isinstance(layer, Gru)  # refused above
            layers.append(layer)
    return QuantizedIR(ir=ir, layers=tuple(layers), activations=activations)


def quantize_dense(layer: Dense, input_scale: float | None = None) -> QuantizedDense:
    """int8 weights with per-row symmetric scales `max|row| / 127` (an all-zero row gets scale 1)."""
    peak = np.abs(layer.weight).max(axis=1)
    scale = np.where(peak > 0, peak / np.float32(INT8_MAX), np.float32(1.0)).astype(np.float32)
    q = _round_half_away(layer.weight / scale[:, None])
    weight = np.clip(q, -INT8_MAX, INT8_MAX).astype(np.int8)
    return QuantizedDense(layer.name, weight, scale, layer.bias.astype(np.float32), input_scale)


def evaluate_quantized(qir: QuantizedIR, obs: np.ndarray) -> np.ndarray:
    """Numpy simulation of the generated int8 C code: obs `(n, obs_dim)` or `(obs_dim,)` → float32 actions of
    matching rank."""
    obs = _checked_obs(qir.ir, obs)
    x = np.atleast_2d(obs)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for layer in qir.layers:
            x = _apply_quantized_dense(layer, x) if isinstance(layer, QuantizedDense) else apply_pointwise(layer, x)
    return x[0] if obs.ndim == 1 else x


def quantize_input(layer: QuantizedDense, x: np.ndarray) -> np.ndarray:
    """The int8 codes the C code computes for a Dense input `x` `(n, in_features)`: round(clamp(x / a, ±127))."""
    v = (x.astype(np.float32) * layer.input_inverse_scale).astype(np.float32)
    v = np.clip(v, np.float32(-INT8_MAX), np.float32(INT8_MAX))
    return np.trunc(v + np.where(v < 0, np.float32(-0.5), np.float32(0.5)).astype(np.float32)).astype(np.int8)


def quantization_error(qir: QuantizedIR, test_obs: np.ndarray) -> QuantizationReport:
    """Max and mean |quantized − float| actions on `test_obs` `(n, obs_dim)` (held out from calibration)."""
    reference = evaluate(qir.ir, test_obs)
    error = np.abs(evaluate_quantized(qir, test_obs).astype(np.float64) - reference)
    scale = float(np.abs(reference).max()) if reference.size else 0.0
    max_error = float(error.max()) if error.size else 0.0
    return QuantizationReport(
        max_abs_error=max_error,
        mean_abs_error=float(error.mean()) if error.size else 0.0,
        output_scale=scale,
        relative_error=max_error / max(1.0, scale),
        samples=int(np.atleast_2d(test_obs).shape[0]),
    )


def error_bound(qir: QuantizedIR, obs: np.ndarray) -> np.ndarray:
    """(n, action_dim) worst-case |quantized − float| per sample, propagated layer by layer (float64).

    A Dense layer adds `|Ŵ − W|·|x| + |Ŵ|·δ'` to the error, where `δ'` is the incoming bound plus, for int8
    activations, the input rounding `max(a/2, |x| + δ − 127a)` (saturation included). Pointwise layers scale
    the bound by their Lipschitz constant. Float rounding of the arithmetic itself is not included.
    """
    x = np.atleast_2d(_checked_obs(qir.ir, obs)).astype(np.float32)
    delta = np.zeros(x.shape, np.float64)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for float_layer, layer in zip(qir.ir.layers, qir.layers, strict=True):
            if isinstance(layer, QuantizedDense) and isinstance(float_layer, Dense):
                delta = _dense_error(float_layer, layer, x, delta)
                x = (x @ float_layer.weight.T + float_layer.bias).astype(np.float32)
            elif not isinstance(layer, QuantizedDense):
                delta = _pointwise_error(layer, x, delta)
                x = apply_pointwise(layer, x)
    return delta


def _checked_obs(ir: PolicyIR, obs: np.ndarray) -> np.ndarray:
    obs = np.asarray(obs, dtype=np.float32)
    if obs.ndim not in (1, 2) or obs.shape[-1] != ir.obs_dim:
        raise ValueError(f"observations of shape {obs.shape}; expected (n, {ir.obs_dim})")
    return obs


def _dense_input_ranges(ir: PolicyIR, obs: np.ndarray) -> list[float]:
    """Largest |value| entering each Dense layer when the float policy runs on `obs`."""
    ranges = []
    x = np.atleast_2d(obs)
    with np.errstate(over="ignore", invalid="ignore"):
        for layer in ir.layers:
            if isinstance(layer, Dense):
                ranges.append(float(np.max(np.abs(x), initial=0.0)))
                x = (x @ layer.weight.T + layer.bias).astype(np.float32)
            else:
                assert not isinstance(layer, Gru)  # quantize refuses a policy with memory first
                x = apply_pointwise(layer, x)
    if not all(math.isfinite(r) for r in ranges):
        raise ValueError("calibration observations produce non-finite activations")
    return ranges


def _activation_scale(peak: float) -> float:
    """float32-representable scale mapping [-peak, peak] onto [-127, 127] (1/127 when the input is all zero)."""
    return float(np.float32(peak / INT8_MAX if peak > 0 else 1.0 / INT8_MAX))


def _round_half_away(values: np.ndarray) -> np.ndarray:
    return np.sign(values) * np.floor(np.abs(values) + 0.5)


def _apply_quantized_dense(layer: QuantizedDense, x: np.ndarray) -> np.ndarray:
    if layer.input_scale is None:
        acc = (x @ layer.weight.T.astype(np.float32)).astype(np.float32)
        return (acc * layer.weight_scale + layer.bias).astype(np.float32)
    codes = quantize_input(layer, x).astype(np.int64)
    acc = (codes @ layer.weight.T.astype(np.int64)).astype(np.float32)
    return (acc * layer.output_scale + layer.bias).astype(np.float32)


def _dense_error(float_layer: Dense, layer: QuantizedDense, x: np.ndarray, delta: np.ndarray) -> np.ndarray:
    weight = layer.dequantized_weight().astype(np.float64)
    magnitude = np.abs(x.astype(np.float64))
    if layer.input_scale is not None:
        scale = layer.input_scale
        delta = delta + np.maximum(scale / 2, magnitude + delta - INT8_MAX * scale)
    weight_error = np.abs(weight - float_layer.weight.astype(np.float64))
    return magnitude @ weight_error.T + delta @ np.abs(weight).T


def _pointwise_error(layer: Pointwise, x: np.ndarray, delta: np.ndarray) -> np.ndarray:
    if isinstance(layer, Clip):
        return delta
    if isinstance(layer, Activation):
        return delta * _LIPSCHITZ[layer.kind](abs(layer.alpha))
    return _elementwise_error(layer, x, delta)


_LIPSCHITZ = {
    "relu": lambda _: 1.0,
    "tanh": lambda _: 1.0,
    "sigmoid": lambda _: 0.25,
    "elu": lambda alpha: max(1.0, alpha),
    "leaky_relu": lambda alpha: max(1.0, alpha),
}


def _elementwise_error(layer: Elementwise, x: np.ndarray, delta: np.ndarray) -> np.ndarray:
    c = np.abs(layer.constant.astype(np.float64))
    if layer.op in ("add", "sub"):
        return delta
    if layer.op == "mul":
        return delta * c
    if not layer.constant_first:
        return delta / c
    # c / x: |c/x − c/(x+d)| ≤ |c|·d / (|x|·(|x| − d)) while |x| > d; unbounded otherwise.
    magnitude = np.abs(x.astype(np.float64))
    margin = magnitude - delta
    return np.where(margin > 0, c * delta / (magnitude * np.maximum(margin, 1e-300)), np.inf)
