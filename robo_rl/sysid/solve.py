"""One least-squares fit of the quadrotor model (`robo_rl.sysid.airframe`) to one view of a log
(`robo_rl.sysid.views`), with the standard errors its residuals give.

1. Collective thrust: the measured thrust against 4 c0 + c1 sum_i mean(u_i) + c2 sum_i mean(u_i^2) (+ the
   aerodynamic terms with `aero`), motor states u_i following the commands with the rise/fall time constants. For
   given constants the curve is linear least squares; the constants come from a grid search in log space, zoomed
   in, then Gauss-Newton (`refine`), or from Gauss-Newton alone from a starting point.
2. Inertia, per axis: the measured angular acceleration against (tau_i - (w x J w)_i) / J_i (+ the rotor drag's
   moment with `aero`), tau from the fitted rotor thrusts and the frame's geometry; three passes for the gyroscopic
   term.

`aero` adds what rotors do in moving air and robo_rl's model leaves out (`aero_columns`, `aero_torque_columns`):
rotor drag proportional to the rotor speed times the air's speed at the rotor, which takes thrust when climbing and
damps the rotation, and translational lift. Their coefficients are nuisance parameters, fitted and not reported.

The standard errors are Gauss-Newton's, widened for the residuals' correlation: with lag-1 autocorrelation rho the
effective number of samples is n (1 - rho) / (1 + rho).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from robo_rl.sysid.airframe import Airframe
from robo_rl.sysid.motor_response import motor_response
from robo_rl.sysid.views import Series, View

TAU_RANGE = (0.005, 2.0)
"""s: the motor time constants searched."""
INERTIA_PASSES = 3
PARAMETERS = ("c0", "c1", "c2", "rise", "fall", "Ixx", "Iyy", "Izz", "idle")
"""The fitted values' order; idle is 1 for the command model (a fall rate independent of the speed)."""


@dataclass(frozen=True)
class Solution:
    values: np.ndarray
    """(9,) c0, c1, c2 (N), rise, fall (s), Ixx, Iyy, Izz (kg m^2), idle (PARAMETERS)."""
    errors: np.ndarray
    """(9,) standard errors (inf: the view does not inform the parameter)."""
    curve_covariance: np.ndarray
    """(3, 3) of c0, c1, c2."""
    collective_residual: np.ndarray
    """(K,) N"""
    angular_residual: np.ndarray
    """(K, 3) rad/s^2"""
    means: np.ndarray
    """(2, K, 4) the rows' mean motor state u and u^2 per rotor."""
    net_torque: np.ndarray
    """(K, 3) the modeled angular acceleration times inertia (for the excitation measure)."""
    gains: np.ndarray
    """(3,) 1 / inertia."""
    parameters: int
    """How many parameters the fit had (with the nuisance ones), for comparing models."""
    motor: str = "command"
    aero: bool = False

    def series(self, mass: float) -> list[np.ndarray]:
        """The four residual series: collective (as m/s^2) and angular x, y, z (rad/s^2)."""
        return [self.collective_residual / mass, *self.angular_residual.T]

    @property
    def start(self) -> tuple[float, float, float]:
        """(rise, fall, idle): where a check fit of the same model searches from."""
        return float(self.values[3]), float(self.values[4]), float(self.values[8])

    def bic(self, mass: float) -> float:
        """Bayesian information criterion of the collective and angular fits together (Gaussian residuals, each of
        the four series with its own variance), each series counting its effective samples n / inflation^2."""
        series = [self.collective_residual / mass, *self.angular_residual.T]
        counts = [len(r) / _inflation(r) ** 2 for r in series]
        total = sum(n * math.log(max(float(np.mean(r**2)), 1e-300)) for n, r in zip(counts, series, strict=True))
        return total + self.parameters * math.log(sum(counts))


def _rows(values: np.ndarray, view: View) -> np.ndarray:
    """(C, N-1, ...) per interval -> (C, K, ...) per row of the view."""
    if view.first is view.second:
        return values[:, view.first]
    return 0.5 * (values[:, view.first] + values[:, view.second])


def regressors(
    data: Series, view: View, rise: np.ndarray, fall: np.ndarray, aero: bool, idle: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(C, K, P) collective regressors [4, sum mean u, sum mean u^2 (, the aerodynamic two: `aero_columns`)] and
    the (2, C, K, 4) row means; `idle` (C,): the rotor-speed motor model (`motor_response`)."""
    mean_u, mean_u2 = motor_response(data.commands, data.dt, rise, fall, idle)
    mean_u, mean_u2 = _rows(mean_u, view), _rows(mean_u2, view)
    columns = [np.full(mean_u.shape[:2], 4.0), mean_u.sum(axis=2), mean_u2.sum(axis=2)]
    if aero:
        columns += aero_columns(view, mean_u)
    return np.stack(columns, axis=-1), np.stack([mean_u, mean_u2])


def aero_columns(view: View, speed: np.ndarray) -> list[np.ndarray]:
    """The collective's aerodynamic regressors for motor states `speed` (C, K, 4), taken as the rotor speeds:
    sum_i u_i a_z,i (rotor drag along the shaft and induced inflow: thrust lost to the air a_z through the rotor)
    and sum_i (a_x,i^2 + a_y,i^2) (translational lift), a_i the air at rotor i. The standard rotor-drag model (drag
    proportional to the rotor speed times the air's speed at the rotor), as RotorPy and the drone-racing literature
    write it."""
    axial = (speed * view.air[None, :, :, 2]).sum(axis=2)
    lift = np.broadcast_to((view.air[:, :, 0] ** 2 + view.air[:, :, 1] ** 2).sum(axis=1), speed.shape[:2])
    return [axial, lift]


def aero_torque_columns(view: View, speed: np.ndarray, airframe: Airframe) -> list[np.ndarray]:
    """Per body axis, the (K, n) regressors of the aerodynamic moments for motor states `speed` (K, 4): about x and
    y the shaft drag u_i a_z,i and the translational lift a_x,i^2 + a_y,i^2 at the rotors' arms (y_i, -x_i), about z
    the in-plane drag u_i (x_i a_y,i - y_i a_x,i)."""
    x, y = airframe.rotor_xy[:, 0], airframe.rotor_xy[:, 1]
    axial = speed * view.air[:, :, 2]
    lift = view.air[:, :, 0] ** 2 + view.air[:, :, 1] ** 2
    in_plane = speed * (x * view.air[:, :, 1] - y * view.air[:, :, 0])
    return [
        np.column_stack([axial @ y, lift @ y]),
        np.column_stack([axial @ -x, lift @ -x]),
        in_plane.sum(axis=1, keepdims=True),
    ]


def residual_sums(
    data: Series, view: View, rise: np.ndarray, fall: np.ndarray, aero: bool, idle: np.ndarray | None = None
) -> np.ndarray:
    """(C,) sum of squared collective residuals for each motor model (the curve fitted for each)."""
    chunk = max(1, int(4e6 // (len(data.dt) * 4)))
    out = []
    for start in range(0, len(rise), chunk):
        part = slice(start, start + chunk)
        x, _ = regressors(data, view, rise[part], fall[part], aero, None if idle is None else idle[part])
        scale = np.sqrt((x**2).sum(axis=1, keepdims=True))
        scale[scale == 0] = 1.0
        xs = x / scale
        gram = np.einsum("ckp,ckq->cpq", xs, xs)
        rhs = np.einsum("ckp,k->cp", xs, view.thrust)
        coef = np.linalg.solve(gram + 1e-12 * np.eye(x.shape[-1]), rhs[..., None])[..., 0]
        residual = view.thrust - np.einsum("ckp,cp->ck", xs, coef)
        out.append((residual**2).sum(axis=1))
    return np.concatenate(out)


def search_time_constants(data: Series, view: View, aero: bool) -> tuple[float, float]:
    """The (rise, fall) pair with the least residual on a 16 x 16 grid in log space over TAU_RANGE, then three
    7 x 7 zooms (to about 1 %); `refine` takes it from there."""
    low, high = math.log(TAU_RANGE[0]), math.log(TAU_RANGE[1])
    step = (high - low) / 15
    points = np.linspace(low, high, 16)
    grid_r, grid_f = np.meshgrid(points, points, indexing="ij")
    centre = (0.0, 0.0)
    for _ in range(4):
        rise, fall = grid_r.ravel(), grid_f.ravel()
        best = int(np.argmin(residual_sums(data, view, np.exp(rise), np.exp(fall), aero)))
        centre = (float(rise[best]), float(fall[best]))
        offsets = np.linspace(-step, step, 7)
        step /= 3.0
        grid_r, grid_f = np.meshgrid(
            np.clip(centre[0] + offsets, low, high), np.clip(centre[1] + offsets, low, high), indexing="ij"
        )
    return math.exp(centre[0]), math.exp(centre[1])


def rotor_speed_start(data: Series, view: View, aero: bool, rise: float, fall: float) -> tuple[float, float, float]:
    """(rise, fall, idle) to refine the rotor-speed model from, given the command model's constants: idle on a grid
    of 0..1, each with the full-speed fall constant that keeps the command model's fall rate at the mean command
    (and that times 0.7 and 1.4), the best of the 33."""
    mean = float(np.mean(data.commands[view.first]))
    idle = np.repeat(np.linspace(0.0, 1.0, 11), 3)
    falls = fall * (idle + (1.0 - idle) * mean) * np.tile([0.7, 1.0, 1.4], 11)
    rises = np.full_like(idle, rise)
    best = int(np.argmin(residual_sums(data, view, rises, falls, aero, idle)))
    return rise, float(falls[best]), float(idle[best])


SMOOTHING = 10
"""Samples in the moving average that separates a residual's slow (model) part from its sensor noise."""


def structured_variance(residual: np.ndarray, noise_correlation: float) -> float:
    """The variance of the residual's slow part, what a model misses (rather than sensor noise): from the variance
    of its SMOOTHING-sample moving average, less what noise with lag-1 correlation `noise_correlation` (0.5 for
    an accelerometer averaged over interval ends, -0.5 for a differenced signal) leaves in such an average."""
    r = residual - residual.mean()
    total = float(r @ r) / max(1, len(r))
    if len(r) <= 2 * SMOOTHING or total <= 0:
        return 0.0
    w = SMOOTHING
    smooth = np.convolve(r, np.full(w, 1.0 / w), mode="valid")
    kept = (1.0 + 2.0 * noise_correlation * (w - 1) / w) / w
    slow = (float(smooth @ smooth) / len(smooth) - kept * total) / (1.0 - kept)
    return min(max(slow, 0.0), total)


def _inflation(residual: np.ndarray) -> float:
    """sqrt((1 + rho) / (1 - rho)) for the residuals' lag-1 autocorrelation rho > 0 (1 otherwise)."""
    r = residual - residual.mean()
    denominator = float(r @ r)
    if len(r) < 3 or denominator <= 0:
        return 1.0
    rho = min(float(r[:-1] @ r[1:]) / denominator, 0.98)
    return math.sqrt((1 + rho) / (1 - rho)) if rho > 0 else 1.0


def _linearize(
    data: Series, view: View, taus: tuple[float, ...], aero: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """At the motor parameters `taus` (rise, fall[, idle]): the curve's (and nuisance) coefficients by linear least
    squares, the Jacobian of the predicted thrust in those coefficients and `taus` (central differences), the
    residuals and the row means."""
    h = 0.02
    motor = np.array(taus, dtype=np.float64)
    deltas = [h * motor[i] if i < 2 else h for i in range(len(motor))]  # relative for the constants
    candidates = [motor]
    for i, delta in enumerate(deltas):
        for sign in (1.0, -1.0):
            shifted = motor.copy()
            shifted[i] += sign * delta
            candidates.append(shifted)
    grid = np.array(candidates)
    x, means = regressors(data, view, grid[:, 0], grid[:, 1], aero, grid[:, 2] if len(motor) == 3 else None)
    scale = np.sqrt((x[0] ** 2).sum(axis=0))
    scale[scale == 0] = 1.0
    coef = np.linalg.lstsq(x[0] / scale, view.thrust, rcond=None)[0] / scale
    predicted = x @ coef
    derivatives = [(predicted[1 + 2 * i] - predicted[2 + 2 * i]) / (2 * d) for i, d in enumerate(deltas)]
    return coef, np.column_stack([x[0], *derivatives]), view.thrust - predicted[0], means[:, 0]


def refine(data: Series, view: View, taus: tuple[float, ...], aero: bool, iterations: int = 6) -> tuple[float, ...]:
    """Gauss-Newton on the motor parameters from `taus`, steps limited to 30 % (0.15 for idle), halved when they
    do not lower the residual."""
    current = np.array(taus, dtype=np.float64)
    coef, jacobian, residual, _ = _linearize(data, view, tuple(current), aero)
    cost = float(residual @ residual)
    for _ in range(iterations):
        norms = np.sqrt((jacobian**2).sum(axis=0))
        norms[norms == 0] = 1.0
        step = np.linalg.lstsq(jacobian / norms, residual, rcond=None)[0] / norms
        step = step[len(coef) :]
        limit = np.array([0.3 * current[0], 0.3 * current[1], 0.15][: len(current)])
        step = np.clip(step, -limit, limit)
        for _ in range(4):
            trial = current + step
            if len(trial) == 3:
                trial[2] = min(max(trial[2], 0.0), 1.0)
            trial[:2] = np.clip(trial[:2], *TAU_RANGE)
            new_coef, new_jacobian, new_residual, _ = _linearize(data, view, tuple(trial), aero)
            if float(new_residual @ new_residual) <= cost:
                break
            step /= 2.0
        else:
            break
        moved = np.abs(trial - current) / np.maximum(np.abs(current), 1e-3)
        current, coef, jacobian, residual = trial, new_coef, new_jacobian, new_residual
        cost = float(residual @ residual)
        if float(moved.max()) < 1e-5:
            break
    return tuple(float(v) for v in current)


def _curve(
    data: Series, view: View, taus: tuple[float, ...], aero: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The curve at the motor parameters `taus`, the covariance of (c0, c1, c2, rise, fall[, idle]) (inf where the
    view does not inform them), the residuals and the row means."""
    coef, jacobian, residual, means = _linearize(data, view, taus, aero)
    size = jacobian.shape[1]
    variance = float(residual @ residual) / max(1, len(residual) - size) * _inflation(residual) ** 2
    norms = np.sqrt((jacobian**2).sum(axis=0))
    uninformed = norms == 0
    norms[uninformed] = 1.0
    information = (jacobian / norms).T @ (jacobian / norms)
    eigen = np.linalg.eigvalsh(information)
    if eigen[0] <= 1e-12 * eigen[-1]:
        covariance = np.full((size, size), np.inf)
    else:
        covariance = np.linalg.inv(information) * variance / np.outer(norms, norms)
    covariance[uninformed] = covariance[:, uninformed] = np.inf
    keep = [0, 1, 2, *range(size - len(taus), size)]
    return coef[:3], covariance[np.ix_(keep, keep)], residual, means


def _inertia(
    view: View, airframe: Airframe, curve: np.ndarray, means: np.ndarray, aero: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(inertia (3,), standard errors (3,), residuals (K, 3), net torques (K, 3), gains (3,))."""
    thrusts = curve[0] + curve[1] * means[0] + curve[2] * means[1]
    torque = thrusts @ airframe.torque_map.T
    rates, measured = view.rates, view.angular_acceleration
    inertia = airframe.inertia.copy()
    gains, errors = np.zeros(3), np.full(3, np.inf)
    residual = np.array(measured, dtype=np.float64)
    net = torque
    drag = aero_torque_columns(view, means[0], airframe) if aero else None
    for _ in range(INERTIA_PASSES):
        net = torque - np.cross(rates, rates * inertia)
        for axis in range(3):
            x = np.column_stack([net[:, axis], drag[axis]]) if drag is not None else net[:, axis : axis + 1]
            gram = x.T @ x
            if np.linalg.cond(gram) > 1e12:
                gains[axis] = 0.0
                continue
            coef = np.linalg.solve(gram, x.T @ measured[:, axis])
            gains[axis] = coef[0]
            residual[:, axis] = measured[:, axis] - x @ coef
            variance = float(residual[:, axis] @ residual[:, axis]) / max(1, len(x) - len(coef))
            variance *= _inflation(residual[:, axis]) ** 2
            errors[axis] = math.sqrt(max(variance * float(np.linalg.inv(gram)[0, 0]), 0.0))
        good = gains > 0
        inertia = np.where(good, 1.0 / np.where(good, gains, 1.0), airframe.inertia)
    good = gains > 0
    safe = np.where(good, gains, 1.0)
    values = np.where(good, 1.0 / safe, np.inf)
    inertia_errors = np.where(good, errors / (safe * safe), np.inf)
    return values, inertia_errors, residual, net, gains


MOTOR_MODELS = ("command", "rotor_speed")
"""robo_rl's motor models (`robo_rl.sim.quadrotor.params`): first order in the command's units with constant rise and
fall constants, or first order in rotor speed with a fall rate proportional to the speed (`motor_response`)."""


def solve(
    data: Series,
    view: View,
    airframe: Airframe,
    aero: bool,
    motor: str = "command",
    start: tuple[float, float, float] | None = None,
) -> Solution:
    """Fit `view` with the `motor` model (MOTOR_MODELS) and, with `aero`, the aerodynamic terms; `start`: (rise,
    fall, idle) to search from (a search of the whole range without it)."""
    rise, fall, idle = start or (*search_time_constants(data, view, aero), 1.0)
    if motor == "command":
        taus: tuple[float, ...] = refine(data, view, (rise, fall), aero)
    else:
        first = (rise, fall, idle) if idle < 1.0 else rotor_speed_start(data, view, aero, rise, fall)
        taus = refine(data, view, first, aero)
    curve, covariance, residual, means = _curve(data, view, taus, aero)
    inertia, inertia_errors, angular_residual, net, gains = _inertia(view, airframe, curve, means, aero)
    errors = np.sqrt(np.abs(np.diag(covariance)))
    idle, idle_error = (taus[2], errors[5]) if motor == "rotor_speed" else (1.0, 0.0)
    return Solution(
        values=np.concatenate([curve, taus[:2], inertia, [idle]]),
        errors=np.concatenate([errors[:5], inertia_errors, [idle_error]]),
        curve_covariance=covariance[:3, :3],
        collective_residual=residual,
        angular_residual=angular_residual,
        means=means,
        net_torque=net,
        gains=gains,
        parameters=5 + 3 + (7 if aero else 0) + (1 if motor == "rotor_speed" else 0),
        motor=motor,
        aero=aero,
    )
