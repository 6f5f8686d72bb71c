"""Racecar goal reaching in PyBullet as a `BatchedEnv`: drive pybullet_data's racecar to a goal on flat ground.

Each env copy is a `RacecarWorld` (its own DIRECT client). `step` applies the actions and steps the clients in
a loop, reads every car's raw state, then computes observations, rewards and terminations for all envs at once
with numpy (float64, element-wise IEEE operations only, so a batch gives exactly what separate envs give).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch

from robo_rl.envs import INFO_FINAL_OBS, INFO_SUCCESS, SpaceSpec, StepResult
from robo_rl.sim.pybullet.racecar_world import (
    MAX_CLIENTS,
    MAX_STEERING_ANGLE,
    MAX_WHEEL_SPEED,
    RAW_ANGULAR_VELOCITY,
    RAW_DIM,
    RAW_LINEAR_VELOCITY,
    RAW_POSITION,
    RAW_QUATERNION,
    RAW_STEERING,
    WHEEL_RADIUS,
    RacecarWorld,
)


@dataclass(frozen=True)
class RacecarGoalConfig:
    """Physics, actions, episodes, initial states, goals, rewards and rendering of the racecar goal task."""

    time_step: float = 0.01
    """Physics step in s."""
    frame_skip: int = 5
    """Physics steps per control period (the motor targets are held): dt = time_step * frame_skip."""
    num_solver_iterations: int = 50
    """Iterations of PyBullet's constraint solver per physics step (PyBullet's default: 50)."""
    episode_length: float = 10.0
    """Episode duration in s before truncation (max_episode_steps = episode_length / dt, rounded)."""
    max_speed: float = 2.0
    """Speed command limit in m/s (rolling speed of the driven rear wheels, forward positive); at most 5 m/s (the
    wheels' 100 rad/s limit)."""
    max_steering_angle: float = 0.5
    """Steering command limit in rad (positive turns left); at most 1 rad (the hinge limit)."""
    wheel_force: float = 10.0
    """Torque limit in N*m of each rear wheel's velocity motor (racecar.urdf's effort limit)."""
    steering_force: float = 10.0
    """Torque limit in N*m of each steering hinge's position motor (racecar.urdf's effort limit)."""
    init_yaw_range: float = math.pi
    """Initial heading: U(-r, r) rad about the world z axis (the car starts at the origin)."""
    init_speed_range: float = 0.5
    """Initial forward speed: U(-r, r) m/s, wheels rolling accordingly."""
    goal_distance_range: tuple[float, float] = (1.0, 3.0)
    """Goal distance from the car's start: U(low, high) m."""
    goal_bearing_range: float = math.pi
    """Goal direction relative to the car's initial heading: U(-r, r) rad (pi: anywhere around the car)."""
    goal_radius: float = 0.2
    """The goal is reached (success, episode terminated) within this distance in m of the car's base origin."""
    max_goal_distance: float = 6.0
    """The car is lost (crash, episode terminated) farther than this many m from the goal."""
    max_tilt: float = 1.0
    """The car has flipped (crash, episode terminated) when its up axis tilts more than this many rad."""
    progress_weight: float = 10.0
    """Reward per m the car got closer to the goal during the step (negative when it moves away)."""
    time_penalty: float = 0.05
    """Reward penalty per step, so that reaching the goal sooner pays."""
    goal_reward: float = 10.0
    """Reward at the step that reaches the goal."""
    crash_penalty: float = 10.0
    """Reward penalty at the step that flips the car or loses the goal."""
    render_width: int = 320
    """Width in pixels of the frames `render` returns."""
    render_height: int = 240
    """Height in pixels of the frames `render` returns."""

    def __post_init__(self) -> None:
        self._check_ints()
        positive: tuple[str, ...] = ("time_step", "episode_length", "max_speed", "max_steering_angle", "wheel_force")
        positive += ("steering_force", "goal_radius", "max_goal_distance", "max_tilt")
        non_negative: tuple[str, ...] = ("init_yaw_range", "init_speed_range", "goal_bearing_range", "progress_weight")
        non_negative += ("time_penalty", "goal_reward", "crash_penalty")
        for name in positive:
            if not getattr(self, name) > 0:
                raise ValueError(f"RacecarGoalConfig.{name} must be positive, got {getattr(self, name)}")
        for name in non_negative:
            if not getattr(self, name) >= 0:
                raise ValueError(f"RacecarGoalConfig.{name} must be >= 0, got {getattr(self, name)}")
        upper = {
            "max_speed": MAX_WHEEL_SPEED * WHEEL_RADIUS,
            "max_steering_angle": MAX_STEERING_ANGLE,
            "init_yaw_range": math.pi,
            "goal_bearing_range": math.pi,
            "max_tilt": math.pi,
        }
        for name, limit in upper.items():
            if getattr(self, name) > limit:
                raise ValueError(f"RacecarGoalConfig.{name} must be at most {limit:.4g}, got {getattr(self, name)}")
        self._check_goal_distances()
        if self.max_episode_steps < 1:
            raise ValueError(f"RacecarGoalConfig.episode_length must be at least dt = {self.dt:.4g} s")

    def _check_ints(self) -> None:
        for name in ("frame_skip", "num_solver_iterations", "render_width", "render_height"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"RacecarGoalConfig.{name} must be an int >= 1, got {value!r}")

    def _check_goal_distances(self) -> None:
        low, high = self.goal_distance_range
        if not self.goal_radius < low <= high < self.max_goal_distance:
            raise ValueError(
                "RacecarGoalConfig.goal_distance_range must satisfy goal_radius < low <= high < max_goal_distance, "
                f"got {self.goal_distance_range} (goal_radius={self.goal_radius}, "
                f"max_goal_distance={self.max_goal_distance})"
            )

    @property
    def dt(self) -> float:
        """Control period in s."""
        return self.time_step * self.frame_skip

    @property
    def max_episode_steps(self) -> int:
        return round(self.episode_length / self.dt)


class _Features(NamedTuple):
    """What one step needs from the raw states of the envs, all float64 numpy arrays."""

    obs: np.ndarray
    """`(N, 6)` observation (see `RacecarGoal`)."""
    distance: np.ndarray
    """`(N,)` planar distance from the car's base to the goal in m."""
    up_z: np.ndarray
    """`(N,)` world z component of the car's up axis (1 upright, cos(tilt) when tilted)."""


def planar_features(raw: np.ndarray, goals: np.ndarray) -> _Features:
    """Observations, goal distances and uprightness from raw states `(N, RAW_DIM)` and goals `(N, 2)` in m.

    The heading frame is the car's forward axis projected on the ground (x forward, y left); only products,
    sums and square roots are used, so every element is computed identically whatever the batch size.
    """
    x, y, z, w = raw[:, RAW_QUATERNION].T
    forward = np.stack((1 - 2 * (y * y + z * z), 2 * (x * y + z * w)), axis=-1)
    forward /= np.sqrt((forward * forward).sum(-1, keepdims=True))
    left = np.stack((-forward[:, 1], forward[:, 0]), axis=-1)
    to_goal = goals - raw[:, RAW_POSITION][:, :2]
    velocity = raw[:, RAW_LINEAR_VELOCITY][:, :2]
    obs = np.stack(
        (
            (to_goal * forward).sum(-1),
            (to_goal * left).sum(-1),
            (velocity * forward).sum(-1),
            (velocity * left).sum(-1),
            raw[:, RAW_ANGULAR_VELOCITY][:, 2],
            raw[:, RAW_STEERING].mean(-1),
        ),
        axis=-1,
    )
    distance = np.sqrt((to_goal * to_goal).sum(-1))
    return _Features(obs, distance, 1 - 2 * (x * x + y * y))


class RacecarGoal:
    """`num_envs` racecars (pybullet_data's `racecar/racecar.urdf`) driving to goals, as a `BatchedEnv`.

    Observation `(num_envs, 6)`: goal position in the car's heading frame (forward, left; m), forward and
    lateral speed (m/s), yaw rate (rad/s), steering angle (rad, mean of the two front hinges).
    Action `(num_envs, 2)`, clipped: speed command (m/s, rolling speed of the driven rear wheels) and steering angle
    command (rad, positive turns left).

    Reward: `progress_weight * (distance before - distance after the step) - time_penalty`, plus `goal_reward`
    at the step that reaches the goal and minus `crash_penalty` at a crash. Terminated when the goal is reached
    (within `goal_radius`; `info["success"]` True) or at a crash (tilted beyond `max_tilt`, farther than
    `max_goal_distance` from the goal, or a non-finite state); truncated after `max_episode_steps`. Finished
    envs reset inside `step`: the car restarts at the origin with a random heading and speed and a new goal.

    Seeding follows Gymnasium's vector rule: `reset(seed)` seeds copy i's random stream with `seed + i`, so copy
    i of a batch equals a one-env instance seeded `seed + i`, trajectory for trajectory.

    Each copy is a whole PyBullet client: about 35 MB of memory and 25 ms to build, and PyBullet allows at most
    1024 clients per process, so this backend suits tens to a few hundred envs, not thousands.

    `render(index)` draws copy `index` from a chase camera (`RenderableEnv`). `close()` releases the physics
    clients (also done when the env is garbage collected). There is no `state_dict`: PyBullet restores a state
    saved to bytes (`saveBullet`) only approximately, so a checkpoint could not resume the exact stream; a
    resumed run starts fresh episodes instead.
    """

    resumable = False
    """No `state_dict`: PyBullet restores a state only in the client that saved it; a resumed run restarts episodes."""

    dtype: torch.dtype = torch.float32
    privileged_obs_spec: SpaceSpec | None = None

    def __init__(
        self,
        num_envs: int,
        device: str | torch.device = "cpu",
        config: RacecarGoalConfig = RacecarGoalConfig(),
        seed: int | None = None,
    ) -> None:
        """Connect `num_envs` PyBullet clients and reset them; `seed` is passed to `reset` (None: a
        non-deterministic seed)."""
        self._worlds: list[RacecarWorld] = []
        if not isinstance(num_envs, int) or not 1 <= num_envs <= MAX_CLIENTS:
            raise ValueError(f"num_envs must be an int in [1, {MAX_CLIENTS}] (PyBullet's client limit), got {num_envs}")
        self.num_envs = num_envs
        self.device = torch.device(device)
        self.config = config
        self.dt = config.dt
        self.max_episode_steps = config.max_episode_steps
        self.obs_spec = _obs_spec()
        self.action_spec = SpaceSpec(
            names=("speed", "steering_angle"),
            low=(-config.max_speed, -config.max_steering_angle),
            high=(config.max_speed, config.max_steering_angle),
            units=("m/s", "rad"),
        )
        self._action_low = np.asarray(self.action_spec.low)
        self._action_high = np.asarray(self.action_spec.high)
        self._goals = np.zeros((num_envs, 2))
        self._distance = np.zeros(num_envs)
        self._steps = np.zeros(num_envs, dtype=np.int64)
        self._worlds = self._connect()
        if seed is None:
            seed = int(np.random.SeedSequence().generate_state(1)[0])
        self.reset(seed)

    # ----------------------------------------------------------------------------------------------- public API

    @property
    def client_ids(self) -> list[int]:
        """PyBullet physics client id of each env copy (-1 once closed)."""
        return [world.client for world in self._worlds]

    @property
    def goals(self) -> torch.Tensor:
        """`(num_envs, 2)` goal positions (x, y) in the world frame, m."""
        return self._tensor(self._goals)

    def raw_states(self) -> torch.Tensor:
        """`(num_envs, 15)` raw car states: base position (m), quaternion (x y z w), linear velocity (m/s) and
        angular velocity (rad/s) in the world frame, steering hinge angles (rad); see `racecar_world`."""
        return self._tensor(self._read(range(self.num_envs)))

    def reset(self, seed: int | None = None) -> torch.Tensor:
        """Reset every env; returns obs `(num_envs, 6)`. A seed `s` (>= 0) reseeds copy i with `s + i`; None
        continues the copies' random streams."""
        if seed is not None:
            if seed < 0:
                raise ValueError(f"seed must be >= 0, got {seed}")
            self._rngs = [np.random.default_rng(seed + i) for i in range(self.num_envs)]
        everyone = np.arange(self.num_envs)
        features = self._restart(everyone)
        self._distance = features.distance
        return self._tensor(features.obs)

    def step(self, action: torch.Tensor) -> StepResult:
        """Apply actions `(num_envs, 2)` (speed m/s, steering rad) for `dt`; auto-resets finished envs."""
        commands = action.detach().to("cpu", torch.float64).numpy().reshape(self.num_envs, 2)
        commands = np.clip(commands, self._action_low, self._action_high)
        for world, (speed, steering) in zip(self._worlds, commands.tolist(), strict=True):
            world.step(speed, steering)
        features = planar_features(self._read(range(self.num_envs)), self._goals)
        reached, crashed = self._outcomes(features)
        reward = self._reward(features.distance, reached, crashed)
        self._steps += 1
        terminated = reached | crashed
        truncated = (self._steps >= self.max_episode_steps) & ~terminated
        obs, distance = features.obs.copy(), features.distance.copy()
        done = np.flatnonzero(terminated | truncated)
        if done.size:
            fresh = self._restart(done)
            obs[done], distance[done] = fresh.obs, fresh.distance
        self._distance = distance
        info = {INFO_FINAL_OBS: self._tensor(features.obs), INFO_SUCCESS: self._tensor(reached, torch.bool)}
        flags = self._tensor(terminated, torch.bool), self._tensor(truncated, torch.bool)
        return self._tensor(obs), self._tensor(reward), *flags, info

    def render(self, index: int = 0) -> np.ndarray:
        """RGB frame `(render_height, render_width, 3)` uint8 of env `index` from a camera following the car."""
        if not 0 <= index < self.num_envs:
            raise IndexError(f"env index {index} out of range for {self.num_envs} envs")
        return self._worlds[index].render(self.config.render_width, self.config.render_height)

    def close(self) -> None:
        """Disconnect every physics client; the env cannot step afterwards. Safe to call twice."""
        for world in self._worlds:
            world.close()

    def __del__(self) -> None:
        self.close()

    # ------------------------------------------------------------------------------------------------ internals

    def _connect(self) -> list[RacecarWorld]:
        c, worlds = self.config, []
        try:
            for _ in range(self.num_envs):
                worlds.append(
                    RacecarWorld(
                        time_step=c.time_step,
                        frame_skip=c.frame_skip,
                        num_solver_iterations=c.num_solver_iterations,
                        wheel_force=c.wheel_force,
                        steering_force=c.steering_force,
                        marker_radius=c.goal_radius,
                    )
                )
        except BaseException:
            for world in worlds:
                world.close()
            raise
        return worlds

    def _read(self, indices: range | np.ndarray) -> np.ndarray:
        """Raw states `(len(indices), RAW_DIM)` float64 of the given envs."""
        rows = [self._worlds[i].read() for i in indices]
        return np.asarray(rows, dtype=np.float64).reshape(len(rows), RAW_DIM)

    def _restart(self, indices: np.ndarray) -> _Features:
        """Start new episodes in envs `indices`; returns their features."""
        for i in indices.tolist():
            self._goals[i] = self._start_episode(i)
        self._steps[indices] = 0
        return planar_features(self._read(indices), self._goals[indices])

    def _start_episode(self, index: int) -> tuple[float, float]:
        """Draw env `index`'s initial heading, speed and goal from its own stream, reset its world; returns the
        goal (x, y) in m."""
        c = self.config
        u_yaw, u_speed, u_distance, u_bearing = self._rngs[index].random(4).tolist()
        yaw = (2 * u_yaw - 1) * c.init_yaw_range
        speed = (2 * u_speed - 1) * c.init_speed_range
        low, high = c.goal_distance_range
        distance = low + u_distance * (high - low)
        direction = yaw + (2 * u_bearing - 1) * c.goal_bearing_range
        goal = (distance * math.cos(direction), distance * math.sin(direction))
        self._worlds[index].reset(yaw, speed, goal)
        return goal

    def _outcomes(self, features: _Features) -> tuple[np.ndarray, np.ndarray]:
        """(reached, crashed) `(N,)` bool; written as "not within bounds" so that NaN states count as crashes."""
        c = self.config
        reached = features.distance <= c.goal_radius
        within = (features.distance <= c.max_goal_distance) & (features.up_z >= math.cos(c.max_tilt))
        within &= np.isfinite(features.obs).all(-1)
        return reached & within, ~within

    def _reward(self, distance: np.ndarray, reached: np.ndarray, crashed: np.ndarray) -> np.ndarray:
        c = self.config
        progress = self._distance - distance
        progress = np.where(np.isfinite(progress), progress, 0.0)
        return c.progress_weight * progress - c.time_penalty + c.goal_reward * reached - c.crash_penalty * crashed

    def _tensor(self, array: np.ndarray, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return torch.as_tensor(array).to(device=self.device, dtype=dtype)


def _obs_spec() -> SpaceSpec:
    names = ("goal_forward", "goal_left", "forward_speed", "lateral_speed", "yaw_rate", "steering_angle")
    return SpaceSpec(
        names=names,
        low=(-math.inf,) * len(names),
        high=(math.inf,) * len(names),
        units=("m", "m", "m/s", "m/s", "rad/s", "rad"),
    )
