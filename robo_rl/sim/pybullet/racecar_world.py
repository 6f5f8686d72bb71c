"""One PyBullet DIRECT client holding the racecar world: ground plane, pybullet_data's racecar, a goal marker.

`RacecarWorld` is one env copy's physics; `robo_rl.sim.pybullet.racecar_goal.RacecarGoal` holds `num_envs` of
them. Each episode starts from an in-memory snapshot of the car settled at rest (`restoreState`), so a reset
restores the contact and solver caches too and the episode does not depend on what the client simulated
before: the same initial state and actions give bit-identical trajectories.

Raw state of one car (`read`), a flat tuple of floats laid out as the `RAW_*` slices: base position (3, world,
m), base orientation quaternion (4, x y z w), base linear velocity (3, world, m/s), base angular velocity
(3, world, rad/s), steering hinge angles (2, rad, left then right).
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from robo_rl.sim.pybullet.camera import follow_camera_image

RACECAR_URDF = os.path.join("racecar", "racecar.urdf")
"""The car model, relative to pybullet_data's folder."""
DRIVEN_WHEEL_JOINTS = ("left_rear_wheel_joint", "right_rear_wheel_joint")
"""Driven wheels, velocity-controlled to one common angular speed (no differential)."""
FREE_WHEEL_JOINTS = ("left_front_wheel_joint", "right_front_wheel_joint")
"""Undriven wheels, rolling freely: driving all four at one speed made them fight in turns (scrub), turning the car
at a fluctuating 0.5-0.8 of the kinematic rate instead of about 0.9."""
STEERING_JOINTS = ("left_steering_hinge_joint", "right_steering_hinge_joint")
"""Front steering hinges (position-controlled to one common angle; positive turns left)."""
WHEEL_RADIUS = 0.05
"""Wheel radius in m (the wheels' collision cylinders in racecar.urdf)."""
WHEELBASE = 0.325
"""Distance from the rear axle to the steering hinges in m (racecar.urdf)."""
MAX_WHEEL_SPEED = 100.0
"""Wheel joint velocity limit in rad/s (racecar.urdf; PyBullet also clamps joint speeds at 100 rad/s)."""
MAX_STEERING_ANGLE = 1.0
"""Steering hinge limit in rad (racecar.urdf)."""

MAX_CLIENTS = 1024
"""PyBullet's limit of physics clients per process (MAX_PHYSICS_CLIENTS in its C module)."""

RAW_POSITION = slice(0, 3)
RAW_QUATERNION = slice(3, 7)
RAW_LINEAR_VELOCITY = slice(7, 10)
RAW_ANGULAR_VELOCITY = slice(10, 13)
RAW_STEERING = slice(13, 15)
RAW_DIM = 15

_DROP_HEIGHT = 0.01
"""Height in m above its resting pose at which the car is loaded before it settles."""
_SETTLE_TIME = 1.0
"""Simulated time in s the car settles (brakes on) before the reset snapshot is taken."""
_MARKER_HEIGHT = 0.002
"""Thickness in m of the flat goal disc (visual only: it has no collision shape)."""


class RacecarWorld:
    """A racecar on flat ground in its own headless PyBullet client, stepped one control period at a time.

    `time_step` is the physics step in s and `frame_skip` the number of physics steps per `step` call (PyBullet
    substeps, with the motor targets held); `num_solver_iterations` sets the constraint solver's iterations;
    `wheel_force` (N*m) and `steering_force` (N*m) are the rear wheel and steering motors' torque limits;
    `marker_radius` (m) is the radius of the goal disc drawn by `render`.
    """

    def __init__(
        self,
        *,
        time_step: float,
        frame_skip: int,
        num_solver_iterations: int,
        wheel_force: float,
        steering_force: float,
        marker_radius: float,
    ) -> None:
        import pybullet
        import pybullet_data

        self._bullet: Any = pybullet
        self._client = -1
        self._wheel_force, self._steering_force = wheel_force, steering_force
        client = pybullet.connect(pybullet.DIRECT)
        if client < 0:
            raise RuntimeError(f"pybullet.connect(DIRECT) failed: at most {MAX_CLIENTS} clients fit in a process")
        self._client = client
        try:
            self._configure(time_step, frame_skip, num_solver_iterations)
            self._load(pybullet_data.getDataPath(), marker_radius)
            self._settle(frame_skip * time_step)
        except BaseException:
            self.close()
            raise

    @property
    def client(self) -> int:
        """PyBullet physics client id, -1 once closed."""
        return self._client

    def reset(self, yaw: float, speed: float, goal: tuple[float, float]) -> None:
        """Start an episode: the settled car turned by `yaw` rad about the world z axis at the origin, moving
        forward at `speed` m/s (wheels rolling), with the goal marker at `goal` (x, y) in m."""
        b, client, car = self._bullet, self._client, self._car
        b.restoreState(stateId=self._snapshot, physicsClientId=client)
        turn = (0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2))
        position, orientation = b.multiplyTransforms((0.0, 0.0, 0.0), turn, *self._rest_pose)
        b.resetBasePositionAndOrientation(car, position, orientation, physicsClientId=client)
        velocity = (speed * math.cos(yaw), speed * math.sin(yaw), 0.0)
        b.resetBaseVelocity(car, velocity, (0.0, 0.0, 0.0), physicsClientId=client)
        for joint, angle in zip(self._wheels, self._rest_wheel_angles, strict=True):
            b.resetJointState(car, joint, angle, speed / WHEEL_RADIUS, physicsClientId=client)
        self._free_wheels()
        b.resetBasePositionAndOrientation(
            self._marker, (goal[0], goal[1], _MARKER_HEIGHT / 2), (0.0, 0.0, 0.0, 1.0), physicsClientId=client
        )

    def step(self, speed: float, steering: float) -> None:
        """Drive the rear wheels toward `speed` m/s of rolling speed and the front wheels toward `steering` rad, for
        one control period (`frame_skip` physics steps)."""
        b, client, car = self._bullet, self._client, self._car
        driven = self._driven_wheels
        b.setJointMotorControlArray(
            car,
            driven,
            b.VELOCITY_CONTROL,
            targetVelocities=[speed / WHEEL_RADIUS] * len(driven),
            forces=[self._wheel_force] * len(driven),
            physicsClientId=client,
        )
        b.setJointMotorControlArray(
            car,
            self._steering,
            b.POSITION_CONTROL,
            targetPositions=[steering] * len(self._steering),
            forces=[self._steering_force] * len(self._steering),
            physicsClientId=client,
        )
        b.stepSimulation(physicsClientId=client)

    def read(self) -> tuple[float, ...]:
        """The car's raw state, `RAW_DIM` floats laid out as the `RAW_*` slices (see the module docstring)."""
        b, client, car = self._bullet, self._client, self._car
        position, orientation = b.getBasePositionAndOrientation(car, physicsClientId=client)
        linear, angular = b.getBaseVelocity(car, physicsClientId=client)
        left, right = b.getJointStates(car, self._steering, physicsClientId=client)
        return (*position, *orientation, *linear, *angular, left[0], right[0])

    def render(self, width: int, height: int) -> np.ndarray:
        """RGB frame `(height, width, 3)` uint8 from a camera behind the car, looking where it heads."""
        raw = self.read()
        x, y, z, w = raw[RAW_QUATERNION]
        heading = math.atan2(2 * (x * y + z * w), 1 - 2 * (y * y + z * z))
        return follow_camera_image(self._bullet, self._client, raw[RAW_POSITION], heading, width, height)

    def close(self) -> None:
        """Disconnect the physics client; safe to call twice and during interpreter shutdown."""
        client, self._client = getattr(self, "_client", -1), -1
        if client >= 0:
            try:
                self._bullet.disconnect(physicsClientId=client)
            except Exception:  # pybullet may be half torn down at interpreter exit
                pass

    def __del__(self) -> None:
        self.close()

    def _configure(self, time_step: float, frame_skip: int, num_solver_iterations: int) -> None:
        # One stepSimulation call per control period: PyBullet substeps the period itself (fewer Python calls).
        self._bullet.setPhysicsEngineParameter(
            fixedTimeStep=time_step * frame_skip,
            numSubSteps=frame_skip,
            numSolverIterations=num_solver_iterations,
            deterministicOverlappingPairs=1,
            physicsClientId=self._client,
        )
        self._bullet.setGravity(0.0, 0.0, -9.81, physicsClientId=self._client)

    def _load(self, data_path: str, marker_radius: float) -> None:
        b, client = self._bullet, self._client
        b.loadURDF(os.path.join(data_path, "plane.urdf"), physicsClientId=client)
        self._car = b.loadURDF(os.path.join(data_path, RACECAR_URDF), (0.0, 0.0, _DROP_HEIGHT), physicsClientId=client)
        joints = self._joint_indices()
        self._driven_wheels = [joints[name] for name in DRIVEN_WHEEL_JOINTS]
        self._wheels = self._driven_wheels + [joints[name] for name in FREE_WHEEL_JOINTS]
        self._steering = [joints[name] for name in STEERING_JOINTS]
        disc = b.createVisualShape(
            b.GEOM_CYLINDER,
            radius=marker_radius,
            length=_MARKER_HEIGHT,
            rgbaColor=(0.9, 0.1, 0.1, 1.0),
            physicsClientId=client,
        )
        self._marker = b.createMultiBody(baseMass=0.0, baseVisualShapeIndex=disc, physicsClientId=client)

    def _free_wheels(self) -> None:
        """Switch off the undriven wheels' motors (PyBullet gives every joint a velocity motor by default)."""
        free = self._wheels[len(self._driven_wheels) :]
        self._bullet.setJointMotorControlArray(
            self._car,
            free,
            self._bullet.VELOCITY_CONTROL,
            targetVelocities=[0.0] * len(free),
            forces=[0.0] * len(free),
            physicsClientId=self._client,
        )

    def _joint_indices(self) -> dict[str, int]:
        b, client = self._bullet, self._client
        count = b.getNumJoints(self._car, physicsClientId=client)
        infos = (b.getJointInfo(self._car, j, physicsClientId=client) for j in range(count))
        return {info[1].decode(): info[0] for info in infos}

    def _settle(self, dt: float) -> None:
        """Let the car come to rest with the brakes on, then snapshot that state as every episode's start."""
        self._free_wheels()
        for _ in range(max(1, round(_SETTLE_TIME / dt))):
            self.step(0.0, 0.0)
        b, client = self._bullet, self._client
        position, orientation = b.getBasePositionAndOrientation(self._car, physicsClientId=client)
        self._rest_pose = (position, orientation)
        states = b.getJointStates(self._car, self._wheels, physicsClientId=client)
        self._rest_wheel_angles = [state[0] for state in states]
        self._snapshot = b.saveState(physicsClientId=client)
