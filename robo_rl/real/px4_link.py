"""PX4 vehicle requests and the hand-back, without ROS: when policy_node sends the heartbeat and each
VehicleCommand (offboard, arm, Hold), how it follows PX4's answers, and what it sends while PX4 takes the vehicle
back (`Px4Vehicle`). The protocol's constants, the setpoint helpers and the fault hold are `robo_rl.real.px4`'s,
whose docstring tells the whole sequence."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from robo_rl.real.handover import HandoverStep, Mode
from robo_rl.real.px4 import (
    ACK_ACCEPTED,
    ACK_RESULTS,
    HANDBACK_ATTEMPTS,
    HANDBACK_RETRY_S,
    MAV_MODE_FLAG_CUSTOM_MODE_ENABLED,
    NAVIGATION_STATE_OFFBOARD,
    PX4_CUSTOM_MAIN_MODE_AUTO,
    PX4_CUSTOM_MAIN_MODE_OFFBOARD,
    PX4_CUSTOM_SUB_MODE_AUTO_LOITER,
    REQUEST_AFTER_HEARTBEATS,
    REQUEST_ATTEMPTS,
    RETRY_AFTER_S,
    STREAM_BEFORE_S,
    VEHICLE_CMD_COMPONENT_ARM_DISARM,
    VEHICLE_CMD_DO_SET_MODE,
    hold_setpoint,
)


@dataclass(frozen=True)
class VehicleRequest:
    """One VehicleCommand: `command` with `param1`, `param2`, from outside PX4."""

    name: str
    command: int
    param1: float
    param2: float = 0.0
    param3: float = 0.0

    def fields(
        self, now_us: int, target_system: int = 1, target_component: int = 1, confirmation: int = 0
    ) -> dict[str, object]:
        """The message fields: for MAVLink system `target_system`, component `target_component` (PX4's MAV_SYS_ID
        and its autopilot component, 1 and 1 by default); `confirmation` counts the resends."""
        return {
            "timestamp": now_us,
            "command": self.command,
            "param1": self.param1,
            "param2": self.param2,
            "param3": self.param3,
            "target_system": target_system,
            "target_component": target_component,
            "source_system": 1,
            "source_component": 1,
            "confirmation": confirmation,
            "from_external": True,
        }


OFFBOARD_REQUEST = VehicleRequest(
    "offboard", VEHICLE_CMD_DO_SET_MODE, MAV_MODE_FLAG_CUSTOM_MODE_ENABLED, PX4_CUSTOM_MAIN_MODE_OFFBOARD
)
ARM_REQUEST = VehicleRequest("arm", VEHICLE_CMD_COMPONENT_ARM_DISARM, 1.0)
HOLD_REQUEST = VehicleRequest(
    "hold",
    VEHICLE_CMD_DO_SET_MODE,
    MAV_MODE_FLAG_CUSTOM_MODE_ENABLED,
    PX4_CUSTOM_MAIN_MODE_AUTO,
    PX4_CUSTOM_SUB_MODE_AUTO_LOITER,
)
"""The hand-back: PX4's Hold mode (AUTO_LOITER), which holds position without stick input."""


@dataclass
class RequestState:
    """One request's progress: sends so far, when last sent, PX4's last answer, the outcome."""

    request: VehicleRequest
    sends: int = 0
    sent_at: float = 0.0
    answer: str = ""
    outcome: str = ""
    """Empty while pending, "accepted", or "gave up"."""

    def report(self) -> str:
        if not self.sends:
            return "waiting"
        answer = f" (last answer: {self.answer})" if self.answer and self.outcome != "accepted" else ""
        status = self.outcome or "pending"
        return f"{status} after {self.sends} send{'s' if self.sends > 1 else ''}{answer}"


class OffboardLink:
    """When to send the heartbeat and the requests: `on_command(published, fault, now)` for every setpoint
    decision, `heartbeat_due(now)` at HEARTBEAT_HZ, `requests(now)` with each heartbeat once the stream has run long
    enough (each with its `confirmation`), `on_ack(command, result)` for each VehicleCommandAck."""

    def __init__(self, offboard: bool, arm: bool, staleness: float) -> None:
        wanted = [r for r, asked in ((OFFBOARD_REQUEST, offboard), (ARM_REQUEST, arm)) if asked]
        self.states = [RequestState(request) for request in wanted]
        self.staleness = staleness
        self.last_command: float | None = None
        self.faulted = False
        self.heartbeats = 0

    def restart(self) -> None:
        """The policy takes over again: the asked requests start afresh after a new run of heartbeats (PX4 left
        offboard at the last hand-back, so it must be asked again)."""
        self.states = [RequestState(state.request) for state in self.states]
        self.heartbeats = 0

    def on_command(self, published: bool, fault: bool, now: float) -> None:
        """A setpoint decision: `published` keeps the heartbeat going, silence stops it; no request goes out
        while a `fault` lasts (the fault hold's setpoints are published)."""
        self.last_command = now if published else None
        self.faulted = fault

    def heartbeat_due(self, now: float) -> bool:
        """Send a heartbeat now: only while setpoints are published (the last one within `staleness` s)."""
        flowing = self.last_command is not None and now - self.last_command <= self.staleness
        if flowing:
            self.heartbeats += 1
        return flowing

    def requests(self, now: float) -> list[tuple[VehicleRequest, int]]:
        """The request to send now with its confirmation (0 first, then 1, 2, ...): the first pending one, after the
        first REQUEST_AFTER_HEARTBEATS heartbeats (1 s of setpoints), again RETRY_AFTER_S after a refusal or an
        unanswered send, at most REQUEST_ATTEMPTS sends; one that gives up ends the sequence (no arming after a
        refused mode switch)."""
        state = self._current()
        if self.faulted or self.heartbeats <= REQUEST_AFTER_HEARTBEATS or state is None:
            return []
        if state.sends and now - state.sent_at < RETRY_AFTER_S:
            return []
        if state.sends >= REQUEST_ATTEMPTS:
            state.outcome = "gave up"
            return []
        state.sends += 1
        state.sent_at = now
        return [(state.request, state.sends - 1)]

    def on_ack(self, command: int, result: int) -> str:
        """PX4's answer to a command: recorded for the pending request with that command (others are ignored);
        returns the words for the answer ("" when it was not for a pending request)."""
        state = self._current()
        if state is None or not state.sends or state.request.command != command:
            return ""
        state.answer = ACK_RESULTS.get(result, f"result {result}")
        if result == ACK_ACCEPTED:
            state.outcome = "accepted"
        return state.answer

    def _current(self) -> RequestState | None:
        for state in self.states:
            if state.outcome == "gave up":
                return None
            if not state.outcome:
                return state
        return None

    def offboard_accepted(self) -> bool:
        """PX4 accepted our offboard request since the last take-over."""
        return any(s.request is OFFBOARD_REQUEST and s.outcome == "accepted" for s in self.states)

    def gave_up(self) -> RequestState | None:
        """The request PX4 refused REQUEST_ATTEMPTS times (or never answered), if any."""
        return next((s for s in self.states if s.outcome == "gave up"), None)

    def diagnostics(self) -> dict[str, object]:
        """`px4_request_<name>`: each request's state, e.g. "accepted after 2 sends"."""
        return {f"px4_request_{s.request.name}": s.report() for s in self.states}


# ----------------------------------------------------------------------------------------------------- hand-back


class Px4HandBack:
    """The hand-back to PX4's Hold mode (the module docstring), stepped by time: `start(now)` when control goes back
    to the vehicle, then each period `setpoint(now)` (the hold setpoint, or None: silent) and `due(now)` (the
    confirmation of a mode-switch send due now, or None); PX4's answers through `on_ack` and `on_nav_state`.

    Phases: "" (no hand-back since the last take-over), "switching" (hold setpoints, the request sent until PX4
    accepts), "accepted" (PX4 holds the vehicle: silent), "gave up" (not accepted within `hold` s: silent, PX4's
    offboard-loss failsafe acts)."""

    def __init__(self, hold: float, hover_thrust: float) -> None:
        if not (math.isfinite(hold) and hold > 0 and 0 < hover_thrust <= 1):
            raise ValueError(f"hand-back hold {hold} s must be > 0 and hover thrust {hover_thrust} in (0, 1]")
        self.hold = hold
        self.thrust = (0.0, 0.0, -hover_thrust)
        self.phase = ""
        self.since = 0.0
        self.sends = 0
        self.sent_at = 0.0
        self.answer = ""
        self.how = ""
        self.nav_state: int | None = None
        """PX4's last reported nav_state (None: no VehicleStatus read)."""

    def reset(self) -> None:
        """The policy took over: no hand-back pending."""
        self.phase, self.sends, self.answer, self.how = "", 0, "", ""

    def start(self, now: float, offboard_acked: bool = False) -> None:
        """Control went back to the vehicle at `now` (s, monotonic). When PX4 reports a mode other than offboard
        (and did not just accept our offboard request, `offboard_acked`), it is not flying our setpoints: nothing to
        hand back, and a pilot's mode is not overridden."""
        self.phase, self.since, self.sends, self.answer, self.how = "switching", now, 0, "", ""
        if self.nav_state is not None and self.nav_state != NAVIGATION_STATE_OFFBOARD and not offboard_acked:
            self.phase, self.how = "accepted", f"not in offboard: nav_state {self.nav_state}"

    def setpoint(self, now: float) -> dict[str, float] | None:
        """The hold setpoint while PX4 has not accepted and the hold lasts; None (silence) otherwise."""
        if self.phase != "switching":
            return None
        if now - self.since >= self.hold - 1e-9:
            self.phase = "gave up"
            return None
        return hold_setpoint(self.thrust)

    def due(self, now: float) -> int | None:
        """The confirmation (0, 1, ...) of the mode-switch send due now; None when none is."""
        if self.phase != "switching" or self.sends >= HANDBACK_ATTEMPTS:
            return None
        if self.sends and now - self.sent_at < HANDBACK_RETRY_S - 1e-9:
            return None
        self.sends += 1
        self.sent_at = now
        return self.sends - 1

    def on_ack(self, command: int, result: int) -> str:
        """PX4's answer to a command: taken while switching, for the mode switch (words, else "")."""
        if self.phase != "switching" or not self.sends or command != HOLD_REQUEST.command:
            return ""
        self.answer = ACK_RESULTS.get(result, f"result {result}")
        if result == ACK_ACCEPTED:
            self.phase, self.how = "accepted", "acknowledged"
        return self.answer

    def on_nav_state(self, nav_state: int) -> None:
        """PX4's VehicleStatus: out of offboard while switching, PX4 is in charge (it switched, or its failsafe or
        the pilot did)."""
        self.nav_state = nav_state
        if self.phase == "switching" and nav_state != NAVIGATION_STATE_OFFBOARD:
            self.phase, self.how = "accepted", f"nav_state {nav_state}"

    def report(self) -> str:
        if not self.phase:
            return ""
        sends = f"{self.sends} send{'s' if self.sends != 1 else ''}"
        if self.phase == "accepted":
            return f"PX4 holds ({self.how} after {sends})" if self.sends else f"PX4 holds ({self.how})"
        if self.phase == "switching":
            return f"switching to Hold ({sends})"
        answer = f", last answer: {self.answer}" if self.answer else ", no answer"
        return f"gave up after {sends}{answer}: PX4's offboard-loss failsafe acts"


class Px4Vehicle:
    """PX4's side of the hand-over (`robo_rl.real.handover.VehicleLink`), without ROS: while the vehicle holds, the
    hand-back's hold setpoints and mode switch (`Px4HandBack`) go out through `send_setpoint` and `send_request`;
    while the policy commands, nothing here (the setpoints go out as usual). `link` is the heartbeat's
    `OffboardLink`: it runs while hold setpoints are sent, and its requests start afresh at each take-over."""

    def __init__(
        self,
        handback: Px4HandBack,
        link: OffboardLink,
        send_setpoint: Callable[[dict[str, float]], None],
        send_request: Callable[[VehicleRequest, int], None],
        clock: Callable[[], float],
    ) -> None:
        self.handback = handback
        self.link = link
        self.send_setpoint = send_setpoint
        self.send_request = send_request
        self.clock = clock
        self.streaming_since: float | None = None
        self.left_offboard = False
        """PX4 reported leaving offboard while the policy flew (`control_lost`)."""
        """When the hold setpoints of an asked take-over began (None: not streaming)."""

    def on_step(self, step: HandoverStep, fields: Mapping[str, float], observed: Mapping[str, float]) -> bool:
        now = self.clock()
        if step.waiting and self.handback.phase != "switching":
            self._stream(now)
            return True
        self.streaming_since = None
        if step.took_over:
            self.handback.reset()
            self.left_offboard = False
        if step.handed_back:
            self.handback.start(now, offboard_acked=self.link.offboard_accepted() and not self.left_offboard)
        if step.mode is not Mode.VEHICLE:
            return False
        sent = self.handback.setpoint(now)
        self.link.on_command(sent is not None, True, now)
        if sent is not None:
            self.send_setpoint(sent)
            confirmation = self.handback.due(now)
            if confirmation is not None:
                self.send_request(HOLD_REQUEST, confirmation)
        return True

    def _stream(self, now: float) -> None:
        """An asked take-over waits for offboard: the hold setpoint (zero rates at hover thrust: what Hold does)
        with the heartbeat, from which PX4 may be switched to offboard (by the pilot, or by the offboard request
        when px4_offboard asks it); PX4 ignores the setpoints until then."""
        if self.streaming_since is None:
            self.streaming_since = now
            self.link.restart()  # the offboard request counts its heartbeats from here
        self.link.on_command(True, False, now)
        self.send_setpoint(hold_setpoint(self.handback.thrust))

    def takeover_wait(self) -> str:
        """An asked take-over begins once PX4 flies our setpoints: its VehicleStatus says offboard; without
        VehicleStatus (px4_version 1.15), once PX4 accepted our offboard request, or else after STREAM_BEFORE_S of
        hold setpoints (the stream PX4 needs before it may enter offboard)."""
        if self.handback.phase == "switching":
            return "PX4 has not taken the last hand-back yet"
        nav_state = self.handback.nav_state
        if nav_state is not None:
            return "" if nav_state == NAVIGATION_STATE_OFFBOARD else f"PX4 is not in offboard (nav_state {nav_state})"
        if self.link.offboard_accepted():
            return ""
        since = self.streaming_since
        if since is None or self.clock() - since < STREAM_BEFORE_S - 1e-9:
            return "streaming the hold setpoint before offboard"
        return ""

    def control_lost(self) -> str:
        """PX4 left offboard while the policy flies (its pilot switched modes, or a failsafe acted): PX4 no longer
        executes our setpoints, so control goes back (and the hand-back sends nothing: PX4 is not in offboard)."""
        nav_state = self.handback.nav_state
        if nav_state is None or nav_state == NAVIGATION_STATE_OFFBOARD:
            return ""
        self.left_offboard = True  # read after our offboard request's ack: the hand-back must not switch modes
        return f"PX4 left offboard (nav_state {nav_state})"

    def request(self, word: str) -> str:
        return f"unknown request {word!r} (PX4 takes policy, vehicle)"

    def ready(self) -> str:
        """A take-over waits until PX4 has answered the last hand-back (accepted, or the hold has run out)."""
        if self.handback.phase == "switching":
            return "PX4 has not taken the last hand-back yet"
        return ""

    def on_ack(self, command: int, result: int) -> str:
        """PX4's answer: the hand-back's while it switches, else the offboard link's requests'."""
        if self.handback.phase == "switching":
            return self.handback.on_ack(command, result)
        return self.link.on_ack(command, result)

    def diagnostics(self) -> dict[str, object]:
        return {"px4_handback": self.handback.report()}
