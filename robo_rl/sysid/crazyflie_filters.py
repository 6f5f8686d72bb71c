"""The Crazyflie firmware's sensor filters, which every logged `acc.*` and `gyro.*` value has passed through, and the
delay they add.

From bitcraze/crazyflie-firmware: `src/hal/src/sensors_bmi088_bmp388.c` filters each accelerometer and gyro axis
with a 2-pole low-pass filter at the 1 kHz sensor rate, cut off at ACCEL_LPF_CUTOFF_FREQ = 30 Hz and
GYRO_LPF_CUTOFF_FREQ = 80 Hz; `src/utils/src/filter.c` (lpf2pSetCutoffFreq) makes it a Butterworth by the bilinear
transform: ohm = tan(pi fc / fs), c = 1 + 2 cos(pi / 4) ohm + ohm^2, b = (ohm^2, 2 ohm^2, ohm^2) / c,
a = (1, 2 (ohm^2 - 1) / c, (1 - 2 cos(pi / 4) ohm + ohm^2) / c).

At the frequencies a flight excites (well below the cutoffs) such a filter is a delay: its group delay at 0 Hz,
7.5 ms for the accelerometer and 2.8 ms for the gyro. A log's sensors lag the motion by that much, which a fit
reads as slower motors; `undelay` shifts them back.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from robo_rl.sysid.flight_log import FlightLog

SENSOR_RATE = 1000.0
"""Hz: the rate the firmware filters at."""
ACCEL_CUTOFF = 30.0
"""Hz: ACCEL_LPF_CUTOFF_FREQ."""
GYRO_CUTOFF = 80.0
"""Hz: GYRO_LPF_CUTOFF_FREQ."""


def lpf2p(cutoff: float, sample_rate: float = SENSOR_RATE) -> tuple[np.ndarray, np.ndarray]:
    """(b, a) of the firmware's 2-pole low-pass filter (module docstring)."""
    ohm = math.tan(math.pi * cutoff / sample_rate)
    root2 = 2.0 * math.cos(math.pi / 4.0)
    c = 1.0 + root2 * ohm + ohm * ohm
    b0 = ohm * ohm / c
    return np.array([b0, 2.0 * b0, b0]), np.array(
        [1.0, 2.0 * (ohm * ohm - 1.0) / c, (1.0 - root2 * ohm + ohm * ohm) / c]
    )


def group_delay(cutoff: float, sample_rate: float = SENSOR_RATE) -> float:
    """s: the filter's group delay at 0 Hz, sum(k b_k) / sum(b_k) - sum(k a_k) / sum(a_k) samples."""
    b, a = lpf2p(cutoff, sample_rate)
    k = np.arange(3)
    return float((k @ b) / b.sum() - (k @ a) / a.sum()) / sample_rate


ACCEL_DELAY = group_delay(ACCEL_CUTOFF)
GYRO_DELAY = group_delay(GYRO_CUTOFF)


def undelay(time: np.ndarray, values: np.ndarray, delay: float) -> np.ndarray:
    """(N, k) `values` sampled at `time`, shifted earlier by `delay` s: each sample the value logged `delay` later
    (linear interpolation; the last samples hold the last value)."""
    return np.column_stack([np.interp(time + delay, time, column) for column in values.T])


def without_firmware_filters(log: FlightLog) -> FlightLog:
    """`log` with its gyro and accelerometer shifted back by the firmware filters' delays."""
    force = None if log.specific_force is None else undelay(log.time, log.specific_force, ACCEL_DELAY)
    return replace(
        log,
        body_rates=undelay(log.time, log.body_rates, GYRO_DELAY),
        specific_force=force,
        source=f"{log.source}, firmware sensor filters undone",
    )
