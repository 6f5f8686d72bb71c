"""The motor models' response to held commands, as interval means of the motor state u and of u^2: what the fit's
thrust regressors are made of (`robo_rl.sysid.solve`). numba compiles the loop when it is installed (the `fast`
extra); the numpy form below is the same arithmetic, vectorised over models and rotors only, and what a test holds
the compiled one to."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

GAUSS_NODES, GAUSS_WEIGHTS = np.polynomial.legendre.leggauss(6)
"""Gauss-Legendre rule on [-1, 1] for the interval means of a motor falling at a speed-dependent rate."""


def motor_response_numpy(
    commands: np.ndarray,
    dt: np.ndarray,
    tau_rise: np.ndarray,
    tau_fall: np.ndarray,
    idle: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Interval means of the motor state u and of u^2 under the commands, for several motor models at once.

    `commands` (N, R): the command of each rotor, held from sample k to sample k+1 (the first sample's motors are
    taken to have settled on it); `dt` (N-1,) s; `tau_rise`, `tau_fall` (C,) s. Returns two (C, N-1, R) arrays.

    `idle` None: robo_rl's command model, du/dt = (c - u) / tau with tau the rise or the fall constant; exact, since
    within an interval the state moves monotonically toward the held command, so one constant applies throughout.
    `idle` (C,): the rotor-speed model (`robo_rl.sim.quadrotor.params`, motor_model "rotor_speed"): u is the rotor
    speed in command units, omega / omega_max = idle + (1 - idle) u; it rises at the constant rate and falls at a
    rate proportional to the speed, du/dt = (c - u) (idle + (1 - idle) u) / tau_fall. With d = u - c that is
    dd/dt = -d (alpha + b d), alpha = (idle + (1 - idle) c) / tau_fall, b = (1 - idle) / tau_fall, solved in closed
    form, d(t) = alpha d0 y / (alpha + b d0 (1 - y)) with y = exp(-alpha t), and averaged by Gauss-Legendre.
    """
    rise, fall = tau_rise[:, None], tau_fall[:, None]
    count = len(dt)
    mean_u = np.empty((len(rise), count, commands.shape[1]))
    mean_u2 = np.empty_like(mean_u)
    u = np.broadcast_to(commands[0], (len(rise), commands.shape[1])).astype(np.float64)
    nodes = 0.5 * (GAUSS_NODES + 1.0)
    weights = 0.5 * GAUSS_WEIGHTS
    speed = None if idle is None else idle[:, None]
    for k in range(count):
        c = commands[k]
        rising = c >= u
        tau = np.where(rising, rise, fall)
        ratio = tau / dt[k]
        decay = np.exp(-1.0 / ratio)
        d = u - c
        mean_d = d * ratio * (1.0 - decay)
        mean_d2 = d * d * 0.5 * ratio * (1.0 - decay * decay)
        end = d * decay
        if speed is not None and not rising.all():
            alpha = np.maximum((speed + (1.0 - speed) * c) / fall, 1e-9)
            e = (1.0 - speed) / fall * d
            y = np.exp(-alpha[..., None] * dt[k] * nodes)
            path = alpha[..., None] * d[..., None] * y / (alpha[..., None] + e[..., None] * (1.0 - y))
            y_end = np.exp(-alpha * dt[k])
            falling = ~rising
            mean_d = np.where(falling, path @ weights, mean_d)
            mean_d2 = np.where(falling, (path * path) @ weights, mean_d2)
            end = np.where(falling, alpha * d * y_end / (alpha + e * (1.0 - y_end)), end)
        mean_u[:, k] = c + mean_d
        mean_u2[:, k] = c * c + 2.0 * c * mean_d + mean_d2
        u = c + end
    return mean_u, mean_u2


def _kernel_source(
    commands: np.ndarray,
    dt: np.ndarray,
    rise: np.ndarray,
    fall: np.ndarray,
    idle: np.ndarray,
    speed_model: bool,
    nodes: np.ndarray,
    weights: np.ndarray,
    mean_u: np.ndarray,
    mean_u2: np.ndarray,
) -> None:
    """`motor_response_numpy`'s arithmetic one model, rotor and interval at a time (numba compiles it)."""
    for c in range(len(rise)):
        for r in range(commands.shape[1]):
            u = commands[0, r]
            for k in range(len(dt)):
                command = commands[k, r]
                d = u - command
                if command >= u or not speed_model:
                    ratio = (rise[c] if command >= u else fall[c]) / dt[k]
                    decay = math.exp(-1.0 / ratio)
                    mean_d = d * ratio * (1.0 - decay)
                    mean_d2 = d * d * 0.5 * ratio * (1.0 - decay * decay)
                    end = d * decay
                else:
                    alpha = max((idle[c] + (1.0 - idle[c]) * command) / fall[c], 1e-9)
                    e = (1.0 - idle[c]) / fall[c] * d
                    mean_d = 0.0
                    mean_d2 = 0.0
                    for j in range(len(nodes)):
                        y = math.exp(-alpha * dt[k] * nodes[j])
                        p = alpha * d * y / (alpha + e * (1.0 - y))
                        mean_d += weights[j] * p
                        mean_d2 += weights[j] * p * p
                    y = math.exp(-alpha * dt[k])
                    end = alpha * d * y / (alpha + e * (1.0 - y))
                mean_u[c, k, r] = command + mean_d
                mean_u2[c, k, r] = command * command + 2.0 * command * mean_d + mean_d2
                u = command + end


_COMPILED: list[Callable[..., Any] | None] = []


def _compiled() -> Callable[..., Any] | None:
    """The numba kernel, compiled on first use (cached on disk); None without numba."""
    if not _COMPILED:
        try:
            import numba
        except ImportError:
            _COMPILED.append(None)
        else:
            _COMPILED.append(numba.njit(cache=True, nogil=True)(_kernel_source))
    return _COMPILED[0]


def motor_response(
    commands: np.ndarray,
    dt: np.ndarray,
    tau_rise: np.ndarray,
    tau_fall: np.ndarray,
    idle: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """`motor_response_numpy`'s result, from the compiled kernel when numba is installed."""
    kernel = _compiled()
    if kernel is None:
        return motor_response_numpy(commands, dt, tau_rise, tau_fall, idle)
    count = len(tau_rise)
    mean_u = np.empty((count, len(dt), commands.shape[1]))
    mean_u2 = np.empty_like(mean_u)
    kernel(
        np.ascontiguousarray(commands, dtype=np.float64),
        np.ascontiguousarray(dt, dtype=np.float64),
        np.ascontiguousarray(tau_rise, dtype=np.float64),
        np.ascontiguousarray(tau_fall, dtype=np.float64),
        np.ones(count) if idle is None else np.ascontiguousarray(idle, dtype=np.float64),
        idle is not None,
        0.5 * (GAUSS_NODES + 1.0),
        0.5 * GAUSS_WEIGHTS,
        mean_u,
        mean_u2,
    )
    return mean_u, mean_u2
