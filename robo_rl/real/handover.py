"""Who flies or drives the vehicle: its own controller, or the policy. The hand-over protocol every vehicle shares.

A real vehicle has a controller of its own that can hold it: a Crazyflie's high-level commander hovers it, PX4's
Hold mode holds a multirotor, a car's ESC speed loop holds it stopped, joint_trajectory_controller holds an
arm's pose. The policy flies only between an explicit request and the next fault (or a request to hand back):

    vehicle --request--> ramp --ramp s--> policy
       ^                   |                 |
       +-- any fault, e-stop, stale input, the vehicle leaving our control, request, stop --+

- `vehicle`: the vehicle's controller is in charge. The node sends the vehicle's hand-back once (each vehicle's
  link does what its controller needs: crazyswarm2's go_to and notify_setpoints_stop, PX4's mode switch to Hold)
  and then, for a vehicle held by the safe command (the car's speed 0, the arm's measured pose), the profile's safe
  command; a vehicle whose controller holds it only without our setpoints (`SILENT_VEHICLES`: never zero thrust in
  the air) gets nothing. The policy is not evaluated; its memory and integrals restart when it next takes over. An
  asked take-over waits while a fault lasts or the vehicle is not ready (`VehicleLink.takeover_wait`: PX4 not yet
  in offboard, which its link prepares by streaming the hold setpoint).
- `ramp`: the policy's command is blended from the vehicle's hold command (`HandoverSettings.hold`, e.g. hover
  thrust and zero body rates): `hold + a * (policy - hold)` with `a` rising linearly from `dt / ramp` to 1 over
  `ramp` seconds, so the first command differs from the hold command by at most `dt / ramp` of the policy's.
- `policy`: the policy's own command (after the safety filter, as always).

A fault of any kind (stale or missing inputs, the e-stop, the safety filter's non-finite values, a spent chunk) or
the vehicle leaving our control (`VehicleLink.control_lost`: PX4 switched out of offboard) in `ramp` or `policy`
hands back within the same control period: the command of that period is already the vehicle's. Control never
returns to the policy by itself: a new request is needed (a safe default: nothing moves the robot unless asked).
Without a hand-over section a profile behaves as before, the policy in control from activation.

ROS-free and clock-injected: the node calls `request_policy`/`request_vehicle` from its `vehicle_request` topic
(through `PolicyNodeCore.request`) and `step` once per command (through `PolicyController.step`).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

import numpy as np

from robo_rl.config import ConfigError

VEHICLES = ("crazyswarm2", "px4", "stop", "hold_measured")
"""What holds the vehicle while the policy does not: crazyswarm2's high-level commander (hover), PX4's position
mode, a car's ESC speed loop at speed 0 (the safe command), joint_trajectory_controller at the measured pose."""
STARTS = ("request", "activate")
"""When the policy first takes over: on an explicit request (the default), or at the node's activation."""
SILENT_VEHICLES = ("crazyswarm2", "px4")
"""Vehicles whose controller holds them only while the node's setpoints stop: the safe command is not sent."""
HISTORY = 16
"""Transitions kept for /diagnostics."""


class Mode(str, Enum):
    """Who is in control."""

    VEHICLE = "vehicle"
    RAMP = "ramp"
    POLICY = "policy"


@dataclass(frozen=True)
class HandoverSettings:
    """A profile's `handover:` section. Its checks raise ConfigError naming the key (reported as `handover.KEY`)."""

    vehicle: str
    """One of `VEHICLES`: the controller that holds the vehicle while the policy does not."""
    ramp: float = 1.0
    """Seconds over which the policy's command is blended in from the hold command; 0: at once."""
    hold: tuple[float, ...] = ()
    """The command `(action_dim,)` in policy units that matches what the vehicle's controller does while it holds
    (hover thrust and zero rates; speed 0): where the ramp starts. Empty: the actions' safe values."""
    start: str = "request"
    """One of `STARTS`."""

    def __post_init__(self) -> None:
        if self.vehicle not in VEHICLES:
            raise ConfigError(f"vehicle: must be one of {VEHICLES}, got {self.vehicle!r}")
        if not (math.isfinite(self.ramp) and self.ramp >= 0):
            raise ConfigError(f"ramp: must be finite and >= 0 s, got {self.ramp}")
        if not all(math.isfinite(value) for value in self.hold):
            raise ConfigError(f"hold: must be finite, got {list(self.hold)}")
        if self.start not in STARTS:
            raise ConfigError(f"start: must be one of {STARTS}, got {self.start!r}")

    @property
    def silent(self) -> bool:
        """The vehicle's controller holds it only while the node sends no setpoints."""
        return self.vehicle in SILENT_VEHICLES


@dataclass(frozen=True)
class Transition:
    """One change of who is in control."""

    time: float
    before: Mode
    after: Mode
    reason: str

    def text(self) -> str:
        return f"{self.before.value} -> {self.after.value} at {self.time:.3f} s: {self.reason}"


@dataclass(frozen=True)
class HandoverStep:
    """The decision for one control period."""

    mode: Mode
    """Who is in control this period."""
    command: np.ndarray | None
    """The command to filter and send `(action_dim,)` (the policy's, blended during the ramp); None while the
    vehicle holds."""
    blend: float
    """The policy's share of the command, 0 (the vehicle's) to 1."""
    handed_back: bool = False
    """Control went back to the vehicle in this period: its output sends the hand-back now."""
    took_over: bool = False
    """The policy's control began in this period (its memory and integrals start afresh)."""
    waiting: bool = False
    """A take-over is asked and waits (a fault lasts, or the vehicle is not ready for it yet, e.g. PX4 not yet in
    offboard): the vehicle link prepares it (PX4: streams the hold setpoint with the heartbeat)."""


class Handover:
    """The state machine of the module docstring, for a policy with `action_dim` actions at period `dt` s.

    `hold` gives the hold command at the moment a ramp begins (a fixed vector, or e.g. the measured pose of an
    arm); `clock` (s) stamps the transitions.
    """

    def __init__(
        self,
        settings: HandoverSettings,
        dt: float,
        hold: Callable[[], np.ndarray],
        clock: Callable[[], float],
    ) -> None:
        self.settings = settings
        self.dt = dt
        self.hold = hold
        self.clock = clock
        self.mode = Mode.VEHICLE
        self.requested = False
        """A request for the policy to take over waits for the next period."""
        self.release = ""
        """A request to hand back waits for the next period (its reason)."""
        self.ramp_steps = 0
        self.ramp_from: np.ndarray | None = None
        self.transitions: deque[Transition] = deque(maxlen=HISTORY)
        self.handbacks = 0

    def restart(self) -> None:
        """Activation: the vehicle holds; the policy takes over at once when the settings say `activate`."""
        self.mode = Mode.VEHICLE
        self.requested = self.settings.start == "activate"
        self.release = ""

    def request_policy(self) -> None:
        """The operator asks the policy to take over (from the next period; ignored while it already has)."""
        if self.mode is Mode.VEHICLE:
            self.requested = True

    def request_vehicle(self, reason: str = "hand-back requested") -> None:
        """The operator asks for the vehicle's controller (from the next period)."""
        self.requested = False
        if self.mode is not Mode.VEHICLE:
            self.release = reason

    def step(
        self,
        policy: Callable[[], np.ndarray | None],
        fault: Callable[[], str],
        gate: Callable[[], str] = lambda: "",
        lost: Callable[[], str] = lambda: "",
    ) -> HandoverStep:
        """This period's decision. `policy()` evaluates the policy and returns its action (None: it gave none,
        a fault); `fault()` says why the policy may not command now ("" when it may); `gate()` why the vehicle
        cannot be taken over yet ("" when it can: `VehicleLink.takeover_wait`); `lost()` why the vehicle no longer
        follows the policy ("" while it does: `VehicleLink.control_lost`, e.g. PX4 switched out of offboard by its
        pilot or failsafe), which hands back like a fault. None is called while the vehicle holds and no take-over
        is asked."""
        if self.release:
            return self.hand_back(self.release)
        if self.mode is Mode.VEHICLE:
            if not self.requested:
                return HandoverStep(Mode.VEHICLE, None, 0.0)
            if fault() or gate():  # a request waits while a fault lasts or the vehicle is not ready
                return HandoverStep(Mode.VEHICLE, None, 0.0, waiting=True)
            return self._take_over(policy)
        why = fault() or lost()
        action = None if why else policy()
        if action is None:
            return self.hand_back(why or "the policy gave no action")
        return self._command(action, took_over=False)

    def _take_over(self, policy: Callable[[], np.ndarray | None]) -> HandoverStep:
        action = policy()
        if action is None:
            return HandoverStep(Mode.VEHICLE, None, 0.0)
        self.requested = False
        self.ramp_from = np.asarray(self.hold(), dtype=np.float64)
        self.ramp_steps = 0
        after = Mode.RAMP if self.settings.ramp > 0 else Mode.POLICY
        self._record(after, "take-over requested")
        return self._command(action, took_over=True)

    def _command(self, action: np.ndarray, took_over: bool) -> HandoverStep:
        if self.mode is Mode.POLICY:
            return HandoverStep(Mode.POLICY, np.asarray(action, dtype=np.float64), 1.0, took_over=took_over)
        assert self.ramp_from is not None
        self.ramp_steps += 1
        blend = min(1.0, self.ramp_steps * self.dt / self.settings.ramp)
        command = self.ramp_from + blend * (np.asarray(action, dtype=np.float64) - self.ramp_from)
        if blend >= 1.0:
            self._record(Mode.POLICY, f"ramp of {self.settings.ramp:g} s done")
        return HandoverStep(Mode.RAMP if blend < 1.0 else Mode.POLICY, command, blend, took_over=took_over)

    def hand_back(self, reason: str) -> HandoverStep:
        """Control goes back to the vehicle now (a fault found after the command was made, e.g. a non-finite
        action); a step that says so, `handed_back` only when the policy was in control."""
        self.release = ""
        self.requested = False
        if self.mode is Mode.VEHICLE:
            return HandoverStep(Mode.VEHICLE, None, 0.0)
        self.handbacks += 1
        self._record(Mode.VEHICLE, reason)
        return HandoverStep(Mode.VEHICLE, None, 0.0, handed_back=True)

    def _record(self, after: Mode, reason: str) -> None:
        self.transitions.append(Transition(self.clock(), self.mode, after, reason))
        self.mode = after

    def diagnostics(self) -> dict[str, object]:
        """`handover_mode`, `handover_requested`, `handbacks` and the last transition."""
        last = self.transitions[-1].text() if self.transitions else ""
        return {
            "handover_mode": self.mode.value,
            "handover_vehicle": self.settings.vehicle,
            "handover_requested": self.requested,
            "handbacks": self.handbacks,
            "handover_last": last,
        }


REQUESTS = ("policy", "vehicle")
"""The requests every vehicle takes: the policy takes over, the vehicle's controller takes back; a vehicle link may
take more (crazyswarm2: takeoff, land)."""


class VehicleLink(Protocol):
    """What a vehicle's output does besides the setpoints (crazyswarm2's commander, PX4's modes): ROS-free."""

    def on_step(self, step: HandoverStep, fields: Mapping[str, float], observed: Mapping[str, float]) -> bool:
        """Every period: `step` says who is in control, `fields` the command message fields made for it (the safe
        command's while the vehicle holds), `observed` the latest observation fields. True: the link has sent
        what the vehicle needs this period, the command is not published."""
        ...

    def request(self, word: str) -> str:
        """An operator's request other than `REQUESTS` (e.g. "takeoff"): "" when accepted, else why not."""
        ...

    def ready(self) -> str:
        """Why a take-over is refused now ("" when it may be asked), e.g. the thrust lock is not released."""
        ...

    def takeover_wait(self) -> str:
        """Why an asked take-over waits ("" when it may happen now), e.g. PX4 not yet in offboard."""
        ...

    def control_lost(self) -> str:
        """Why the vehicle no longer follows the policy's commands ("" while it does), e.g. PX4 left offboard."""
        ...

    def diagnostics(self) -> dict[str, object]: ...


def hold_vector(settings: HandoverSettings, safe: Sequence[float]) -> np.ndarray:
    """The fixed hold command: the settings' `hold`, else the actions' safe values; ValueError on a wrong length."""
    values = settings.hold or tuple(safe)
    if len(values) != len(safe):
        raise ValueError(f"handover.hold: {len(values)} values for {len(safe)} actions")
    return np.asarray(values, dtype=np.float64)
