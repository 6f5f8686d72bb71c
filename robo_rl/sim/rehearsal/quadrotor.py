"""A quadrotor for the rehearsals: quadrotor/hover's physics (one env, the profile's frame and action mode) in a
world with a ground at z = 0, a hover point at the node's `target`, and the vehicle's own position controller.

The simulator's frame has the hover point at its origin; the world position is the simulator's plus `target`.
The ground: the vehicle starts standing on it, and whenever the physics takes it below z = 0 it stands again
(level, at rest, its heading kept): a landing, not a crash. The vehicle's own controller (a Crazyflie's
high-level commander's position controller, PX4's position hold) is `HoverPilot` (robo_rl.sim.quadrotor.expert:
cascaded position and attitude control on the true state, collective thrust and body rates) flying to a setpoint;
it stands for the vehicle's firmware, which these rehearsals do not model beyond who is in charge."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch

from robo_rl.real.profile import RobotProfile
from robo_rl.sim.quadrotor.dynamics import ANGULAR_VELOCITY, POSITION, QUATERNION, VELOCITY
from robo_rl.sim.quadrotor.expert import HoverPilot, HoverPilotConfig
from robo_rl.sim.quadrotor.hover import QuadrotorHover

AIRBORNE_HEIGHT = 0.02
"""m above the ground from which the vehicle counts as in the air."""
STILL = (
    "episode_length=1e9",
    "max_position_error=1e3",
    "init_position_range=0",
    "init_attitude_range=0",
    "init_velocity_range=0",
    "init_angular_velocity_range=0",
)
"""Task settings of a rehearsal: no episode end, and the start the rehearsal sets."""
VEHICLE_PILOT = HoverPilotConfig(position_gain=9.0, velocity_gain=6.0, max_horizontal_acceleration=3.0)
"""The vehicle's own position controller: critically damped (3 rad/s), stiffer than the HIL pilot so that it tracks
a take-off plan without overshoot, with its tilt kept small (3 m/s² horizontally)."""


class QuadrotorWorld:
    """See the module docstring; `target`: the node's hover point in the world (m)."""

    def __init__(
        self, profile: RobotProfile, target: Sequence[float], params: Sequence[str] = (), seed: int = 0
    ) -> None:
        from robo_rl.sim import make

        env = make(profile.task, num_envs=1, params=[*profile.task_params, *params, *STILL], seed=seed)
        if not isinstance(env, QuadrotorHover):
            raise ValueError(f"profile {profile.name}: task {profile.task} is not a quadrotor hover task")
        self.env = env
        if abs(self.env.dt - profile.dt) > 1e-9:
            raise ValueError(f"{profile.task} steps {self.env.dt} s, profile {profile.name} {profile.dt} s")
        self.env.reset(seed)
        self.target = np.asarray(target, dtype=np.float64)
        self.pilot = HoverPilot(self.env, VEHICLE_PILOT)
        state = self.env.state[0].clone()
        state[POSITION] = torch.as_tensor(-self.target)
        state[QUATERNION] = torch.tensor([1.0, 0.0, 0.0, 0.0])
        state[VELOCITY] = 0.0
        state[ANGULAR_VELOCITY] = 0.0
        self.env.set_state(state.unsqueeze(0))
        self.landings = 0

    @property
    def state(self) -> np.ndarray:
        """The physical state `(17,)`, position in the world."""
        state = self.env.state[0].numpy().astype(np.float64)
        state[POSITION] += self.target
        return state

    def position(self) -> np.ndarray:
        return self.state[POSITION]

    def tilt(self) -> float:
        _, x, y, _ = self.state[QUATERNION]
        return math.acos(max(-1.0, min(1.0, 1.0 - 2.0 * (x * x + y * y))))

    def airborne(self) -> bool:
        return float(self.position()[2]) > AIRBORNE_HEIGHT

    def step(self, action: np.ndarray) -> None:
        """One period with the ctbr action `(4,)`; a vehicle below the ground stands on it."""
        self.env.step(torch.as_tensor(action, dtype=torch.float32).clamp(-1.0, 1.0).unsqueeze(0))
        state = self.env.state[0].clone()
        if float(state[2]) + self.target[2] < 0.0:
            w, x, y, z = (float(v) for v in state[QUATERNION])
            heading = math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
            state[2] = float(-self.target[2])
            state[QUATERNION] = torch.tensor([math.cos(heading / 2), 0.0, 0.0, math.sin(heading / 2)])
            state[VELOCITY] = 0.0
            state[ANGULAR_VELOCITY] = 0.0
            self.env.set_state(state.unsqueeze(0))
            self.landings += 1

    def hold_action(
        self, setpoint: Sequence[float] | np.ndarray, velocity: Sequence[float] | np.ndarray = (0, 0, 0)
    ) -> np.ndarray:
        """The vehicle's own controller's ctbr action toward the world point `setpoint`, moving at `velocity`."""
        goal = torch.as_tensor(np.asarray(setpoint) - self.target, dtype=self.env.dtype).unsqueeze(0)
        rate = torch.as_tensor(np.asarray(velocity, dtype=np.float64), dtype=self.env.dtype).unsqueeze(0)
        return self.pilot.action((goal, rate))[0].numpy().astype(np.float64)
