"""PX4's commander as far as a hand-over meets it: the stand-in of the PX4 rehearsal (`robo_rl.sim.rehearsal.px4`)
and of tests/real/test_px4_handover.py.

The stand-in (`Commander`) restates the rules of PX4-Autopilot's commander as its source defines them (read in
PX4/PX4-Autopilot; file and commit as stored):
- src/modules/commander/Commander.cpp (0066393e), Commander::handle_command, case VEHICLE_CMD_DO_SET_MODE: a
  command addressed to another system/component (neither 0) is not handled; base mode flag 1 (custom mode) selects
  PX4's main mode from param2 and, for AUTO, the sub mode from param3 (LOITER -> NAVIGATION_STATE_AUTO_LOITER,
  OFFBOARD -> NAVIGATION_STATE_OFFBOARD); the mode changes only when the mode can run, and the answer is ACCEPTED,
  else TEMPORARILY_REJECTED.
- src/modules/commander/px4_custom_mode.h (009a2cd4): main modes MANUAL 1 .. POSCTL 3, AUTO 4, ACRO 5, OFFBOARD 6;
  AUTO sub modes READY 1, TAKEOFF 2, LOITER 3.
- src/modules/commander/ModeUtil/mode_requirements.cpp (00030adc), getModeRequirements: POSCTL requires a manual
  control signal; AUTO_LOITER on a multirotor requires global and local position; OFFBOARD requires the offboard
  signal. HealthAndArmingChecks/checks/modeCheck.cpp (00030adc): a missing manual control signal clears the can-run
  bit of every mode that requires it (so no POSCTL without RC or joystick), as a missing position does for the modes
  requiring position.
- HealthAndArmingChecks/checks/offboardCheck.cpp (02540170): the offboard signal is present while the last
  OffboardControlMode has a setpoint flag set and is younger than COM_OF_LOSS_T.
- src/modules/commander/failsafe/failsafe.cpp (00fdcaa3), Failsafe::fromOffboardLossActParam: on offboard loss the
  vehicle goes to the mode COM_OBL_RC_ACT names (Position by default, or Altitude, Stabilized, Return, Land, Hold,
  Terminate, Disarm).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from robo_rl.real import px4

ACCEPTED, TEMPORARILY_REJECTED, UNSUPPORTED = 0, 1, 3
"""VehicleCommandAck results (MAVLink MAV_RESULT)."""
NAV_AUTO_LAND = 18
NAV_AUTO_TAKEOFF = 17


@dataclass
class Commander:
    """PX4's commander as far as the hand-over meets it (the module docstring's rules), stepped by the harness."""

    position_valid: bool = True
    manual_control: bool = False
    of_loss_t: float = 1.0
    """COM_OF_LOSS_T (s)."""
    offboard_loss_mode: int = px4.NAVIGATION_STATE_POSCTL
    """The nav state COM_OBL_RC_ACT leads to (fromOffboardLossActParam; Position mode by default)."""
    nav_state: int = px4.NAVIGATION_STATE_AUTO_LOITER
    """The vehicle took off and holds in PX4's Hold mode."""
    heartbeat_at: float = -1e9
    executed: list[tuple[float, dict[str, float]]] = field(default_factory=list)
    """The rates setpoints PX4 executed (received while in OFFBOARD)."""
    received: list[tuple[float, dict[str, float]]] = field(default_factory=list)
    commands: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    inbox: list[dict[str, Any]] = field(default_factory=list)
    modes: list[tuple[float, int, str]] = field(default_factory=list)

    def offboard_signal(self, now: float) -> bool:
        return now < self.heartbeat_at + self.of_loss_t

    def heartbeat(self, now: float, flags: dict[str, bool]) -> None:
        if any(flags.values()):
            self.heartbeat_at = now

    def setpoint(self, now: float, fields: dict[str, float]) -> None:
        self.received.append((now, dict(fields)))
        if self.nav_state == px4.NAVIGATION_STATE_OFFBOARD:
            self.executed.append((now, dict(fields)))

    def command(self, now: float, fields: dict[str, Any]) -> None:
        self.commands.append((now, fields))
        self.inbox.append(fields)

    def can_run(self, nav_state: int, now: float) -> bool:
        if nav_state == px4.NAVIGATION_STATE_POSCTL:
            return self.manual_control and self.position_valid
        if nav_state == px4.NAVIGATION_STATE_AUTO_LOITER:
            return self.position_valid
        if nav_state == px4.NAVIGATION_STATE_OFFBOARD:
            return self.offboard_signal(now)
        return False

    def step(self, now: float) -> list[tuple[int, int]]:
        """One commander cycle: the commands received since the last one answered (command, result), then the
        offboard-loss failsafe."""
        answers = [answer for fields in self.inbox if (answer := self._handle(fields, now)) is not None]
        self.inbox.clear()
        if self.nav_state == px4.NAVIGATION_STATE_OFFBOARD and not self.offboard_signal(now):
            self._switch(self.offboard_loss_mode, now, "offboard loss")
        return answers

    def _handle(self, fields: dict[str, Any], now: float) -> tuple[int, int] | None:
        if fields["target_system"] not in (0, 1) or fields["target_component"] not in (0, 1):
            return None
        if fields["command"] != px4.VEHICLE_CMD_DO_SET_MODE or not int(fields["param1"]) & 1:
            return (fields["command"], UNSUPPORTED)  # as far as this stand-in goes
        main, sub = int(fields["param2"]), int(fields["param3"])
        wanted = {3: px4.NAVIGATION_STATE_POSCTL, 6: px4.NAVIGATION_STATE_OFFBOARD}.get(main)
        if main == 4:
            wanted = {3: px4.NAVIGATION_STATE_AUTO_LOITER, 6: NAV_AUTO_LAND}.get(sub)
        if wanted is None or not self.can_run(wanted, now):
            return (fields["command"], TEMPORARILY_REJECTED)
        self._switch(wanted, now, "command")
        return (fields["command"], ACCEPTED)

    def _switch(self, nav_state: int, now: float, why: str) -> None:
        if nav_state != self.nav_state:
            self.nav_state = nav_state
            self.modes.append((now, nav_state, why))
