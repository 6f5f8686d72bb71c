"""A simulated operator for learning on the RC car: what a person with a joystick does, from the car's own topics.

`PursuitDriver` drives from the profile's observation fields (the track's look-ahead points in the car frame and the
odometry's forward speed): pure pursuit towards the look-ahead point at a speed-dependent distance, with a steady
cruise speed as the setpoint of the car's ESC speed loop (the drive action is that setpoint). `SimulatedOperator`
takes over with it when the car gets close to the border or points away from the
track (after a reaction time), hands back once the car is centred and aligned again, answers reset prompts after a
while (putting the car back takes a person some seconds), and can hold the e-stop over given intervals. With
`always=True` it drives all the time: a demonstration.

It works on fields only (no simulator state), so the same operator acts through `SimLink` and, in the ROS tests,
through teleop_node's topics.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

SPEED = "odom.twist.twist.linear.x"
LATERAL = "track.lateral_offset"
HEADING = "track.heading_error"
HALF_WIDTH = "track.half_width"


@dataclass(frozen=True)
class PursuitConfig:
    cruise_speed: float = 2.2
    """m/s the driver holds: the ESC's speed setpoint it sends."""
    speed_scale: float = 5.0
    """m/s of speed setpoint per unit of the drive action (the rc_car profile's `drive.speed` scale): drive =
    cruise_speed / speed_scale."""
    lookahead_time: float = 0.3
    """Look-ahead distance per m/s of speed, s."""
    min_lookahead: float = 0.8
    """m."""
    point_spacing: float = 0.5
    """m between the track's look-ahead points (rc_car/race's `lookahead_spacing`)."""
    points: int = 10
    wheelbase: float = 0.3302
    """m (F1TENTH)."""
    max_steer: float = 0.4189
    """rad of the steering action 1."""


class PursuitDriver:
    """(fields) → action [steering, drive] in policy units."""

    def __init__(self, config: PursuitConfig = PursuitConfig()) -> None:
        self.config = config

    def __call__(self, fields: Mapping[str, float]) -> np.ndarray:
        c = self.config
        speed = fields[SPEED]
        distance = max(c.min_lookahead, c.lookahead_time * max(speed, 0.0))
        k = min(max(round(distance / c.point_spacing) - 1, 0), c.points - 1)
        x, y = fields[f"track.lookahead[{2 * k}]"], fields[f"track.lookahead[{2 * k + 1}]"]
        angle = math.atan(c.wheelbase * 2.0 * y / max(x * x + y * y, 1e-6))
        steering = float(np.clip(angle / c.max_steer, -1.0, 1.0))
        drive = float(np.clip(c.cruise_speed / c.speed_scale, -1.0, 1.0))  # the car's ESC holds the speed
        return np.array([steering, drive])


@dataclass(frozen=True)
class OperatorConfig:
    border_margin: float = 0.15
    """m: takes over this close to the track border..."""
    max_heading: float = 0.7
    """... or when the car points more than this many rad off the track direction."""
    centred: float = 0.2
    """Hands back once |lateral offset| is below this many m..."""
    aligned: float = 0.25
    """... and |heading error| below this many rad, ..."""
    moving: float = 1.0
    """... at more than this many m/s."""
    reaction_s: float = 0.1
    """s between seeing the danger and taking over."""
    reset_delay_s: float = 2.0
    """s to put the car back after a reset prompt before pressing reset."""
    always: bool = False
    """Drive all the time (a demonstration)."""
    corrects: bool = True
    """Take over near the border; False: only put the car back and press reset when asked."""
    estop: Sequence[tuple[float, float]] = ()
    """(start, end) s of time intervals holding the e-stop."""


class SimulatedOperator:
    """See the module docstring; an `Operator` of `robo_rl.sim.robot_link.SimLink`. Time is the caller's clock."""

    def __init__(self, config: OperatorConfig = OperatorConfig(), driver: PursuitDriver | None = None) -> None:
        self.config = config
        self.driver = driver or PursuitDriver()
        self.driving = config.always
        self._danger_since: float | None = None
        self._reset_at: float | None = None
        self.takeovers = 0
        """Times the operator took the car over."""
        self.prompts = 0

    def action(self, fields: Mapping[str, float], now: float) -> np.ndarray | None:
        if not all(key in fields for key in (SPEED, LATERAL, HEADING, HALF_WIDTH)):
            return None
        if not self.config.always and self.config.corrects:
            self._decide(fields, now)
        return self.driver(fields) if self.driving else None

    def _decide(self, fields: Mapping[str, float], now: float) -> None:
        c = self.config
        offset, heading = abs(fields[LATERAL]), abs(fields[HEADING])
        if self.driving:
            if offset < c.centred and heading < c.aligned and fields[SPEED] > c.moving:
                self.driving = False
            return
        if offset > fields[HALF_WIDTH] - c.border_margin or heading > c.max_heading:
            self._danger_since = now if self._danger_since is None else self._danger_since
            if now - self._danger_since >= c.reaction_s:
                self.driving, self._danger_since = True, None
                self.takeovers += 1
        else:
            self._danger_since = None

    def events(self, now: float) -> list[str]:
        if self._reset_at is not None and now >= self._reset_at:
            self._reset_at = None
            self.driving = self.config.always
            return ["reset"]
        return []

    def prompted(self, text: str, now: float) -> None:
        if "press reset" in text:
            self.prompts += 1
            self._reset_at = now + self.config.reset_delay_s

    def estopped(self, now: float) -> bool:
        return any(start <= now < end for start, end in self.config.estop)
