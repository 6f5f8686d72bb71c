"""The Crazyflie's stand-in (`SimulatedCrazyflie`; sim_bridge's in vehicle mode too) and its rehearsal rig
(`CrazyflieRig`): the firmware's commander (`robo_rl.sim.quadrotor.crazyflie_commander`: the thrust lock,
the priorities, the high-level planner and the supervisor's watchdog as crazyflie-firmware 2026.08 defines them)
between crazyswarm2's topics and services and the simulated quadrotor (`QuadrotorWorld`).

The node's cmd_vel_legacy Twists become legacy packets as crazyswarm2's C++ server makes them (`legacy_packet`);
the link's service calls (takeoff, land, go_to, notify_setpoints_stop) reach the firmware within the period they
are made, in order (`then` runs after each answer). Each tick the firmware's active setpoint flies the vehicle: a
legacy packet as the collective thrust and body rates it carries (the inverse of the profile's command map; no
thrust when the firmware zeroed it), a high-level position setpoint through the vehicle's own position controller
(`QuadrotorWorld.hold_action`), the null setpoint as motors off (the lowest thrust, zero rates).

A rule of the vehicle is broken by a packet with non-zero thrust that the firmware's lock zeroes, and by any
zero-thrust packet in the air (it cuts the motors)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from robo_rl.real.command import command_actions, select_command
from robo_rl.real.crazyflie_link import CrazyflieLink
from robo_rl.real.handover import VehicleLink
from robo_rl.real.profile import CrazyswarmSettings, RobotProfile
from robo_rl.sim.quadrotor.crazyflie_commander import CrazyflieCommander, Source, VehicleState, legacy_packet
from robo_rl.sim.rehearsal.quadrotor import QuadrotorWorld

DEG = 180.0 / math.pi
GROUND_CLEARANCE = 0.05
"""m: above this the vehicle is in the air for the motors-off count (a landing ends with the motors off just above
the ground, where the planner's landing ends)."""


class SimulatedCrazyflie:
    """The firmware's commander flying the simulated Crazyflie (the module docstring): `packet` each
    cmd_vel_legacy Twist, `service` each crazyswarm2 service request, `step(now)` once per period."""

    def __init__(
        self, profile: RobotProfile, target: Sequence[float], params: Sequence[str] = (), seed: int = 0
    ) -> None:
        self.profile = profile
        self.world = QuadrotorWorld(profile, target, params, seed)
        self.firmware = CrazyflieCommander()
        self.spec = select_command(profile, available=lambda _: False)
        self.violations: list[str] = []
        self.twist: dict[str, float] = {}
        self.source = Source.NONE
        self.executed = np.array([-1.0, 0.0, 0.0, 0.0])
        self.motors_off = True
        self.previous_goal: tuple[float, float, float] | None = None

    def inputs(self) -> dict[str, dict[str, float]]:
        """crazyswarm2's odom (pose, world-frame velocity) and the gyro log block (deg/s, body FLU)."""
        state = self.world.state
        odom = {f"odom.pose.pose.position.{a}": float(state[i]) for i, a in enumerate("xyz")}
        odom |= {f"odom.pose.pose.orientation.{a}": float(state[3 + i]) for i, a in enumerate("wxyz")}
        odom |= {f"odom.twist.twist.linear.{a}": float(state[7 + i]) for i, a in enumerate("xyz")}
        gyro = {f"gyro.values[{i}]": float(state[10 + i]) * DEG for i in range(3)}
        return {"odom": odom, "gyro": gyro}

    def packet(self, twist: dict[str, float], now: float) -> None:
        """A cmd_vel_legacy Twist as crazyswarm2's C++ server sends it: the firmware decodes the legacy packet."""
        roll, pitch, yawrate, thrust = legacy_packet(twist)
        decoded = self.firmware.packet_rpyt(roll, pitch, yawrate, thrust, now)
        if thrust > 0 and decoded.thrust == 0.0:
            self.violations.append(f"{now:.2f} s: the thrust lock zeroed a packet of thrust {thrust}")
        if thrust == 0 and self.world.position()[2] > GROUND_CLEARANCE:
            self.violations.append(f"{now:.2f} s: a zero-thrust packet in the air")
        self.twist = dict(twist)

    def service(self, name: str, request: dict[str, object], now: float) -> bool:
        """A crazyswarm2 service request (its fields as crazyflie_interfaces names them): the firmware's answer."""
        firmware = self.firmware
        if name == "notify_setpoints_stop":
            firmware.notify_setpoints_stop(now)
            return True
        if name == "takeoff":
            return firmware.takeoff(_number(request["height"]), _number(request["duration"]), now)
        if name == "land":
            return firmware.land(_number(request["height"]), _number(request["duration"]), now)
        if name == "go_to":
            goal = request["goal"]
            assert isinstance(goal, (tuple, list))
            x, y, z = (float(v) for v in goal)
            yaw, duration, relative = _number(request["yaw"]), _number(request["duration"]), bool(request["relative"])
            return firmware.go_to(x, y, z, yaw, duration, now, relative=relative)
        raise ValueError(f"crazyswarm2 has no service {name!r} here")

    def step(self, now: float) -> None:
        """One stabilizer tick and one period of flight."""
        state = self.world.state
        yaw = math.atan2(2 * (state[3] * state[6] + state[4] * state[5]), 1 - 2 * (state[5] ** 2 + state[6] ** 2))
        position = (float(state[0]), float(state[1]), float(state[2]))
        velocity = (float(state[7]), float(state[8]), float(state[9]))
        active = self.firmware.setpoint(now, VehicleState(position, velocity, yaw))
        self.source, self.motors_off = active.source, active.motors_off
        if active.motors_off:
            action = np.array([-1.0, 0.0, 0.0, 0.0])
        elif active.source is Source.CRTP:
            actions = command_actions(self.spec, self.twist)
            action = np.array([actions.get(name, 0.0) for name in self.profile.action_names])
        else:
            action = self.world.hold_action(*self._goal(active.setpoint.position))
        if active.source is not Source.HIGHLEVEL or active.setpoint.position is None:
            self.previous_goal = None
        self.executed = action
        self.world.step(action)

    def _goal(self, position: tuple[float, float, float] | None) -> tuple[np.ndarray, np.ndarray]:
        """A high-level setpoint's position and velocity: the firmware's planner gives both (its trajectory's
        derivative); the commander stand-in keeps the position, the velocity is its change over the period."""
        assert position is not None
        goal = np.asarray(position, dtype=np.float64)
        previous = self.previous_goal
        velocity = np.zeros(3) if previous is None else (goal - np.asarray(previous)) / self.profile.dt
        self.previous_goal = position
        return goal, velocity

    def motors_off_in_the_air(self) -> bool:
        return self.motors_off and float(self.world.position()[2]) > GROUND_CLEARANCE


class CrazyflieRig:
    """`SimulatedCrazyflie` with the node's crazyswarm2 link (`robo_rl.real.crazyflie_link`); its service calls
    answered within the period, in order. `target`: the hover point (m), the node's `target` parameter."""

    def __init__(
        self, profile: RobotProfile, target: Sequence[float], params: Sequence[str] = (), seed: int = 0
    ) -> None:
        self.profile = profile
        self.vehicle = SimulatedCrazyflie(profile, target, params, seed)
        self.now = 0.0
        self.calls: list[tuple[str, dict[str, object], Callable[[], None] | None]] = []
        self.from_policy = False
        """The last legacy packet was the policy's command (not the link's unlock packet)."""
        self.crazyflie_link = CrazyflieLink(
            profile.crazyswarm2 or CrazyswarmSettings(), self._radio, self._call, self.clock
        )

    @property
    def link(self) -> VehicleLink | None:
        return self.crazyflie_link

    @property
    def world(self) -> QuadrotorWorld:
        return self.vehicle.world

    @property
    def firmware(self) -> CrazyflieCommander:
        return self.vehicle.firmware

    @property
    def violations(self) -> list[str]:
        return self.vehicle.violations

    def clock(self) -> float:
        return self.now

    def inputs(self) -> dict[str, dict[str, float]]:
        return self.vehicle.inputs()

    def command(self, fields: dict[str, float], fault: str) -> None:
        """policy_node's cmd_vel_legacy (a silent vehicle's node never publishes its safe command)."""
        self.vehicle.packet(fields, self.now)
        self.from_policy = True

    def _radio(self, twist: dict[str, float]) -> None:
        self.vehicle.packet(twist, self.now)
        self.from_policy = False  # the link's own (an unlock packet)

    def _call(self, service: str, request: dict[str, object], then: Callable[[], None] | None) -> None:
        self.calls.append((service, request, then))

    def advance(self) -> None:
        while self.calls:  # this period's service calls, in order, each answered at once
            service, request, then = self.calls.pop(0)
            self.vehicle.service(service, request, self.now)
            if then is not None:
                then()
        self.vehicle.step(self.now)
        self.now += self.profile.dt

    def in_charge(self) -> str:
        return "policy" if self.vehicle.source is Source.CRTP and self.from_policy else "vehicle"

    def executed(self) -> np.ndarray:
        return self.vehicle.executed

    def pose(self) -> tuple[np.ndarray, float]:
        return self.world.position(), self.world.tilt()

    def motors_off_in_the_air(self) -> bool:
        return self.vehicle.motors_off_in_the_air()


def _number(value: object) -> float:
    assert isinstance(value, (int, float))
    return float(value)
