"""An identified frame as a frame file (the YAML `robo_rl.sim.quadrotor.params.load_frame` reads), and the fit's
report."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from robo_rl.sysid.fit import Estimate, Identification

FITTED = ("thrust_curve", "motor_rise_time_constant", "motor_fall_time_constant", "inertia", "motor_model")


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return float(f"{value:.6g}")
    if isinstance(value, list | tuple):
        return [_rounded(v) for v in value]
    return value


def identified_fields(base: Mapping[str, Any], fit: Identification, name: str, log_source: str) -> dict[str, Any]:
    """`base`'s fields (in their order) with the fitted ones replaced, `name` and a `source` naming the log."""
    fields = {key: list(value) if isinstance(value, tuple) else value for key, value in base.items()}
    fields |= {key: _rounded(value) for key, value in fit.fields().items()}
    fields["name"] = name
    fields["source"] = f"robo-rl sysid from {log_source} on base frame {base.get('name', '?')}"
    return fields


def report_lines(fit: Identification, base: Mapping[str, Any]) -> list[str]:
    """The fit, parameter by parameter (value, standard error, the base's value), then the residuals."""

    def line(label: str, estimate: Estimate, was: float | None, unit: str) -> str:
        error = f"± {estimate.standard_error:.2g}" if math.isfinite(estimate.standard_error) else "± ?"
        widened = "" if estimate.widened_by == "statistics" else f"  [mostly {estimate.widened_by}]"
        base_text = "" if was is None else f"   (base {was:.5g})"
        return f"  {label:<26} {estimate.value:.5g} {error} {unit}{base_text}{widened}"

    curve, inertia = base["thrust_curve"], base["inertia"]
    out = [
        f"fitted {fit.seconds:.1f} s ({fit.intervals} intervals), thrust measured by the {fit.thrust_signal}, "
        f"mass kept at {base['mass']} kg (motion only tells thrust / mass):",
        *(line(f"thrust_curve c{i}", fit.thrust_curve[i], curve[i], "N") for i in range(3)),
        line("motor_rise_time_constant", fit.motor_rise_time_constant, base["motor_rise_time_constant"], "s"),
        line("motor_fall_time_constant", fit.motor_fall_time_constant, base["motor_fall_time_constant"], "s"),
        *(line(f"inertia I{a}{a}", fit.inertia[i], inertia[i], "kg m^2") for i, a in enumerate("xyz")),
    ]
    if fit.motor_idle_speed is not None:
        out.append(line("motor_idle_speed", fit.motor_idle_speed, None, "of full speed"))
    out += [*model_lines(fit), *residual_lines(fit)]
    return out


def model_lines(fit: Identification) -> list[str]:
    """Which model the fit chose and why, and what the standard errors hold."""
    others = [name for name in fit.candidates if name != _chosen_name(fit)]
    alike = f"; as good on this log: {', '.join(others)} (their values are in the errors)" if others else ""
    return [
        f"model: {_chosen_name(fit)} motors (the simplest of those the log cannot tell apart){alike}",
        "errors: the residuals' (widened for their correlation) with, in quadrature, half the difference of the "
        "log's halves, the change at half the sample rate and the spread over the models; [mostly X] names the "
        "largest where it is not the residuals'",
    ]


def _chosen_name(fit: Identification) -> str:
    return f"{fit.motor_model}{' with rotor aerodynamics' if fit.aerodynamics else ''}"


def residual_lines(fit: Identification) -> list[str]:
    x, y, z = fit.angular_acceleration_rms
    low, high = fit.command_range
    shares = ", ".join(
        f"{name} {100 * share:.0f} %" for name, share in zip(("collective", "x", "y", "z"), fit.slow_share, strict=True)
    )
    return [
        f"residuals: collective acceleration RMS {fit.acceleration_rms:.3g} m/s^2 (of {fit.acceleration_spread:.3g} "
        f"m/s^2 RMS variation); angular acceleration RMS x {x:.3g}, y {y:.3g}, z {z:.3g} rad/s^2",
        f"slow share of the residuals (0 when only sensor noise is left; what the model misses): {shares}",
        f"thrust curve measured over commands {low:.2f}..{high:.2f} (5th-95th percentile); extrapolated beyond",
    ]


def frame_text(fields: Mapping[str, Any], fit: Identification, base_name: str, log_source: str) -> str:
    """The frame file: a comment header (what was fitted from which log, kept from which base, the residuals),
    then the fields."""
    header = [
        f"Identified by `robo-rl sysid` from {log_source} ({fit.seconds:.1f} s), starting from frame {base_name}.",
        f"Fitted: {', '.join(FITTED)} (thrust measured by the {fit.thrust_signal}).",
        *model_lines(fit)[:1],
        f"Kept from {base_name}: everything else. The mass is not identifiable from motion (only thrust / mass is):",
        "the thrust curve is in N for this mass; weigh the vehicle and scale the curve with it if the mass is off.",
        *residual_lines(fit),
    ]
    body = yaml.safe_dump(dict(fields), sort_keys=False, default_flow_style=None, width=120)
    return "".join(f"# {line}\n" for line in header) + body


def write_frame(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
