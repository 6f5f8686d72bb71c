"""Fit a quadrotor's thrust curve, motor time constants and inertia to a flight log (numpy only).

Two least-squares problems, on the log's intervals (sample k to k+1, commands held; `robo_rl.sysid.airframe` has
the model):

1. Collective thrust. The thrust measured along body z, m f_z (f: the accelerometer's specific force, or the
   velocity's derivative plus gravity), against 4 c0 + c1 sum_i mean(u_i) + c2 sum_i mean(u_i^2), where the motor
   states u_i follow the commands with the rise/fall time constants. For given constants the curve is linear least
   squares; the two constants are found by a grid search in log space, refined by zooming in. Only thrust / mass
   is identifiable from motion, so the base frame's mass is kept and the curve is in N for that mass.
2. Inertia, per axis: the measured angular acceleration against (tau_i - (w x J w)_i) / J_i, tau from the fitted
   thrusts of the four rotors, the frame's rotor positions and torque_to_thrust. The gyroscopic term uses the
   current inertia estimate (the base's first; three passes).

Every parameter must be identifiable from the log, else `NotIdentifiable` (one line naming it): an excitation
measure (how far the commands moved, how often they ran ahead of or behind the motors, how much torque each axis
saw) must reach its floor, and the parameter's standard error (Gauss-Newton: the residual variance times the
inverse information matrix, a rough figure since the residuals are not white) must stay within
`MAX_RELATIVE_ERROR` of its value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from robo_rl.sysid.airframe import Airframe, motor_response, quaternion_matrices
from robo_rl.sysid.flight_log import FlightLog, NotIdentifiable, check_flight, interval_mask
from robo_rl.sysid.units import check_units

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
TAU_RANGE = (0.005, 2.0)
"""s: the motor time constants searched."""
INERTIA_PASSES = 3


@dataclass(frozen=True)
class Estimate:
    value: float
    standard_error: float
    """Rough (Gauss-Newton, residuals taken as white): inf when the log does not inform the parameter."""


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

    def fields(self) -> dict[str, Any]:
        """The fitted frame-file fields."""
        return {
            "inertia": [e.value for e in self.inertia],
            "thrust_curve": [e.value for e in self.thrust_curve],
            "motor_rise_time_constant": self.motor_rise_time_constant.value,
            "motor_fall_time_constant": self.motor_fall_time_constant.value,
        }


@dataclass(frozen=True)
class _Intervals:
    """The log differenced over its intervals (K kept)."""

    commands: np.ndarray
    """(N, 4) all samples (the motor model runs through gaps)."""
    dt: np.ndarray
    """(N-1,)"""
    keep: np.ndarray
    """(N-1,) bool"""
    thrust: np.ndarray
    """(K,) N: measured collective thrust."""
    angular_acceleration: np.ndarray
    """(K, 3) rad/s^2"""
    rates: np.ndarray
    """(K, 3) rad/s: interval midpoints."""


def identify(log: FlightLog, airframe: Airframe, thrust_signal: str = "auto") -> Identification:
    """Fit `log` (see the module docstring). `thrust_signal`: "accelerometer", "velocity" or "auto" (the
    accelerometer when the log has one). NotIdentifiable when a parameter cannot be identified."""
    check_flight(log)
    check_units(log, airframe)
    signal = _thrust_signal(log, thrust_signal)
    data = _intervals(log, airframe, signal)
    kept = data.commands[:-1][data.keep]
    low, high = (float(v) for v in np.percentile(kept, [5.0, 95.0]))
    if high - low < MIN_COMMAND_SPAN:
        raise NotIdentifiable(
            f"{log.source}: cannot identify thrust_curve: the motor commands span only {high - low:.3f} of [0, 1] "
            f"(5th-95th percentile {low:.3f}..{high:.3f}, need {MIN_COMMAND_SPAN}); fly collective steps or chirps"
        )
    rise, fall = _search_time_constants(data)
    curve, covariance, residual, means = _curve_and_errors(data, rise, fall)
    errors = np.sqrt(np.abs(np.diag(covariance)))
    excitation = {"command_span": high - low, **_step_content(data, means)}
    for name, key in (("motor_rise_time_constant", "rise_content"), ("motor_fall_time_constant", "fall_content")):
        if excitation[key] < MIN_STEP_CONTENT:
            way = "up faster than the motors spin up" if key == "rise_content" else "down faster than they spin down"
            raise NotIdentifiable(
                f"{log.source}: cannot identify {name}: the commands never step {way} "
                f"({key} {excitation[key]:.4f} < {MIN_STEP_CONTENT}); fly command steps both ways"
            )
    taus = (Estimate(rise, errors[3]), Estimate(fall, errors[4]))
    thrust_curve = (Estimate(curve[0], errors[0]), Estimate(curve[1], errors[1]), Estimate(curve[2], errors[2]))
    _refuse_uncertain(log, "motor_rise_time_constant", taus[0])
    _refuse_uncertain(log, "motor_fall_time_constant", taus[1])
    _refuse_uncertain_curve(log, curve, covariance[:3, :3], low, high)
    inertia, angular_rms, angular_excitation = _fit_inertia(data, airframe, curve, means)
    for axis, name in enumerate("xyz"):
        excitation[f"angular_{name}"] = angular_excitation[axis]
        if angular_excitation[axis] < MIN_ANGULAR_EXCITATION:
            raise NotIdentifiable(
                f"{log.source}: cannot identify inertia I{name}{name}: the rotors' torque about body {name} moved it "
                f"by {angular_excitation[axis]:.2f} rad/s^2 RMS (need {MIN_ANGULAR_EXCITATION}); fly "
                f"{('roll', 'pitch', 'yaw')[axis]} doublets"
            )
        _refuse_uncertain(log, f"inertia I{name}{name}", inertia[axis])
    return Identification(
        thrust_curve=thrust_curve,
        motor_rise_time_constant=taus[0],
        motor_fall_time_constant=taus[1],
        inertia=inertia,
        acceleration_rms=float(np.sqrt(np.mean(residual**2)) / airframe.mass),
        acceleration_spread=float(np.std(data.thrust) / airframe.mass),
        angular_acceleration_rms=angular_rms,
        command_range=(low, high),
        excitation=excitation,
        thrust_signal=signal,
        intervals=int(data.keep.sum()),
        seconds=log.seconds,
    )


def _thrust_signal(log: FlightLog, wanted: str) -> str:
    if wanted == "auto":
        return "accelerometer" if log.specific_force is not None else "velocity"
    if wanted == "accelerometer" and log.specific_force is None:
        raise NotIdentifiable(f"{log.source}: has no accelerometer; measure thrust from the velocity instead")
    if wanted not in ("accelerometer", "velocity"):
        raise ValueError(f"thrust signal {wanted!r}: use accelerometer, velocity or auto")
    return wanted


def _intervals(log: FlightLog, airframe: Airframe, signal: str) -> _Intervals:
    dt = np.diff(log.time)
    keep = interval_mask(log.time)
    rotations = quaternion_matrices(log.quaternion)
    body_z = rotations[:, :, 2]
    mid_z = body_z[:-1] + body_z[1:]
    mid_z /= np.linalg.norm(mid_z, axis=1, keepdims=True)
    mid_velocity = 0.5 * (log.velocity[:-1] + log.velocity[1:])
    drag = np.einsum("ki,ki->k", mid_z, airframe.linear_drag * mid_velocity)
    if signal == "accelerometer":
        assert log.specific_force is not None
        specific = 0.5 * (log.specific_force[:-1, 2] + log.specific_force[1:, 2])
    else:
        acceleration = np.diff(log.velocity, axis=0) / dt[:, None]
        acceleration[:, 2] += airframe.gravity
        specific = np.einsum("ki,ki->k", mid_z, acceleration)
    rates = 0.5 * (log.body_rates[:-1] + log.body_rates[1:])
    return _Intervals(
        commands=np.clip(log.commands, 0.0, 1.0),
        dt=dt,
        keep=keep,
        thrust=(airframe.mass * specific + drag)[keep],
        angular_acceleration=(np.diff(log.body_rates, axis=0) / dt[:, None])[keep],
        rates=rates[keep],
    )


def _regressors(data: _Intervals, rise: np.ndarray, fall: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(C, K, 3) collective-thrust regressors [4, sum mean u, sum mean u^2] and the (C, K, 4) per-rotor means of u
    (the last with u^2 stacked behind: (2, C, K, 4))."""
    mean_u, mean_u2 = motor_response(data.commands, data.dt, rise, fall)
    mean_u, mean_u2 = mean_u[:, data.keep], mean_u2[:, data.keep]
    ones = np.full(mean_u.shape[:2], 4.0)
    return np.stack([ones, mean_u.sum(axis=2), mean_u2.sum(axis=2)], axis=-1), np.stack([mean_u, mean_u2])


def _residual_sums(data: _Intervals, rise: np.ndarray, fall: np.ndarray) -> np.ndarray:
    """(C,) sum of squared collective-thrust residuals for each time-constant pair (curve fitted for each)."""
    chunk = max(1, int(4e6 // (len(data.dt) * 4)))
    out = []
    for start in range(0, len(rise), chunk):
        x, _ = _regressors(data, rise[start : start + chunk], fall[start : start + chunk])
        scale = np.sqrt((x**2).sum(axis=1, keepdims=True))
        xs = x / scale
        gram = np.einsum("ckp,ckq->cpq", xs, xs)
        rhs = np.einsum("ckp,k->cp", xs, data.thrust)
        coef = np.linalg.solve(gram + 1e-12 * np.eye(3), rhs[..., None])[..., 0]
        residual = data.thrust - np.einsum("ckp,cp->ck", xs, coef)
        out.append((residual**2).sum(axis=1))
    return np.concatenate(out)


def _search_time_constants(data: _Intervals) -> tuple[float, float]:
    """The (rise, fall) pair with the least residual: a 16 x 16 grid in log space, then four 7 x 7 zooms."""
    low, high = np.log(TAU_RANGE[0]), np.log(TAU_RANGE[1])
    step = (high - low) / 15
    centre = np.array([(low + high) / 2, (low + high) / 2])
    points = np.linspace(low, high, 16)
    grid_r, grid_f = np.meshgrid(points, points, indexing="ij")
    for _ in range(5):
        rise, fall = grid_r.ravel(), grid_f.ravel()
        best = int(np.argmin(_residual_sums(data, np.exp(rise), np.exp(fall))))
        centre = np.array([rise[best], fall[best]])
        offsets = np.linspace(-step, step, 7)
        step /= 3.0
        grid_r, grid_f = np.meshgrid(
            np.clip(centre[0] + offsets, low, high), np.clip(centre[1] + offsets, low, high), indexing="ij"
        )
    return float(np.exp(centre[0])), float(np.exp(centre[1]))


def _curve_and_errors(
    data: _Intervals, rise: float, fall: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The curve at (rise, fall), the covariance of (c0, c1, c2, rise, fall) (inf where the log does not inform
    them), the residuals and the per-rotor means (2, K, 4) of u and u^2."""
    h = 0.02
    rises = np.array([rise, rise * (1 + h), rise * (1 - h), rise, rise])
    falls = np.array([fall, fall, fall, fall * (1 + h), fall * (1 - h)])
    x, means = _regressors(data, rises, falls)
    scale = np.sqrt((x[0] ** 2).sum(axis=0))
    coef = np.linalg.lstsq(x[0] / scale, data.thrust, rcond=None)[0] / scale
    predicted = x @ coef
    residual = data.thrust - predicted[0]
    jacobian = np.column_stack(
        [
            x[0],
            (predicted[1] - predicted[2]) / (2 * h * rise),
            (predicted[3] - predicted[4]) / (2 * h * fall),
        ]
    )
    dof = max(1, len(residual) - 5)
    variance = float(residual @ residual) / dof
    norms = np.sqrt((jacobian**2).sum(axis=0))
    uninformed = norms == 0
    norms[uninformed] = 1.0
    scaled = jacobian / norms
    information = scaled.T @ scaled
    eigen = np.linalg.eigvalsh(information)
    if eigen[0] <= 1e-12 * eigen[-1]:
        covariance = np.full((5, 5), np.inf)
    else:
        covariance = np.linalg.inv(information) * variance / np.outer(norms, norms)
    covariance[uninformed] = covariance[:, uninformed] = np.inf
    return coef, covariance, residual, means[:, 0]


def _step_content(data: _Intervals, means: np.ndarray) -> dict[str, float]:
    lead = data.commands[:-1][data.keep] - means[0]
    return {
        "rise_content": float(np.sqrt(np.mean(np.clip(lead, 0, None) ** 2))),
        "fall_content": float(np.sqrt(np.mean(np.clip(-lead, 0, None) ** 2))),
    }


def _refuse_uncertain(log: FlightLog, name: str, estimate: Estimate) -> None:
    relative = estimate.standard_error / abs(estimate.value) if estimate.value else np.inf
    if not relative <= MAX_RELATIVE_ERROR:
        raise NotIdentifiable(
            f"{log.source}: cannot identify {name}: fitted {estimate.value:.4g} with a standard error of "
            f"{100 * relative:.0f} % (at most {100 * MAX_RELATIVE_ERROR:.0f} %); the log does not excite it enough"
        )


def _refuse_uncertain_curve(log: FlightLog, curve: np.ndarray, covariance: np.ndarray, low: float, high: float) -> None:
    """The curve's coefficients are correlated, so judge the thrust it predicts over the commands flown: its
    standard error there against the thrust."""
    u = np.linspace(low, high, 11)
    basis = np.stack([np.ones_like(u), u, u * u], axis=1)
    thrust = basis @ curve
    with np.errstate(invalid="ignore"):
        spread = np.sqrt(np.abs(np.einsum("up,pq,uq->u", basis, covariance, basis)))
    spread = np.where(np.isfinite(spread), spread, np.inf)
    worst = float(np.max(spread / np.maximum(np.abs(thrust), 1e-12)))
    if not worst <= MAX_RELATIVE_ERROR or not np.all(thrust > 0):
        raise NotIdentifiable(
            f"{log.source}: cannot identify thrust_curve: over the commands flown ({low:.2f}..{high:.2f}) its thrust "
            f"is uncertain by up to {100 * worst:.0f} % (at most {100 * MAX_RELATIVE_ERROR:.0f} %)"
        )


def _fit_inertia(
    data: _Intervals, airframe: Airframe, curve: np.ndarray, means: np.ndarray
) -> tuple[tuple[Estimate, Estimate, Estimate], tuple[float, float, float], list[float]]:
    thrusts = curve[0] + curve[1] * means[0] + curve[2] * means[1]
    torque = thrusts @ airframe.torque_map.T
    rates, measured = data.rates, data.angular_acceleration
    inertia = airframe.inertia.copy()
    for _ in range(INERTIA_PASSES):
        net = torque - np.cross(rates, rates * inertia)
        gain = (net * measured).sum(axis=0) / np.maximum((net**2).sum(axis=0), 1e-300)
        inertia = np.where(gain > 0, 1.0 / np.where(gain > 0, gain, 1.0), np.inf)
    net = torque - np.cross(rates, rates * np.where(np.isfinite(inertia), inertia, airframe.inertia))
    residual = measured - net * gain
    dof = max(1, len(measured) - 1)
    gain_error = np.sqrt((residual**2).sum(axis=0) / dof / np.maximum((net**2).sum(axis=0), 1e-300))
    estimates = tuple(
        Estimate(float(inertia[i]), float(inertia[i] * gain_error[i] / gain[i]) if gain[i] > 0 else np.inf)
        for i in range(3)
    )
    excitation = [float(np.sqrt(np.mean((net[:, i] * gain[i]) ** 2))) if gain[i] > 0 else 0.0 for i in range(3)]
    rms = tuple(float(np.sqrt(np.mean(residual[:, i] ** 2))) for i in range(3))
    return (estimates[0], estimates[1], estimates[2]), (rms[0], rms[1], rms[2]), excitation
