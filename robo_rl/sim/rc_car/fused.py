"""The race step fused into one per-env loop on the CPU, compiled by numba (`RaceConfig.backend="numba"`).

One kernel does what `RCCarRace.step` does with torch ops: the action latency, the single-track integration, the
projection onto the center line, progress and laps, off-track and stall tests, reward, time limit, observation,
and the reset of the envs whose episode ended, each env in one pass (`prange` over envs). The car's equations are
the torch path's (`robo_rl.sim.rc_car.equations`, compiled here with `math` for the math vocabulary); the track
lookups follow `robo_rl.sim.rc_car.track` on its segment table. tests/sim/rc_car/test_fused.py checks the two
paths step against step. Reset draws come from `robo_rl.sim.numba_support.uniform` (same distribution as the
torch path's, other numbers).

Supported: no domain randomization (the car's own fixed latency is kept). The compiled kernel is cached on disk.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import robo_rl.sim.rc_car.equations as equations
from robo_rl.sim.numba_support import FASTMATH, Kernel, jit_copies, numba, set_threads, uniform
from robo_rl.sim.rc_car.track import PROJECTION_JUMP, PROJECTION_STEPS

__all__ = ["constants", "set_threads", "step", "uniform"]


@numba.njit(fastmath=FASTMATH, inline="always")
def _sign(x: float) -> float:
    return 1.0 if x > 0.0 else (-1.0 if x < 0.0 else 0.0)


@numba.njit(fastmath=FASTMATH, inline="always")
def _clamp(x: float, low: float, high: float) -> float:
    return min(max(x, low), high)


@numba.njit(fastmath=FASTMATH, inline="always")
def _at_least(x: float, low: float) -> float:
    return max(x, low)


@numba.njit(fastmath=FASTMATH, inline="always")
def _at_most(x: float, high: float) -> float:
    return min(x, high)


_VOCABULARY = {
    "atan": math.atan, "atan2": math.atan2, "sin": math.sin, "cos": math.cos, "tan": math.tan, "sign": _sign,
    "clamp": _clamp, "at_least": _at_least, "at_most": _at_most, "math": math, "Car": equations.Car,
    "Chassis": equations.Chassis, "KINEMATIC_SPEED": equations.KINEMATIC_SPEED,
    "DYNAMIC_SPEED": equations.DYNAMIC_SPEED,
}  # fmt: skip
_EQ = jit_copies(
    equations,
    ("magic_formula", "slip_angles", "drive_acceleration", "speed_setpoint", "esc_acceleration",
     "stopping_deceleration", "steer_toward", "dynamic_weight", "wrap_angle", "substep", "integrate"),
    dict(_VOCABULARY),
)  # fmt: skip
integrate, wrap_angle = _EQ["integrate"], _EQ["wrap_angle"]
Car, Chassis = equations.Car, equations.Chassis

# Layout of the constants vector the kernel takes (float64).
(DT, SUBSTEPS, LATENCY, MAX_STEPS, SUCCESS_LAPS, STALL_STEPS, STALL_SPEED, MARGIN, W_PROGRESS, OFF_PENALTY,
 STALL_PENALTY, W_ACTION, W_STEER_RATE, INIT_OFFSET, INIT_HEADING, INIT_SPEED, LENGTH, SEGMENT_LENGTH, NUM_POINTS,
 LOOKAHEAD_SPACING, LOOKAHEAD_POINTS, CAR) = range(22)  # fmt: skip
CHASSIS = CAR + len(equations.Car._fields)  # the fields of equations.Car, then those of equations.Chassis
NUM_CONSTANTS = CHASSIS + len(equations.Chassis._fields)
DRIVE_LATENCY = NUM_CONSTANTS  # the drive's delay in control steps (latency plus the speed loop's dead time)
NUM_CONSTANTS += 1


@numba.njit(fastmath=FASTMATH, inline="always")
def _wrap_s(s: float, length: float) -> float:
    return s % length


@numba.njit(fastmath=FASTMATH, inline="always")
def _locate(c: Any, s: float) -> Any:
    """(segment, fraction) of arc length s, as `Track.locate`."""
    u = _wrap_s(s, c[LENGTH]) * (1.0 / c[SEGMENT_LENGTH])
    index = math.floor(u)
    return min(max(int(index), 0), int(c[NUM_POINTS]) - 1), u - index


@numba.njit(fastmath=FASTMATH, inline="always")
def _point_at(c: Any, table: Any, s: float) -> Any:
    j, f = _locate(c, s)
    return table[0, j] + f * table[2, j], table[1, j] + f * table[3, j]


@numba.njit(fastmath=FASTMATH, inline="always")
def _project(c: Any, table: Any, x: float, y: float, hint: int) -> Any:
    """(s, lateral offset, heading, half width, segment) of position (x, y), walking from segment `hint`, as
    `Track.project(..., hint=...)`."""
    points = int(c[NUM_POINTS])
    index = hint
    for _ in range(PROJECTION_STEPS):
        along = ((x - table[0, index]) * table[2, index] + (y - table[1, index]) * table[3, index]) * table[4, index]
        jump = 0 if not along == along else int(min(max(math.floor(along), -PROJECTION_JUMP), PROJECTION_JUMP))
        index = (index + jump) % points
    sx, sy, dx, dy, inv_squared = table[0, index], table[1, index], table[2, index], table[3, index], table[4, index]
    rx, ry = x - sx, y - sy
    fraction = min(max((rx * dx + ry * dy) * inv_squared, 0.0), 1.0)
    gap_x, gap_y = rx - fraction * dx, ry - fraction * dy
    side = 1.0 if dx * ry - dy * rx >= 0 else -1.0
    offset = side * math.sqrt(gap_x * gap_x + gap_y * gap_y)
    heading = wrap_angle(table[5, index] + fraction * table[6, index])
    s = _wrap_s((index + fraction) * c[SEGMENT_LENGTH], c[LENGTH])
    return s, offset, heading, 0.5 * (table[7, index] + fraction * table[8, index]), index


@numba.njit(fastmath=FASTMATH, inline="always")
def _observe(c: Any, table: Any, s: Any, projection: Any, history: Any, out: Any, i: int) -> None:
    """Env i's observation rows (component-major `out`), as `RCCarRace._observe`."""
    x, y, yaw = s[0], s[1], s[2]
    cos_yaw, sin_yaw = math.cos(yaw), math.sin(yaw)
    points = int(c[LOOKAHEAD_POINTS])
    for k in range(points):
        px, py = _point_at(c, table, projection[0] + c[LOOKAHEAD_SPACING] * (k + 1))
        dx, dy = px - x, py - y
        out[2 * k, i] = cos_yaw * dx + sin_yaw * dy
        out[2 * k + 1, i] = cos_yaw * dy - sin_yaw * dx
    row = 2 * points
    out[row, i], out[row + 1, i], out[row + 2, i], out[row + 3, i] = s[3], s[4], s[5], s[6]
    out[row + 4, i], out[row + 5, i], out[row + 6, i] = projection[1], wrap_angle(yaw - projection[2]), projection[3]
    for j in range(history.shape[0]):
        out[row + 7 + j, i] = history[j, i]


@numba.njit(fastmath=FASTMATH)
def env_step(c: Any, table: Any, state: Any, buffer: Any, history: Any, last_action: Any, counts: Any, floats: Any,
             projection: Any, action: Any, seed: Any, counter: Any, out: Any, i: int) -> None:  # fmt: skip
    """Env i's step (see `step`)."""
    obs, final_obs, reward, flags, lap_time, laps_out, progress_out = out
    steps, laps, slow_steps, segment = counts
    distance, lap_start = floats
    car = Car(c[CAR], c[CAR + 1], c[CAR + 2], c[CAR + 3], c[CAR + 4], c[CAR + 5], c[CAR + 6], c[CAR + 7], c[CAR + 8])
    chassis = Chassis(
        c[CHASSIS], c[CHASSIS + 1], c[CHASSIS + 2], c[CHASSIS + 3], c[CHASSIS + 4], c[CHASSIS + 5], c[CHASSIS + 6],
        c[CHASSIS + 7], c[CHASSIS + 8], c[CHASSIS + 9], c[CHASSIS + 10], c[CHASSIS + 11], c[CHASSIS + 12],
        c[CHASSIS + 13], c[CHASSIS + 14], c[CHASSIS + 15], c[CHASSIS + 16], c[CHASSIS + 17], c[CHASSIS + 18],
    )  # fmt: skip
    steering, drive = min(max(action[i, 0], -1.0), 1.0), min(max(action[i, 1], -1.0), 1.0)
    previous_steering = last_action[0, i]
    latency, drive_latency = int(c[LATENCY]), int(c[DRIVE_LATENCY])
    for j in range(buffer.shape[0] - 1, 0, -1):
        buffer[j, 0, i], buffer[j, 1, i] = buffer[j - 1, 0, i], buffer[j - 1, 1, i]
    buffer[0, 0, i], buffer[0, 1, i] = steering, drive
    command_steer, command_drive = buffer[latency, 0, i], buffer[drive_latency, 1, i]
    s = (float(state[0, i]), float(state[1, i]), float(state[2, i]), float(state[3, i]), float(state[4, i]),
         float(state[5, i]), float(state[6, i]))  # fmt: skip
    s = integrate(s, command_steer * chassis.max_steer, command_drive, car, chassis, c[DT], int(c[SUBSTEPS]))
    for j in range(history.shape[0] - 1, 1, -1):
        history[j, i] = history[j - 2, i]
    if history.shape[0] > 0:
        history[0, i], history[1, i] = steering, drive
    last_action[0, i], last_action[1, i] = steering, drive
    steps[i] += 1
    s_before = projection[0, i]
    p = _project(c, table, s[0], s[1], segment[i])
    half = 0.5 * c[LENGTH]
    progress = (p[0] - s_before + half) % c[LENGTH] - half
    progress = progress if progress == progress else 0.0
    # laps: the crossing time is interpolated within the step
    before = distance[i]
    distance[i] = before + progress
    target = (laps[i] + 1) * c[LENGTH]
    lap_time[i] = np.nan
    if distance[i] >= target:
        fraction = min(max((target - before) / max(progress, 1e-9), 0.0), 1.0)
        crossing = (steps[i] - 1.0 + fraction) * c[DT]
        lap_time[i] = crossing - lap_start[i]
        lap_start[i] = crossing
        laps[i] += 1
    within = abs(p[1]) <= p[3] + c[MARGIN] and math.isfinite(s[3]) and math.isfinite(s[5])
    off_track = not within
    slow = abs(s[3]) < c[STALL_SPEED]
    slow_steps[i] = slow_steps[i] + 1 if slow else 0
    stalled = c[STALL_STEPS] > 0 and slow_steps[i] >= c[STALL_STEPS]
    terminated = off_track or stalled
    r = progress * c[W_PROGRESS] - c[OFF_PENALTY] * (1.0 if off_track else 0.0)
    r -= c[STALL_PENALTY] * (1.0 if stalled and not off_track else 0.0)
    if c[W_ACTION] > 0:
        r -= c[W_ACTION] * (steering * steering + drive * drive)
    if c[W_STEER_RATE] > 0:
        r -= c[W_STEER_RATE] * (steering - previous_steering) ** 2
    reward[i] = r
    truncated = steps[i] >= c[MAX_STEPS] and not terminated
    flags[0, i], flags[1, i], flags[2, i], flags[3, i] = terminated, truncated, off_track, stalled
    flags[4, i] = truncated and laps[i] >= c[SUCCESS_LAPS]
    laps_out[i], progress_out[i] = laps[i], progress
    _observe(c, table, s, p, history, final_obs, i)
    if terminated or truncated:
        u0, u1 = uniform(seed, counter, i, 0), uniform(seed, counter, i, 1)
        u2, u3 = uniform(seed, counter, i, 2), uniform(seed, counter, i, 3)
        arc = u0 * c[LENGTH]
        j, f = _locate(c, arc)
        heading = wrap_angle(table[5, j] + f * table[6, j])
        offset = (2 * u1 - 1) * c[INIT_OFFSET] * 0.5 * (table[7, j] + f * table[8, j])
        cx, cy = _point_at(c, table, arc)
        yaw = wrap_angle(heading + (2 * u2 - 1) * c[INIT_HEADING])
        s = (cx - offset * math.sin(heading), cy + offset * math.cos(heading), yaw, u3 * c[INIT_SPEED], 0.0, 0.0, 0.0)
        p = _project(c, table, s[0], s[1], j)
        steps[i], laps[i], slow_steps[i] = 0, 0, 0
        distance[i], lap_start[i] = 0.0, 0.0
        for k in range(history.shape[0]):
            history[k, i] = 0.0
        last_action[0, i], last_action[1, i] = 0.0, 0.0
        for k in range(buffer.shape[0]):
            buffer[k, 0, i], buffer[k, 1, i] = 0.0, 0.0
        _observe(c, table, s, p, history, obs, i)
    else:
        for k in range(obs.shape[0]):
            obs[k, i] = final_obs[k, i]
    for k in range(7):
        state[k, i] = s[k]
    projection[0, i], projection[1, i], projection[2, i], projection[3, i] = p[0], p[1], p[2], p[3]
    segment[i] = p[4]


def _step(c: Any, table: Any, state: Any, buffer: Any, history: Any, last_action: Any, counts: Any, floats: Any,
         projection: Any, action: Any, seed: Any, counter: Any, out: Any) -> None:  # fmt: skip
    """One control step of every env (`step` runs it in parallel over envs, or on the calling thread).

    In place, as `RCCarRace` holds them (component-major): `state` `(7, N)`, the latency `buffer` `(L + D + 1, 2, N)`
    (D: the drive's extra delay),
    `history` `(2 k, N)`, `last_action` `(2, N)`, `counts` = (steps, laps, slow steps, segment) int64 `(N,)`,
    `floats` = (distance, lap start) `(N,)`, `projection` `(4, N)` (s, lateral offset, heading, half width).
    `table` is the track's segment table `(9, M)`, `c` the constants (`NUM_CONSTANTS`), `action` `(N, 2)`.
    Outputs `out` = (obs, final obs `(obs_dim, N)`, reward, flags `(5, N)` (terminated, truncated, off track,
    stalled, success), lap time, laps, progress `(N,)`)."""
    for i in numba.prange(state.shape[1]):
        env_step(c, table, state, buffer, history, last_action, counts, floats, projection, action, seed, counter,
                 out, i)  # fmt: skip


step = Kernel(_step)
"""`step(threads, *args)`: `_step` over the envs in numba's threads, or its serial copy on one thread."""


def constants(config: Any, params: Any, model: Any, track: Any, latency: int, drive_delay: int = 0) -> np.ndarray:
    """The kernel's constants (float64) of a `RaceConfig`, car (`CarModel`, nominal), track, fixed latency and
    the drive's extra delay (the speed loop's dead time), both in control steps."""
    c = np.zeros(NUM_CONSTANTS)
    c[DT], c[SUBSTEPS], c[LATENCY], c[MAX_STEPS] = config.dt, config.substeps, latency, config.max_episode_steps
    c[SUCCESS_LAPS], c[STALL_STEPS], c[STALL_SPEED] = config.success_laps, config.stall_steps, config.stall_speed
    c[MARGIN], c[W_PROGRESS], c[OFF_PENALTY] = config.off_track_margin, config.progress_weight, config.off_track_penalty
    c[STALL_PENALTY], c[W_ACTION], c[W_STEER_RATE] = (
        config.stall_penalty,
        config.action_weight,
        config.steering_rate_weight,
    )
    c[INIT_OFFSET], c[INIT_HEADING], c[INIT_SPEED] = config.init_offset, config.init_heading, config.init_speed
    c[LENGTH], c[SEGMENT_LENGTH], c[NUM_POINTS] = track.length, track.segment_length, track.num_points
    c[LOOKAHEAD_SPACING], c[LOOKAHEAD_POINTS] = config.lookahead_spacing, config.lookahead_points
    c[CAR:CHASSIS] = [float(value[0]) for value in model.car]
    c[CHASSIS : CHASSIS + len(model.chassis)] = model.chassis
    c[DRIVE_LATENCY] = latency + drive_delay
    return c
