"""The hover step fused into one per-env loop on the CPU, compiled by numba (`HoverConfig.backend="numba"`).

One kernel does what `QuadrotorHover._transition` does with torch ops: motor map, integration, errors, crash
test, reward, time limit and success, observation, and the reset of the envs whose episode ended, each env in
one pass over its own numbers (`prange` over envs, numba's threads). The equations are the torch path's
(`robo_rl.sim.quadrotor.equations`, compiled here as numba functions); tests/sim/quadrotor/test_fused.py checks
the two paths step against step.

Random numbers for the resets come from the counter-based generator inside the kernel
(`robo_rl.sim.numba_support.uniform`); they differ from the torch path's draws (same distribution).

Supported: "motor" actions, a fixed hover point, no domain randomization but the thrust curve's scale
(`RandomizationConfig.thrust_coefficient`: a new scale U(1 - r, 1 + r) per episode, drawn in the kernel like the
resets, r shrunk by a curriculum as the torch path does) and whole airframes (`HoverConfig.airframes`: drawn in
the kernel at a reset by the same functions as the torch path's, `robo_rl.sim.quadrotor.airframes`, with their
action latency), with or without the position integral observation. The compiled kernel is cached on disk
(`robo_rl.sim.numba_support.cache_directory`).

Counter-based uniforms of a reset, per env: 0-11 the initial state, 12 the thrust scale, 13-22 the airframe
(`airframes.AIRFRAME_UNIFORMS`), 23 its latency.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import robo_rl.sim.quadrotor.airframes as airframes
import robo_rl.sim.quadrotor.equations as equations
from robo_rl.sim.numba_support import FASTMATH, Kernel, jit_copies, numba, set_threads, uniform
from robo_rl.sim.quadrotor.randomization import (
    BATTERY,
    EPISODE_NAMES,
    LATENCY,
    QUADRATIC_SHARE,
    THRUST_SCALE,
    THRUST_TO_WEIGHT,
)

__all__ = ["constants", "set_threads", "step", "uniform", "with_fraction"]
_EQUATIONS: tuple[str, ...] = ("quaternion_rate", "rotation", "motor_rate", "rotor_thrust", "derivative", "axpy", "rk4")
_EQUATIONS += ("semi_implicit_euler", "normalized")
_EQUATIONS += ("motor_command", "within_bounds", "reward")


# Layout of the constants vector the kernel takes (float64).
(INV_MASS, INERTIA_X, INERTIA_Y, INERTIA_Z, THRUST_0, THRUST_1, THRUST_2, TORQUE_TO_THRUST, RISE_RATE, FALL_RATE,
 DRAG_X, DRAG_Y, DRAG_Z, GRAVITY, SLOPE, OFFSET, HOVER_0, HOVER_1, HOVER_2, HOVER_3, DT, SUBSTEPS, INTEGRATOR,
 MAX_STEPS, WINDOW, SUCCESS_SUM, MAX_DISTANCE, COS_MAX_TILT, MAX_RATE_SQUARED, FLOOR, ALIVE, W_POSITION,
 W_DISTANCE, W_ATTITUDE, W_VELOCITY, W_RATES, W_ACTION, W_CRASH, TARGET_X, TARGET_Y, TARGET_Z, INIT_POSITION,
 INIT_VELOCITY, INIT_RATES, INIT_ATTITUDE, HOVER_ROTOR, INTEGRAL_LIMIT, W_INTEGRAL, HISTORY_ROW, REWARD_FLOOR,
 THRUST_RANGE, GEOMETRY) = range(52)  # fmt: skip
# Airframes: the nominal mass and motor time constants, whether airframes are drawn, the latency's range (whole
# steps) and the curriculum fraction that shrinks it, then the airframe constants (`airframes.NUM_CONSTANTS`).
# FALL_SLOPE: the frame's fall-rate growth per unit motor state (`equations.Body.fall_slope`; airframes have none).
MASS, RISE_TIME, FALL_TIME, AIRFRAMES, LATENCY_LOW, LATENCY_HIGH, FRACTION, FALL_SLOPE = range(
    GEOMETRY + 12, GEOMETRY + 20
)
AIRFRAME = GEOMETRY + 20
NUM_CONSTANTS = AIRFRAME + airframes.NUM_CONSTANTS
FEATURES = len(EPISODE_NAMES)
"""First row of the airframe features in the episode parameters (`airframes.FEATURE_NAMES`)."""
HOVER_ROW = FEATURES + airframes.HOVER_FEATURE


_EQ = jit_copies(equations, _EQUATIONS, {"Body": equations.Body, "Geometry": equations.Geometry})
_LAYOUT = {name: value for name, value in vars(airframes).items() if name.isupper() and isinstance(value, int)}
_AIRFRAME = jit_copies(
    airframes, ("airframe", "feature", "episode_rows", "hover_command"), {"log": math.log, **_LAYOUT}
)
episode_rows, hover_command = _AIRFRAME["episode_rows"], _AIRFRAME["hover_command"]
rk4, semi_implicit_euler, normalized = _EQ["rk4"], _EQ["semi_implicit_euler"], _EQ["normalized"]
rotation, motor_command = _EQ["rotation"], _EQ["motor_command"]
within_bounds, reward = _EQ["within_bounds"], _EQ["reward"]
Body, Geometry, RewardWeights = equations.Body, equations.Geometry, equations.RewardWeights


@numba.njit(fastmath=FASTMATH, inline="always")
def initial_state(c: Any, seed: Any, counter: Any, env: int, rotor: float) -> Any:
    """A new episode's state around the target, from 12 uniforms, its motors at `rotor`, as
    `QuadrotorHover._initial_state` (the curriculum fraction is already in the ranges of `c`)."""
    u = [uniform(seed, counter, env, k) for k in range(12)]
    rp, rv, rw = c[INIT_POSITION], c[INIT_VELOCITY], c[INIT_RATES]
    half = u[9] * (c[INIT_ATTITUDE] / 2.0)
    axis_z = u[10] * 2.0 - 1.0
    azimuth = u[11] * (2.0 * np.pi)
    radius = np.sqrt(max(1.0 - axis_z * axis_z, 0.0))
    sin_half = np.sin(half)
    return (
        c[TARGET_X] + (u[0] * 2.0 - 1.0) * rp, c[TARGET_Y] + (u[1] * 2.0 - 1.0) * rp,
        c[TARGET_Z] + (u[2] * 2.0 - 1.0) * rp,
        np.cos(half), radius * np.cos(azimuth) * sin_half, radius * np.sin(azimuth) * sin_half, axis_z * sin_half,
        (u[3] * 2.0 - 1.0) * rv, (u[4] * 2.0 - 1.0) * rv, (u[5] * 2.0 - 1.0) * rv,
        (u[6] * 2.0 - 1.0) * rw, (u[7] * 2.0 - 1.0) * rw, (u[8] * 2.0 - 1.0) * rw,
        rotor, rotor, rotor, rotor,
    )  # fmt: skip


@numba.njit(fastmath=FASTMATH, inline="always")
def clip(x: float) -> float:
    return min(max(x, -1.0), 1.0)


@numba.njit(fastmath=FASTMATH, inline="always")
def observe(c: Any, s: Any, out: Any, i: int) -> None:
    """Rows 0-17 of env i's observation (component-major `out`): position error, rotation (clamped to
    [-1, 1]), velocity, body rates; the action history rows are the caller's."""
    out[0, i], out[1, i], out[2, i] = s[0] - c[TARGET_X], s[1] - c[TARGET_Y], s[2] - c[TARGET_Z]
    r = rotation(s[3], s[4], s[5], s[6])
    out[3, i], out[4, i], out[5, i] = clip(r[0]), clip(r[1]), clip(r[2])
    out[6, i], out[7, i], out[8, i] = clip(r[3]), clip(r[4]), clip(r[5])
    out[9, i], out[10, i], out[11, i] = clip(r[6]), clip(r[7]), clip(r[8])
    out[12, i], out[13, i], out[14, i] = s[7], s[8], s[9]
    out[15, i], out[16, i], out[17, i] = s[10], s[11], s[12]


@numba.njit(fastmath=FASTMATH, inline="always")
def load(state: Any, i: int) -> Any:
    return (
        float(state[0, i]), float(state[1, i]), float(state[2, i]), float(state[3, i]), float(state[4, i]),
        float(state[5, i]), float(state[6, i]), float(state[7, i]), float(state[8, i]), float(state[9, i]),
        float(state[10, i]), float(state[11, i]), float(state[12, i]), float(state[13, i]),
        float(state[14, i]), float(state[15, i]), float(state[16, i]),
    )  # fmt: skip


@numba.njit(fastmath=FASTMATH, inline="always")
def store(state: Any, s: Any, i: int) -> None:
    state[0, i], state[1, i], state[2, i], state[3, i], state[4, i] = s[0], s[1], s[2], s[3], s[4]
    state[5, i], state[6, i], state[7, i], state[8, i], state[9, i] = s[5], s[6], s[7], s[8], s[9]
    state[10, i], state[11, i], state[12, i], state[13, i] = s[10], s[11], s[12], s[13]
    state[14, i], state[15, i], state[16, i] = s[14], s[15], s[16]


@numba.njit(fastmath=FASTMATH, inline="always")
def body_of(c: Any, episode: Any, i: int) -> Any:
    """Env i's body: the frame of the constants with its thrust curve scaled by this episode's thrust scale, or
    with airframes the episode's airframe, as `QuadrotorHover._apply_episode` derives it (`DynamicsParams.scaled`
    with the curve of `randomization.thrust_curves`)."""
    if c[AIRFRAMES] > 0.0:
        return airframe_body(c, episode, i)
    thrust_scale = episode[THRUST_SCALE, i]
    return Body(
        c[INV_MASS], c[INERTIA_X], c[INERTIA_Y], c[INERTIA_Z], c[THRUST_0] * thrust_scale,
        c[THRUST_1] * thrust_scale, c[THRUST_2] * thrust_scale,
        c[TORQUE_TO_THRUST], c[RISE_RATE], c[FALL_RATE], c[FALL_SLOPE], c[DRAG_X], c[DRAG_Y], c[DRAG_Z], 0.0, 0.0,
        -c[GRAVITY], 0.0, 0.0, 0.0,
    )  # fmt: skip


@numba.njit(fastmath=FASTMATH, inline="always")
def airframe_body(c: Any, episode: Any, i: int) -> Any:
    mass = c[MASS] * episode[0, i]
    k = episode[THRUST_TO_WEIGHT, i] * mass * (c[GRAVITY] / 4.0)
    share, scale = episode[QUADRATIC_SHARE, i], episode[THRUST_SCALE, i] * episode[BATTERY, i]
    inv_mass = 1.0 / mass
    drag = c[MASS] * inv_mass  # the constants hold drag / nominal mass
    return Body(
        inv_mass, c[INERTIA_X] * episode[1, i], c[INERTIA_Y] * episode[2, i], c[INERTIA_Z] * episode[3, i], 0.0,
        k * (1.0 - share) * scale, k * share * scale, c[TORQUE_TO_THRUST] * episode[5, i],
        1.0 / (c[RISE_TIME] * episode[6, i]), 1.0 / (c[FALL_TIME] * episode[7, i]), 0.0, c[DRAG_X] * drag,
        c[DRAG_Y] * drag, c[DRAG_Z] * drag, 0.0, 0.0, -c[GRAVITY], 0.0, 0.0, 0.0,
    )  # fmt: skip


@numba.njit(fastmath=FASTMATH, inline="always")
def hover_action(c: Any, episode: Any, i: int, rotor: int) -> float:
    """The action the reward measures from: the frame's hover action, or env i's airframe's own."""
    if c[AIRFRAMES] > 0.0:
        return (episode[HOVER_ROW, i] - c[OFFSET]) / c[SLOPE]
    return c[HOVER_0 + rotor]


@numba.njit(fastmath=FASTMATH, inline="always")
def geometry_of(c: Any) -> Any:
    return Geometry(
        (c[GEOMETRY], c[GEOMETRY + 1], c[GEOMETRY + 2], c[GEOMETRY + 3]),
        (c[GEOMETRY + 4], c[GEOMETRY + 5], c[GEOMETRY + 6], c[GEOMETRY + 7]),
        (c[GEOMETRY + 8], c[GEOMETRY + 9], c[GEOMETRY + 10], c[GEOMETRY + 11]),
    )


@numba.njit(fastmath=FASTMATH, inline="always")
def integrate(c: Any, integral: Any, s: Any, out: Any, i: int) -> None:
    """Env i's position integral takes in the position error of state `s` (clipped to +-INTEGRAL_LIMIT per axis)
    and goes into rows 18-20 of observation `out`; nothing without the integral."""
    limit = c[INTEGRAL_LIMIT]
    if limit > 0.0:
        dt = c[DT]
        integral[0, i] = min(max(integral[0, i] + dt * (s[0] - c[TARGET_X]), -limit), limit)
        integral[1, i] = min(max(integral[1, i] + dt * (s[1] - c[TARGET_Y]), -limit), limit)
        integral[2, i] = min(max(integral[2, i] + dt * (s[2] - c[TARGET_Z]), -limit), limit)
        out[18, i], out[19, i], out[20, i] = integral[0, i], integral[1, i], integral[2, i]


@numba.njit(fastmath=FASTMATH)
def physics(
    c: Any, state: Any, action: Any, history: Any, steps: Any, error_sum: Any, integral: Any, episode: Any,
    buffer: Any, out: Any, i: int,
) -> None:  # fmt: skip
    """Env i's step up to its outcome (the resets are a separate pass; LLVM still does not vectorize this loop
    over envs, see docs/BENCHMARKS.md "Quadrotor step"): clipped
    action into the history, integration, reward, crash, time limit, success, final observation rows 0-17."""
    final_obs, reward_out, done, terminated, truncated, success, distance, rotor = out
    a = (clip(action[i, 0]), clip(action[i, 1]), clip(action[i, 2]), clip(action[i, 3]))
    if history.shape[0] > 0:
        history[0, i], history[1, i], history[2, i], history[3, i] = a[0], a[1], a[2], a[3]
    applied = delayed(buffer, episode, a, i)
    slope, offset = c[SLOPE], c[OFFSET]
    command = (
        motor_command(applied[0], slope, offset), motor_command(applied[1], slope, offset),
        motor_command(applied[2], slope, offset), motor_command(applied[3], slope, offset),
    )  # fmt: skip
    body, geometry = body_of(c, episode, i), geometry_of(c)
    substeps = int(c[SUBSTEPS])
    h = c[DT] / substeps
    s = load(state, i)
    if substeps == 1 and c[INTEGRATOR] == 0.0:  # the default
        s = normalized(rk4(s, command, body, geometry, h))
    else:
        for _ in range(substeps):
            if c[INTEGRATOR] == 0.0:
                s = normalized(rk4(s, command, body, geometry, h))
            else:
                s = normalized(semi_implicit_euler(s, command, body, geometry, h))
    store(state, s, i)
    count = steps[i] + 1
    steps[i] = count
    e = (s[0] - c[TARGET_X], s[1] - c[TARGET_Y], s[2] - c[TARGET_Z])
    r22 = 1.0 - 2.0 * (s[4] * s[4] + s[5] * s[5])
    dist = np.sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2])
    within = within_bounds(dist, r22, s[10], s[11], s[12], c[MAX_DISTANCE], c[COS_MAX_TILT], c[MAX_RATE_SQUARED])
    crashed = not (within and s[2] >= c[FLOOR])
    offsets = (
        a[0] - hover_action(c, episode, i, 0), a[1] - hover_action(c, episode, i, 1),
        a[2] - hover_action(c, episode, i, 2), a[3] - hover_action(c, episode, i, 3),
    )  # fmt: skip
    rates = (s[10], s[11], s[12])
    weights = RewardWeights(
        c[ALIVE], c[W_POSITION], c[W_DISTANCE], c[W_ATTITUDE], c[W_VELOCITY], c[W_RATES], c[W_ACTION], c[W_CRASH]
    )
    integrate(c, integral, s, final_obs, i)
    floored = c[REWARD_FLOOR] > -np.inf
    crash = 1.0 if crashed and not floored else 0.0  # with a floor, the crash penalty comes after it
    r = reward(e, (s[7], s[8], s[9]), rates, offsets, dist, r22, crash, weights)
    if c[INTEGRAL_LIMIT] > 0.0:
        r -= c[W_INTEGRAL] * (integral[0, i] ** 2 + integral[1, i] ** 2 + integral[2, i] ** 2)
    if floored:
        r = max(r, c[REWARD_FLOOR]) - (c[W_CRASH] if crashed else 0.0)
    reward_out[i] = r
    in_window = count > int(c[MAX_STEPS]) - int(c[WINDOW])
    total = error_sum[i] + (dist if in_window else 0.0)
    error_sum[i] = total
    trunc = count >= int(c[MAX_STEPS]) and not crashed
    terminated[i], truncated[i], distance[i], done[i] = crashed, trunc, dist, crashed or trunc
    success[i] = trunc and total < c[SUCCESS_SUM]
    observe(c, s, final_obs, i)
    rotor[0, i], rotor[1, i], rotor[2, i], rotor[3, i] = s[13], s[14], s[15], s[16]


def _step(c: Any, state: Any, history: Any, steps: Any, error_sum: Any, integral: Any, episode: Any, buffer: Any,
          action: Any, seed: Any, counter: Any, out: Any, obs: Any, rotor_now: Any) -> None:  # fmt: skip
    """One control step of every env (`step` runs it in parallel over envs, or on the calling thread).

    In place: `state` `(17, N)`, `history` `(4 k, N)`, `steps` and `error_sum` `(N,)`, `integral` `(3, N)`
    (or `(0, N)` without the position integral), `episode` `(rows, N)` (this episode's parameters: its thrust
    scale drawn anew at a reset when `c[THRUST_RANGE]` > 0, the whole airframe with `c[AIRFRAMES]`), `buffer`
    `(L + 1, 4, N)` the last actions for a latency of up to L steps, as `QuadrotorHover` holds them. `action`
    `(N, 4)`; `c` the constants (`NUM_CONSTANTS` float64). Outputs: `out` = (final observation `(obs_dim, N)`,
    reward, done, terminated, truncated, success, distance `(N,)`, motor states `(4, N)` before the resets), `obs`
    `(obs_dim, N)` and `rotor_now` `(4, N)` after them. Component-major like the state.
    """
    n, rows, first = state.shape[1], history.shape[0], int(c[HISTORY_ROW])
    final_obs, done, rotor = out[0], out[2], out[7]
    for j in range(rows - 1, 3, -1):  # shift the action history by one action
        for i in numba.prange(n):
            history[j, i] = history[j - 4, i]
    for i in numba.prange(n):
        physics(c, state, action, history, steps, error_sum, integral, episode, buffer, out, i)
    for j in range(rows):
        for i in numba.prange(n):
            final_obs[first + j, i] = history[j, i]
    obs[:, :] = final_obs
    rotor_now[:, :] = rotor
    for i in numba.prange(n):  # envs whose episode ended start a new one (rare: branchy is fine here)
        if done[i]:
            new_episode(c, seed, counter, episode, i)
            rotor_start = float(episode[HOVER_ROW, i]) if c[AIRFRAMES] > 0.0 else c[HOVER_ROTOR]
            s = initial_state(c, seed, counter, i, rotor_start)
            store(state, s, i)
            for j in range(buffer.shape[0]):
                for k in range(4):
                    buffer[j, k, i] = hover_action(c, episode, i, k)
            steps[i] = 0
            error_sum[i] = 0.0
            for j in range(rows):
                history[j, i] = c[HOVER_0 + j % 4]
                obs[first + j, i] = c[HOVER_0 + j % 4]
            observe(c, s, obs, i)
            if integral.shape[0] > 0:
                integral[0, i], integral[1, i], integral[2, i] = 0.0, 0.0, 0.0
            integrate(c, integral, s, obs, i)
            for j in range(4):
                rotor_now[j, i] = s[13 + j]


@numba.njit(fastmath=FASTMATH, inline="always")
def delayed(buffer: Any, episode: Any, a: Any, i: int) -> Any:
    """The action to apply now: `a` itself, or with a latency buffer `a` pushed in and the one the env's latency
    (episode row `LATENCY`, whole steps) picks out, as `QuadrotorHover._delayed`."""
    depth = buffer.shape[0]
    if depth == 1:
        return a
    for j in range(depth - 1, 0, -1):
        for k in range(4):
            buffer[j, k, i] = buffer[j - 1, k, i]
    for k in range(4):
        buffer[0, k, i] = a[k]
    latency = int(episode[LATENCY, i])
    return (
        float(buffer[latency, 0, i]), float(buffer[latency, 1, i]), float(buffer[latency, 2, i]),
        float(buffer[latency, 3, i]),
    )  # fmt: skip


@numba.njit(fastmath=FASTMATH, inline="always")
def new_episode(c: Any, seed: Any, counter: Any, episode: Any, i: int) -> None:
    """Env i's episode parameters of a new episode, from its counter-based uniforms 12-23 (module docstring), as
    `EpisodeSampler.from_uniform` maps its draws: the thrust scale 1 + f r (2 u - 1), then with airframes the
    airframe (`airframes.episode_rows`), its latency floor(f (low + u (high + 1 - low))) and hover command."""
    if c[THRUST_RANGE] > 0.0:  # the 13th uniform: the torch path's 13 initial-state draws hold a phase there
        episode[THRUST_SCALE, i] = 1.0 + c[THRUST_RANGE] * (uniform(seed, counter, i, 12) * 2.0 - 1.0)
    if c[AIRFRAMES] == 0.0:
        return
    u = [uniform(seed, counter, i, 13 + k) for k in range(airframes.AIRFRAME_UNIFORMS)]
    rows = episode_rows(u, c[AIRFRAME:])
    for k in range(len(airframes.AIRFRAME_ROWS)):
        episode[airframes.AIRFRAME_ROWS[k], i] = rows[k]
    for k in range(len(airframes.AIRFRAME_ROWS), len(rows)):
        episode[FEATURES + k - len(airframes.AIRFRAME_ROWS), i] = rows[k]
    low, high = c[LATENCY_LOW], c[LATENCY_HIGH]
    latency = c[FRACTION] * (low + uniform(seed, counter, i, 13 + airframes.AIRFRAME_UNIFORMS) * (high + 1.0 - low))
    episode[LATENCY, i] = min(np.floor(latency), high)
    ratio = episode[THRUST_TO_WEIGHT, i] * episode[THRUST_SCALE, i] * episode[BATTERY, i]
    episode[HOVER_ROW, i] = hover_command(ratio, episode[QUADRATIC_SHARE, i])


step = Kernel(_step)
"""`step(threads, *args)`: `_step` over the envs in numba's threads, or its serial copy on one thread."""


def constants(
    config: Any, params: Any, action_map: Any, geometry: equations.Geometry, sampler: Any = None
) -> np.ndarray:
    """The kernel's constants (float64 `(NUM_CONSTANTS,)`) of a `HoverConfig`, frame, "motor" action map and the
    env's `EpisodeSampler` (needed with airframes)."""
    c = np.zeros(NUM_CONSTANTS)
    c[INV_MASS], c[INERTIA_X : INERTIA_Z + 1] = 1.0 / params.mass, params.inertia
    c[THRUST_0 : THRUST_2 + 1], c[TORQUE_TO_THRUST] = params.thrust_curve, params.torque_to_thrust
    idle = params.fall_idle_fraction
    c[RISE_RATE], c[FALL_RATE] = 1.0 / params.motor_rise_time_constant, idle / params.motor_fall_time_constant
    c[FALL_SLOPE] = (1.0 - idle) / params.motor_fall_time_constant
    c[DRAG_X : DRAG_Z + 1] = [d / params.mass for d in params.linear_drag]
    c[GRAVITY] = params.gravity
    c[SLOPE], c[OFFSET], c[HOVER_0 : HOVER_3 + 1] = action_map.slope, action_map.offset, action_map.hover_action
    c[DT], c[SUBSTEPS], c[INTEGRATOR] = config.dt, config.substeps, 0.0 if config.integrator == "rk4" else 1.0
    c[MAX_STEPS], c[WINDOW] = config.max_episode_steps, config.success_steps
    c[SUCCESS_SUM] = config.success_position_error * config.success_steps
    c[MAX_DISTANCE], c[COS_MAX_TILT] = config.max_position_error, math.cos(config.max_tilt)
    c[MAX_RATE_SQUARED] = config.max_angular_speed**2
    c[FLOOR] = -math.inf if config.floor_height is None else config.floor_height
    c[ALIVE : W_CRASH + 1] = (
        config.alive_reward, config.position_weight, config.distance_weight, config.attitude_weight,
        config.velocity_weight, config.angular_velocity_weight, config.action_weight, config.crash_penalty,
    )  # fmt: skip
    c[TARGET_X : TARGET_Z + 1] = config.target_position
    c[HOVER_ROTOR] = params.hover_command
    c[INTEGRAL_LIMIT], c[W_INTEGRAL] = config.position_integral_limit, config.integral_weight
    c[HISTORY_ROW] = 21 if config.position_integral_limit > 0 else 18
    c[REWARD_FLOOR] = -math.inf if config.reward_floor is None else config.reward_floor
    c[GEOMETRY : GEOMETRY + 12] = (*geometry.y, *geometry.minus_x, *geometry.minus_spin)
    c[MASS], c[RISE_TIME], c[FALL_TIME] = params.mass, params.motor_rise_time_constant, params.motor_fall_time_constant
    if config.airframes is not None:
        c[AIRFRAMES] = 1.0
        c[LATENCY_LOW], c[LATENCY_HIGH] = config.airframes.latency_steps(config.dt)
        c[AIRFRAME:] = sampler.airframe_constants
    return with_fraction(c, config, 1.0)


def with_fraction(c: np.ndarray, config: Any, fraction: float) -> np.ndarray:
    """`c` with the initial-state ranges and the thrust scale's half-range of `config` scaled by the curriculum
    `fraction` (in place)."""
    c[INIT_POSITION] = config.init_position_range * fraction
    c[INIT_VELOCITY] = config.init_velocity_range * fraction
    c[INIT_RATES] = config.init_angular_velocity_range * fraction
    c[INIT_ATTITUDE] = config.init_attitude_range * fraction
    c[THRUST_RANGE] = config.randomization.thrust_coefficient * fraction
    c[FRACTION] = fraction
    return c
