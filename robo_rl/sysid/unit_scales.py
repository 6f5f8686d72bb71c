"""The units a flight log's columns come in, as SI factors, and the one a column's values most likely are in when a
physical check finds them off by a factor (`robo_rl.sysid.units`)."""

from __future__ import annotations

import math

SCALES: dict[str, dict[str, float]] = {
    "time": {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9},
    "position": {"m": 1.0, "cm": 1e-2, "mm": 1e-3},
    "velocity": {"m/s": 1.0, "cm/s": 1e-2, "mm/s": 1e-3},
    "body_rates": {"rad/s": 1.0, "deg/s": math.pi / 180.0, "mrad/s": 1e-3},
    "specific_force": {"m/s^2": 1.0, "g": 9.81, "mg": 9.81e-3},
    "commands": {"fraction 0..1": 1.0, "percent": 1e-2, "PWM 0..65535": 1.0 / 65535.0},
}
"""SI value of one unit of each unit a field's column may be in."""


def likely_unit(field: str, read_unit: str, off_by: float, tolerance: float = 1.3) -> str | None:
    """The unit in which the column's raw values are the physics' values, when read as `read_unit` they come out
    `off_by` times too small (the true SI values are the read ones times `off_by`); None when no known unit is
    within `tolerance` (a factor) of that."""
    scales = SCALES.get(field, {})
    if read_unit not in scales or not math.isfinite(off_by) or off_by <= 0:
        return None
    wanted = scales[read_unit] * off_by
    unit, scale = min(scales.items(), key=lambda item: abs(math.log(item[1] / wanted)))
    return unit if abs(math.log(scale / wanted)) <= math.log(tolerance) else None
