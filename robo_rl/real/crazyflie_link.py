"""The Crazyflie's side of the hand-over through crazyswarm2: take-off, hold, hand-back and landing by the firmware's
high-level commander, the policy in rate mode (cmd_vel_legacy) only in between. ROS-free: it emits the operations
through injected callables, `send_twist(fields)` (a geometry_msgs/Twist on cmd_vel_legacy) and
`call(service, request, then)` (a crazyswarm2 service of the vehicle's namespace; `then` runs once it has answered).

Why each step, from bitcraze/crazyflie-firmware (tag 2026.08-2-g2a18fc29, the stand-in
robo_rl.sim.quadrotor.crazyflie_commander restates these rules and tests/real/test_crazyflie_handover.py checks them):
- The legacy RPYT commander's thrust lock is set from boot and opens only on a packet with thrust exactly 0
  (crtp_commander_rpyt.c). In the air that packet would cut the motors, so the take-off sequence opens it on the
  ground: `unlock_packets` zero Twists (one per period), then notify_setpoints_stop (commander.c's
  commanderRelaxPriority: the high-level commander's setpoints count again), then the high-level take-off. A
  vehicle this node did not take off may still be locked: the policy's first packet would give zero thrust in the
  air, so `ready` refuses the take-over.
- The hand-back, in the period the handover says so: the node stops sending cmd_vel_legacy; the link sends the
  high-level go_to first, relative (0, 0, 0) with yaw offset 0 over `handback_duration`: the plan, stopped by the
  policy's packets, starts from the firmware's own current position, velocity and yaw (crtp_commander_high_level.c
  go_to, planner.c plan_go_to_from) and holds there; it is accepted while the low-level priority still holds.
  Only once the go_to has been answered comes notify_setpoints_stop, and the plan's setpoints take over at once.
  Notifying first would leave a stopped plan in charge, whose setpoint is the null one: motors off. A relative goal
  needs no odometry, which may be the very input whose staleness caused the hand-back.
- While the vehicle holds, nothing goes on cmd_vel_legacy (a packet would take the priority back and stop the plan).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from enum import Enum

from robo_rl.real.handover import HandoverStep, Mode
from robo_rl.real.profile import CrazyswarmSettings

ZERO_TWIST: dict[str, float] = {f"{part}.{axis}": 0.0 for part in ("linear", "angular") for axis in "xyz"}
"""The unlock packet: crazyswarm2 sends linear.z = 0 as thrust 0 (and zero roll, pitch and yaw rate)."""
ALL_GROUPS = 0
"""crazyswarm2's group_mask 0: every Crazyflie (the firmware's ALL_GROUPS)."""
POSITION_Z = "odom.pose.pose.position.z"
"""The observed field of the vehicle's height (m), crazyswarm2's odometry."""
LINK_REQUESTS = ("takeoff", "land")

Call = Callable[[str, dict[str, object], Callable[[], None] | None], None]
"""`call(service, request, then)`: one crazyswarm2 service request; `then` (or None) runs after its answer."""


class Phase(str, Enum):
    """Where the vehicle is, as far as this link knows."""

    GROUND = "ground"
    UNLOCKING = "unlocking"
    CLIMBING = "climbing"
    FLYING = "flying"
    LANDING = "landing"


class CrazyflieLink:
    """`robo_rl.real.handover.VehicleLink` for crazyswarm2 (driver crazyswarm2): requests "takeoff" and "land";
    `clock` (s) times the climb and the landing."""

    def __init__(
        self,
        settings: CrazyswarmSettings,
        send_twist: Callable[[dict[str, float]], None],
        call: Call,
        clock: Callable[[], float],
    ) -> None:
        self.settings = settings
        self.send_twist = send_twist
        self.call = call
        self.clock = clock
        self.lock = threading.RLock()
        self.phase = Phase.GROUND
        self.unlocked = False
        """This link sent the zero-thrust packets since it started: the firmware's thrust lock is open."""
        self.packets_left = 0
        self.notify_due = False
        self.until = 0.0
        """End of the climb or of the landing (s)."""
        self.mode = Mode.VEHICLE
        """Who was in control at the last period."""
        self.height = float("nan")
        """The last observed height (m); nan before the first odometry."""
        self.handbacks = 0
        self.last = ""
        """The last operation sent, for /diagnostics."""

    # ------------------------------------------------------------------------------------------------- requests

    def request(self, word: str) -> str:
        """ "takeoff" (on the ground only) or "land" (while the vehicle's controller holds it): "" when accepted,
        else why not."""
        with self.lock:
            self._advance()
            if word == "takeoff":
                return self._request_takeoff()
            if word == "land":
                return self._request_land()
            return f"unknown request {word!r} (crazyswarm2 takes policy, vehicle, {', '.join(LINK_REQUESTS)})"

    def _request_takeoff(self) -> str:
        if self.phase is not Phase.GROUND:
            return f"the vehicle is {self.phase.value}, not on the ground"
        if not self.height < self.settings.ground_height:  # also nan: no odometry yet
            return (
                f"odometry z {self.height:.3f} m is not below ground_height {self.settings.ground_height:g} m: "
                "a zero-thrust unlock packet would cut the motors in the air"
            )
        self.phase = Phase.UNLOCKING
        self.packets_left = self.settings.unlock_packets
        self.notify_due = False
        self.unlocked = False
        return ""

    def _request_land(self) -> str:
        if self.mode is not Mode.VEHICLE:
            return "the policy is in control: request 'vehicle' first"
        if self.phase not in (Phase.CLIMBING, Phase.FLYING):
            return f"the vehicle is {self.phase.value}"
        request: dict[str, object] = {"group_mask": ALL_GROUPS, "height": 0.0, "duration": self.settings.land_duration}
        self.call("land", request, None)
        self._sent("land")
        self.phase = Phase.LANDING
        self.until = self.clock() + self.settings.land_duration
        return ""

    def ready(self) -> str:
        """Why the policy may not take over now ("" when it may): only after this link's own take-off (which
        opened the thrust lock), once the climb has ended, and not while landing."""
        with self.lock:
            self._advance()
            if self.phase is Phase.FLYING and self.unlocked:
                return ""
            if self.phase is Phase.GROUND:
                return "not taken off by this node (request 'takeoff'): the firmware's thrust lock may still be set"
            if self.phase is Phase.CLIMBING:
                return f"the take-off climbs for {self.until - self.clock():.2f} s more"
            return f"the vehicle is {self.phase.value}"

    def takeover_wait(self) -> str:
        """An asked take-over waits while the vehicle is not ready (e.g. it began landing meanwhile)."""
        return self.ready()

    def control_lost(self) -> str:
        """Nothing crazyswarm2 reports takes control from the policy's packets (a landing is refused meanwhile)."""
        return ""

    # ---------------------------------------------------------------------------------------------------- steps

    def on_step(self, step: HandoverStep, fields: Mapping[str, float], observed: Mapping[str, float]) -> bool:
        """Every period: the hand-back when the step says so, the take-off sequence while it runs; True (nothing
        on cmd_vel_legacy from the node) while the vehicle's controller holds, False while the policy flies."""
        with self.lock:
            self.mode = step.mode
            if POSITION_Z in observed:
                self.height = float(observed[POSITION_Z])
            self._advance()
            if step.handed_back:
                self._hand_back()
                return True
            if step.mode is not Mode.VEHICLE:
                return False
            if self.phase is Phase.UNLOCKING:
                self._unlock_step()
            return True

    def _unlock_step(self) -> None:
        """One zero-thrust packet per period; the period after the last, notify_setpoints_stop (a period apart, so
        that no zero packet can arrive after it and stop the plan), and the take-off once it has answered."""
        if self.packets_left > 0:
            self.send_twist(dict(ZERO_TWIST))
            self.packets_left -= 1
            self._sent(f"zero-thrust packet ({self.settings.unlock_packets - self.packets_left})")
            self.notify_due = self.packets_left == 0
        elif self.notify_due:
            self.notify_due = False
            self.unlocked = True
            self.call("notify_setpoints_stop", _notify_request(), self._take_off)
            self._sent("notify_setpoints_stop")

    def _take_off(self) -> None:
        with self.lock:
            settings = self.settings
            request: dict[str, object] = {
                "group_mask": ALL_GROUPS,
                "height": settings.takeoff_height,
                "duration": settings.takeoff_duration,
            }
            self.call("takeoff", request, None)
            self._sent("takeoff")
            self.phase = Phase.CLIMBING
            self.until = self.clock() + settings.takeoff_duration

    def _hand_back(self) -> None:
        """go_to (hold where the firmware says it is), and notify_setpoints_stop once the go_to has answered."""
        self.handbacks += 1
        request: dict[str, object] = {
            "group_mask": ALL_GROUPS,
            "relative": True,
            "goal": (0.0, 0.0, 0.0),
            "yaw": 0.0,
            "duration": self.settings.handback_duration,
        }
        self.call("go_to", request, self._notify_after_go_to)
        self._sent("go_to (hold)")

    def _notify_after_go_to(self) -> None:
        with self.lock:
            self.call("notify_setpoints_stop", _notify_request(), None)
            self._sent("notify_setpoints_stop (hand-back)")

    def _advance(self) -> None:
        """The climb ends in flight, the landing on the ground."""
        if self.phase in (Phase.CLIMBING, Phase.LANDING) and self.clock() >= self.until:
            self.phase = Phase.FLYING if self.phase is Phase.CLIMBING else Phase.GROUND

    def _sent(self, what: str) -> None:
        self.last = f"{what} at {self.clock():.3f} s"

    def diagnostics(self) -> dict[str, object]:
        """`crazyflie_phase`, `crazyflie_thrust_unlocked`, `crazyflie_handbacks`, `crazyflie_last`."""
        with self.lock:
            return {
                "crazyflie_phase": self.phase.value,
                "crazyflie_thrust_unlocked": self.unlocked,
                "crazyflie_handbacks": self.handbacks,
                "crazyflie_last": self.last,
            }


def _notify_request() -> dict[str, object]:
    """The firmware ignores the remain-valid time (crtp_commander.c's notifySetpointsStopDecoder)."""
    return {"group_mask": ALL_GROUPS, "remain_valid_millisecs": 100}
