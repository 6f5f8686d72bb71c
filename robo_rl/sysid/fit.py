"""Fit a quadrotor's thrust curve, motor time constants and inertia to a flight log (numpy only), with standard
errors one can trust.

The fit itself (`robo_rl.sysid.solve`) is least squares on the log's intervals. Only thrust / mass is identifiable
from motion, so the base frame's mass is kept and the curve is in N for that mass.

Every parameter must be identifiable from the log, else `NotIdentifiable` (one line naming it): an excitation
measure (how far the commands moved, how often they ran ahead of or behind the motors, how much torque each axis
saw) must reach its floor, and the parameter's standard error must stay within `MAX_RELATIVE_ERROR` of its value.

The standard errors: residuals are neither white nor from the exact model on a real vehicle or another simulator,
so the Gauss-Newton error (widened for the residuals' correlation) is only the first of five terms, added in
quadrature. The fit is run again

- on each half of the log: half the difference of the two is what a change over the flight (a battery sagging, a
  motor warming) or a model that does not hold everywhere moves the value by;
- on the log at half its sample rate: the change is the discretisation's error (sensor samples at interval ends,
  mid-interval rotations, filtered sensors) at twice its size or more;
- with the other models: the motors first order in the command (robo_rl's "command" model) or in rotor speed
  ("rotor_speed", falling at a rate proportional to the speed), each with and without rotor aerodynamics (thrust
  lost to climbing, rotor drag damping the rotation; nuisance terms). The simplest of the models the log cannot
  tell from the best is chosen (`_candidates`), and the largest difference to the others is what the choice of
  model is worth;

and the slow part of the collective residual, what the model's thrust misses for stretches of the flight (a battery
sagging), is a relative error of every torque and so of the inertia and the curve.

A parameter whose total is over the limit is refused naming the check that widened it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from robo_rl.sysid.airframe import Airframe
from robo_rl.sysid.flight_log import FlightLog, NotIdentifiable, check_flight
from robo_rl.sysid.solve import PARAMETERS, Solution, solve, structured_variance
from robo_rl.sysid.units import check_units
from robo_rl.sysid.views import Series, View, full_view, half_rate_view, halves, series

MIN_COMMAND_SPAN = 0.1
"""The motor commands' 5th to 95th percentile must span this much of [0, 1] to fit the thrust curve's shape."""
MIN_STEP_CONTENT = 0.005
"""RMS (over intervals and rotors) of how far the command ran ahead of the motor state (rise) or below it (fall):
below this the motors only ever followed slow commands and a time constant does not show."""
MIN_ANGULAR_EXCITATION = 2.0
"""RMS of an axis' modeled angular acceleration, rad/s^2: below it the axis was not excited enough to weigh its
inertia against the rotor torques."""
MAX_RELATIVE_ERROR = 0.1
"""A fitted parameter's standard error may be at most this fraction of its value."""
RESOLUTION = 1e-3
"""The statistical term is at least this fraction of the value: the fit's own arithmetic (finite differences, the
search's grid, a log's printed digits) is not better than 1 per mille."""
AERO_EVIDENCE = 10.0
"""A BIC difference over this is strong evidence (Kass and Raftery)."""
MISFIT_MARGIN = 3.0
"""How much larger than the best model's slow misfit another model's excess must be to tell the two apart: the
slow part measured is a floor (what of the misfit is as fast as the sensor noise hides in it)."""
CHECKS = {
    "statistics": "the residuals (Gauss-Newton, widened for their correlation)",
    "halves": "the two halves of the log disagreeing",
    "rate": "the fit changing at half the log's sample rate",
    "model": "the choice of model (command or rotor-speed motors, with or without rotor aerodynamics)",
    "misfit": "the thrust the model misses for stretches of the flight (the collective residual's slow part)",
}
"""What each term of a standard error measures, for the report and the refusals."""


@dataclass(frozen=True)
class Estimate:
    value: float
    standard_error: float
    """The four terms (see the module docstring) in quadrature; inf when the log does not inform the parameter."""
    terms: dict[str, float] = field(default_factory=dict)
    """The standard error's terms by CHECKS key."""

    @property
    def widened_by(self) -> str:
        """The largest term's CHECKS key."""
        return max(self.terms, key=lambda k: self.terms[k]) if self.terms else "statistics"


@dataclass(frozen=True)
class Identification:
    """A fit: the fitted frame fields with their standard errors, residuals and the log's excitation measures."""

    thrust_curve: tuple[Estimate, Estimate, Estimate]
    """c0 (N), c1 (N), c2 (N) of T = c0 + c1 u + c2 u^2 per rotor, for the base frame's mass."""
    motor_rise_time_constant: Estimate
    motor_fall_time_constant: Estimate
    inertia: tuple[Estimate, Estimate, Estimate]
    acceleration_rms: float
    """m/s^2: RMS residual of the collective (body z) acceleration fit."""
    acceleration_spread: float
    """m/s^2: RMS of the measured collective acceleration about its mean (what the fit explains)."""
    angular_acceleration_rms: tuple[float, float, float]
    """rad/s^2: RMS residual of the angular acceleration fit per body axis."""
    command_range: tuple[float, float]
    """The 5th and 95th percentile of the motor commands: the thrust curve is measured between them."""
    excitation: dict[str, float] = field(default_factory=dict)
    thrust_signal: str = "accelerometer"
    intervals: int = 0
    seconds: float = 0.0
    motor_model: str = "command"
    """The motor model the evidence chose (`robo_rl.sysid.solve.MOTOR_MODELS`)."""
    motor_idle_speed: Estimate | None = None
    """The rotor-speed model's speed at command 0 as a fraction of full speed; None for the command model."""
    aerodynamics: bool = False
    """Whether the chosen model has the rotor aerodynamic terms (nuisance parameters, not in the frame)."""
    candidates: tuple[str, ...] = ()
    """The models that explain the log about as well as the best one (`_candidates`); the simplest was chosen and
    the others' values make the standard errors' model term."""
    thrust_uncertainty: float = 0.0
    """The largest relative standard error of the curve's thrust over the commands flown (all four terms)."""
    slow_share: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    """The slow share of the collective and the x, y, z angular residuals' variance (`structured_variance`): about
    0 when the model explains all but the sensor noise; the whiteness check."""
    residual_correlation: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    """Lag-1 autocorrelation of the collective and the x, y, z angular residuals: about 0 (or -0.5 from a
    differenced signal) when the model explains all but white sensor noise."""

    def fields(self) -> dict[str, Any]:
        """The fitted frame-file fields."""
        out: dict[str, Any] = {
            "inertia": [e.value for e in self.inertia],
            "thrust_curve": [e.value for e in self.thrust_curve],
            "motor_rise_time_constant": self.motor_rise_time_constant.value,
            "motor_fall_time_constant": self.motor_fall_time_constant.value,
            "motor_model": self.motor_model,
            "motor_idle_speed": 1.0 if self.motor_idle_speed is None else self.motor_idle_speed.value,
        }
        return out


def identify(log: FlightLog, airframe: Airframe, thrust_signal: str = "auto") -> Identification:
    """Fit `log` (see the module docstring). `thrust_signal`: "accelerometer", "velocity" or "auto" (the
    accelerometer when the log has one). NotIdentifiable when a parameter cannot be identified."""
    check_flight(log)
    check_units(log, airframe)
    signal = _thrust_signal(log, thrust_signal)
    data = series(log)
    view = full_view(log, airframe, signal, data)
    kept = data.commands[view.first]
    low, high = (float(v) for v in np.percentile(kept, [5.0, 95.0]))
    if high - low < MIN_COMMAND_SPAN:
        raise NotIdentifiable(
            f"{log.source}: cannot identify thrust_curve: the motor commands span only {high - low:.3f} of [0, 1] "
            f"(5th-95th percentile {low:.3f}..{high:.3f}, need {MIN_COMMAND_SPAN}); fly collective steps or chirps"
        )
    plain = solve(data, view, airframe, aero=False)
    excitation = {"command_span": high - low, **_step_content(data, view, plain)}
    _refuse_unexcited(log, plain, excitation)
    models = _models(data, view, airframe, plain)
    candidates = _candidates(models, airframe.mass, signal)
    chosen = min(candidates, key=lambda fit: (fit.parameters, fit.bic(airframe.mass)))
    checks = _checks(log, airframe, signal, data, view, chosen, candidates)
    estimates = _estimates(chosen, checks)
    slow = _slow_shares(chosen, airframe.mass, signal)
    for index, series_index in ((3, 0), (4, 0), (5, 1), (6, 2), (7, 3)):
        _refuse_uncertain(log, _NAMES[index], estimates[index], slow[series_index])
    if chosen.motor == "rotor_speed":
        _refuse_uncertain(log, _NAMES[8], estimates[8], slow[0], absolute=True)
    worst = _refuse_uncertain_curve(log, chosen, checks, low, high, slow[0])
    residual = chosen.collective_residual
    return Identification(
        thrust_curve=(estimates[0], estimates[1], estimates[2]),
        motor_rise_time_constant=estimates[3],
        motor_fall_time_constant=estimates[4],
        inertia=(estimates[5], estimates[6], estimates[7]),
        acceleration_rms=float(np.sqrt(np.mean(residual**2)) / airframe.mass),
        acceleration_spread=float(np.std(view.thrust) / airframe.mass),
        angular_acceleration_rms=_triple(np.sqrt(np.mean(chosen.angular_residual**2, axis=0))),
        command_range=(low, high),
        excitation=excitation,
        thrust_signal=signal,
        intervals=len(view),
        seconds=log.seconds,
        motor_model=chosen.motor,
        motor_idle_speed=estimates[8] if chosen.motor == "rotor_speed" else None,
        aerodynamics=chosen.aero,
        candidates=tuple(_model_name(m) for m in candidates),
        thrust_uncertainty=worst,
        slow_share=(slow[0], slow[1], slow[2], slow[3]),
        residual_correlation=(
            _lag_one(residual),
            _lag_one(chosen.angular_residual[:, 0]),
            _lag_one(chosen.angular_residual[:, 1]),
            _lag_one(chosen.angular_residual[:, 2]),
        ),
    )


_NAMES = (
    "thrust_curve c0",
    "thrust_curve c1",
    "thrust_curve c2",
    "motor_rise_time_constant",
    "motor_fall_time_constant",
    "inertia Ixx",
    "inertia Iyy",
    "inertia Izz",
    "motor_idle_speed",
)


def _triple(values: np.ndarray) -> tuple[float, float, float]:
    return float(values[0]), float(values[1]), float(values[2])


def _lag_one(residual: np.ndarray) -> float:
    r = residual - residual.mean()
    denominator = float(r @ r)
    return float(r[:-1] @ r[1:]) / denominator if denominator > 0 and len(r) > 2 else 0.0


def _thrust_signal(log: FlightLog, wanted: str) -> str:
    if wanted == "auto":
        return "accelerometer" if log.specific_force is not None else "velocity"
    if wanted == "accelerometer" and log.specific_force is None:
        raise NotIdentifiable(f"{log.source}: has no accelerometer; measure thrust from the velocity instead")
    if wanted not in ("accelerometer", "velocity"):
        raise ValueError(f"thrust signal {wanted!r}: use accelerometer, velocity or auto")
    return wanted


def _step_content(data: Series, view: View, fit: Solution) -> dict[str, float]:
    lead = data.commands[view.first] - fit.means[0]
    return {
        "rise_content": float(np.sqrt(np.mean(np.clip(lead, 0, None) ** 2))),
        "fall_content": float(np.sqrt(np.mean(np.clip(-lead, 0, None) ** 2))),
    }


def _refuse_unexcited(log: FlightLog, fit: Solution, excitation: dict[str, float]) -> None:
    for name, key in (("motor_rise_time_constant", "rise_content"), ("motor_fall_time_constant", "fall_content")):
        if excitation[key] < MIN_STEP_CONTENT:
            way = "up faster than the motors spin up" if key == "rise_content" else "down faster than they spin down"
            raise NotIdentifiable(
                f"{log.source}: cannot identify {name}: the commands never step {way} "
                f"({key} {excitation[key]:.4f} < {MIN_STEP_CONTENT}); fly command steps both ways"
            )
    for axis, name in enumerate("xyz"):
        gain = fit.gains[axis]
        moved = float(np.sqrt(np.mean((fit.net_torque[:, axis] * gain) ** 2))) if gain > 0 else 0.0
        excitation[f"angular_{name}"] = moved
        if moved < MIN_ANGULAR_EXCITATION:
            raise NotIdentifiable(
                f"{log.source}: cannot identify inertia I{name}{name}: the rotors' torque about body {name} moved it "
                f"by {moved:.2f} rad/s^2 RMS (need {MIN_ANGULAR_EXCITATION}); fly "
                f"{('roll', 'pitch', 'yaw')[axis]} doublets"
            )


def _models(data: Series, view: View, airframe: Airframe, plain: Solution) -> list[Solution]:
    """The four candidate models: the command or the rotor-speed motor, each with and without rotor aerodynamics."""
    aero = solve(data, view, airframe, aero=True, start=plain.start)
    speed = solve(data, view, airframe, aero=False, motor="rotor_speed", start=plain.start)
    speed_aero = min(
        (solve(data, view, airframe, aero=True, motor="rotor_speed", start=s) for s in (speed.start, _nested(aero))),
        key=lambda fit: float(fit.collective_residual @ fit.collective_residual),
    )
    return [plain, aero, speed, speed_aero]


def _nested(fit: Solution) -> tuple[float, float, float]:
    """The command model's constants as a rotor-speed start a hair below idle 1 (1 would restart the wide search):
    the rotor-speed model holds the command model, so it must fit at least as well."""
    rise, fall, _ = fit.start
    return rise, fall, 0.999


def _model_name(fit: Solution) -> str:
    return f"{fit.motor}{' with rotor aerodynamics' if fit.aero else ''}"


def _candidates(models: list[Solution], mass: float, signal: str) -> list[Solution]:
    """The models the log cannot tell from the best (lowest BIC) one. A model is told apart when, in one of the four
    residual series, its excess over the best is both significant against the noise (BIC on the effective sample
    count, by more than AERO_EVIDENCE) and larger than MISFIT_MARGIN times the slow misfit the best model itself
    leaves (`structured_variance`): a model that only closes part of a gap that neither explains is no better."""
    best = min(models, key=lambda fit: fit.bic(mass))
    noise = [0.5 if signal == "accelerometer" else -0.5, -0.5, -0.5, -0.5]
    floors = [structured_variance(r, c) for r, c in zip(best.series(mass), noise, strict=True)]
    out = []
    for fit in models:
        told = fit.bic(mass) - best.bic(mass) > AERO_EVIDENCE and any(
            float(np.mean(r**2)) - float(np.mean(b**2)) > MISFIT_MARGIN * floor
            for r, b, floor in zip(fit.series(mass), best.series(mass), floors, strict=True)
        )
        if not told:
            out.append(fit)
    return out


@dataclass(frozen=True)
class _Checks:
    """The check fits: how far each moves each parameter, and the thrust the curve predicts."""

    deviations: dict[str, np.ndarray]
    """CHECKS key (but statistics) -> (9,) how far that check moves each parameter (inf: it could not tell)."""
    curve_deviations: dict[str, np.ndarray]
    """The same for the thrust on the grid of commands flown: key -> (U,) N."""


def _checks(
    log: FlightLog,
    airframe: Airframe,
    signal: str,
    data: Series,
    view: View,
    chosen: Solution,
    candidates: list[Solution],
) -> _Checks:
    check = lambda v: solve(data, v, airframe, chosen.aero, chosen.motor, chosen.start)  # noqa: E731
    early, late = (check(half) for half in halves(view))
    coarse = check(half_rate_view(log, airframe, signal, data))
    u = _grid(data, view)
    thrust = lambda fit: _thrust(fit.values[:3], u)  # noqa: E731
    spread = lambda f, among: np.max([np.abs(f(m) - f(chosen)) for m in among], axis=0)  # noqa: E731
    model_values = spread(lambda fit: fit.values, candidates)
    model_values[8] = spread(lambda fit: fit.values, [m for m in candidates if m.motor == chosen.motor])[8]
    misfit = _thrust_misfit(chosen, view, airframe.mass, signal)
    scaled = np.zeros(len(chosen.values))
    scaled[[0, 1, 2, 5, 6, 7]] = misfit * np.abs(chosen.values[[0, 1, 2, 5, 6, 7]])
    return _Checks(
        deviations={
            "halves": np.abs(early.values - late.values) / 2,
            "rate": np.abs(coarse.values - chosen.values),
            "model": model_values,
            "misfit": scaled,
        },
        curve_deviations={
            "halves": np.abs(thrust(early) - thrust(late)) / 2,
            "rate": np.abs(thrust(coarse) - thrust(chosen)),
            "model": spread(thrust, candidates),
            "misfit": misfit * np.abs(thrust(chosen)),
        },
    )


def _thrust_misfit(chosen: Solution, view: View, mass: float, signal: str) -> float:
    """The slow part of the collective residual (`structured_variance`) as a fraction of the mean thrust: how far
    the thrust the model gives is off for stretches of the flight. Every torque, and so every inertia, is off by
    as much."""
    noise = 0.5 if signal == "accelerometer" else -0.5
    slow = math.sqrt(structured_variance(chosen.collective_residual, noise))
    return slow / max(abs(float(np.mean(view.thrust))), 1e-300)


def _grid(data: Series, view: View) -> np.ndarray:
    low, high = np.percentile(data.commands[view.first], [5.0, 95.0])
    return np.linspace(low, high, 11)


def _thrust(curve: np.ndarray, u: np.ndarray) -> np.ndarray:
    return curve[0] + curve[1] * u + curve[2] * u * u


def _estimates(chosen: Solution, checks: _Checks) -> list[Estimate]:
    out = []
    for i in range(len(PARAMETERS)):
        terms = {"statistics": max(float(chosen.errors[i]), RESOLUTION * abs(float(chosen.values[i])))}
        terms |= {key: float(values[i]) for key, values in checks.deviations.items()}
        terms = {key: value if math.isfinite(value) else math.inf for key, value in terms.items()}
        total = math.sqrt(sum(v * v for v in terms.values())) if all(map(math.isfinite, terms.values())) else math.inf
        out.append(Estimate(float(chosen.values[i]), total, terms))
    return out


SLOW_SHARE = 0.25
"""When more than this share of a residual's variance is slow (`structured_variance`), a wide statistical error is
the model missing something rather than too little excitation."""


def _slow_shares(fit: Solution, mass: float, signal: str) -> list[float]:
    """The slow share of each residual series' variance (collective, x, y, z)."""
    noise = [0.5 if signal == "accelerometer" else -0.5, -0.5, -0.5, -0.5]
    out = []
    for residual, correlation in zip(fit.series(mass), noise, strict=True):
        total = float(np.var(residual))
        out.append(structured_variance(residual, correlation) / total if total > 0 else 0.0)
    return out


def _hint(reason: str, slow: float) -> str:
    if reason == "statistics" and slow <= SLOW_SHARE:
        return "the log does not excite it enough"
    return (
        f"the model misses something this log shows ({100 * slow:.0f} % of the residual is slow, not sensor noise; "
        "a sagging battery, a changing payload, wind or a loose part); fly the excitation on a charged battery, "
        "in still air"
    )


def _refuse_uncertain(log: FlightLog, name: str, estimate: Estimate, slow: float = 0.0, absolute: bool = False) -> None:
    """`absolute`: a fraction (the idle speed), judged by its error itself rather than relative to its value;
    `slow`: the slow share of the residual that measures it (`_slow_shares`), for the hint."""
    relative = estimate.standard_error / abs(estimate.value) if estimate.value else math.inf
    if absolute:
        relative = estimate.standard_error
    if not relative <= MAX_RELATIVE_ERROR:
        reason = estimate.widened_by
        hint = _hint(reason, slow)
        raise NotIdentifiable(
            f"{log.source}: cannot identify {name}: fitted {estimate.value:.4g} with a standard error of "
            f"{100 * relative:.0f} % (at most {100 * MAX_RELATIVE_ERROR:.0f} %), mostly from {CHECKS[reason]}; {hint}"
        )


def _refuse_uncertain_curve(
    log: FlightLog, chosen: Solution, checks: _Checks, low: float, high: float, slow: float
) -> float:
    """The curve's coefficients are correlated, so judge the thrust it predicts over the commands flown: its
    standard error there (all four terms) against the thrust. Returns the worst relative error."""
    u = np.linspace(low, high, 11)
    basis = np.stack([np.ones_like(u), u, u * u], axis=1)
    thrust = basis @ chosen.values[:3]
    with np.errstate(invalid="ignore"):
        statistics = np.sqrt(np.abs(np.einsum("up,pq,uq->u", basis, chosen.curve_covariance, basis)))
    statistics = np.maximum(np.where(np.isfinite(statistics), statistics, np.inf), RESOLUTION * np.abs(thrust))
    terms = {"statistics": statistics, **checks.curve_deviations}
    total = np.sqrt(sum(t**2 for t in terms.values()))
    relative = total / np.maximum(np.abs(thrust), 1e-12)
    worst = float(np.max(relative))
    if not worst <= MAX_RELATIVE_ERROR or not np.all(thrust > 0):
        at = int(np.argmax(relative))
        reason = max(terms, key=lambda key: float(terms[key][at]))
        raise NotIdentifiable(
            f"{log.source}: cannot identify thrust_curve: over the commands flown ({low:.2f}..{high:.2f}) its thrust "
            f"is uncertain by up to {100 * worst:.0f} % (at most {100 * MAX_RELATIVE_ERROR:.0f} %), mostly from "
            f"{CHECKS[reason]}; {_hint(reason, slow)}"
        )
    return worst
