"""The L2F transfer gate: fly a robo_rl hover policy in a Crazyflie simulator that robo_rl did not write.

L2F (PyPI `l2f`, version `L2F_VERSION`) is the Crazyflie simulator of "Learning to Fly in Seconds" (Eschmann et
al., 2023; rl_tools), C++ behind pybind11. Its model per rotor: a motor state u in [0, 1] (its "rpm") that follows
the command with a rising or a falling time constant, thrust `c0 + c1 u + c2 u^2` along body z, yaw torque
`torque constant * thrust` along the rotor's torque direction, full inertia, RK4 at 100 Hz, float32. Its step takes
actions in [-1, 1] and maps them onto its action limits: u = min + (a + 1) / 2 * (max - min), with limits {0, 1}.

`fly` flies episodes in L2F's engine, batched over its vector interface: from exactly robo_rl's evaluation initial
states (drawn by `QuadrotorHover` with the same config and seed), with the observation built by name from L2F's
state as robo_rl's hover env builds it, the action turned into the motor command by the policy's actuator model
(`MotorActuator.command`, the one map) and into L2F's action by L2F's own normalization, and crashes and success
judged by robo_rl's hover criteria (L2F's own termination is ignored: nothing is reset). The plant is L2F's own
Crazyflie ("native", its bundled parameters) or L2F's engine given a robo_rl frame (`l2f_parameters_json`): the
latter is what checks robo_rl's equations against an independent simulator (tests/sim/quadrotor/test_l2f_gate.py).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any, Literal, Protocol, TypeAlias

import numpy as np

from robo_rl.actuator import MotorActuator
from robo_rl.sim.quadrotor.curriculum import CurriculumConfig
from robo_rl.sim.quadrotor.hover import QuadrotorHover
from robo_rl.sim.quadrotor.hover_config import HoverConfig
from robo_rl.sim.quadrotor.params import SPIN_SIGN, QuadrotorParams
from robo_rl.sim.quadrotor.randomization import RandomizationConfig

L2F_VERSION = "2.0.18"
"""The l2f release this gate was written against (its parameter JSON layout, vector interface and model)."""
L2F_SOURCE = f"L2F {L2F_VERSION} (PyPI l2f, rl_tools l2f/parameters/dynamics/crazyflie.h)"
L2F_MAX_BATCH = 8192
"""The largest vector interface l2f builds (`l2f.vector_selector`: powers of two from 1 to 8192)."""
OBS_WIDTH_KINEMATICS = 18
"""L2F's observation starts with position (3), rotation matrix row-major (9), linear velocity (3), body rates (3)."""
INTEGRAL_NAMES = tuple(f"position_error_integral_{axis}" for axis in "xyz")

PolicyFn = Callable[[np.ndarray], np.ndarray]
"""obs `(n, obs_dim)` float32 → actions `(n, 4)` in [-1, 1]."""
EpisodesStart = Callable[[int], None]
"""Called with n before the first step of n episodes flown side by side: where a policy with memory sets each of
their states to its reset value (`robo_rl.memory_spec.RESET_RULE`)."""


class Engine(Protocol):
    """What `fly` flies: n quadrotors with `L2FEngine`'s state and kinematics layout."""

    def set_state(self, state: np.ndarray) -> None: ...

    def step(self, command: np.ndarray) -> None: ...

    def kinematics(self) -> np.ndarray: ...


@dataclass(frozen=True)
class EnginePlant:
    """Another simulator flown through `fly`'s hover gate: `make(n, seed)` builds n quadrotors (an `Engine`), which
    hover at motor command `hover_command`."""

    name: str
    hover_command: float
    make: Callable[[int, int], Engine]


Plant: TypeAlias = Literal["native"] | QuadrotorParams | EnginePlant


class L2FUnavailableError(RuntimeError):
    """The l2f package is not installed or cannot be loaded; the message says how to install it."""


def l2f_missing_reason() -> str | None:
    """Why the gate cannot run here (one line), or None when l2f imports."""
    try:
        _l2f()
    except L2FUnavailableError as error:
        return str(error)
    return None


@dataclass(frozen=True)
class L2FResult:
    """Outcome of `fly`: robo_rl's hover criteria on flights in L2F."""

    success_rate: float
    """Fraction of episodes that did not crash and ended with a last-window mean position error below the limit."""
    crash_rate: float
    """Fraction of episodes that crashed (distance, tilt, body rate, floor or a non-finite state)."""
    steady_state_error: float
    """Mean over the episodes that did not crash of their mean position error over the last window, in m (NaN if
    every episode crashed)."""
    episodes: int
    plant: str
    """What flew: L2F's own Crazyflie or L2F's engine with a robo_rl frame."""

    def describe(self) -> str:
        """One line: success %, crash %, steady-state error in cm, episodes, plant."""
        error = "n/a" if math.isnan(self.steady_state_error) else f"{100 * self.steady_state_error:.2f} cm"
        return (
            f"success {100 * self.success_rate:.1f} %, crash {100 * self.crash_rate:.1f} %, steady-state error "
            f"{error}, {self.episodes} episodes, plant: {self.plant}"
        )


# ------------------------------------------------------------------------------------------------ L2F parameters


@cache
def _l2f() -> Any:
    try:
        import l2f
    except ImportError as error:
        raise L2FUnavailableError(
            f"the l2f package (L2F's simulator) is not importable ({error}); install it with "
            f"`.venv/bin/pip install l2f=={L2F_VERSION}` (a C++ build, needs g++ and the Python headers)"
        ) from None
    return l2f


def native_parameters_json() -> str:
    """L2F's default (nominal Crazyflie) parameters as its `parameters_to_json` writes them."""
    l2f = _l2f()
    device, env, parameters = l2f.Device(), l2f.Environment(), l2f.Parameters()
    l2f.initialize_environment(device, env)
    l2f.initial_parameters(device, env, parameters)
    return str(l2f.parameters_to_json(device, env, parameters))


def native_params() -> QuadrotorParams:
    """The installed l2f package's nominal Crazyflie as `QuadrotorParams`, read from its `parameters_to_json`.

    That JSON prints every number with 6 decimals (C++ `std::to_string`), so the thrust curve, torque constant,
    time constants and mass are exact to 5e-7; the inertia is taken from the inverse inertia L2F also stores
    (printed as ~1e5 with 6 decimals: 1/J_inv is exact to L2F's own float32, ~1e-7 relative).
    """
    dynamics = json.loads(native_parameters_json())["dynamics"]
    positions = np.array(dynamics["rotor_positions"], dtype=float)
    offsets = np.abs(positions[:, :2])
    if not np.allclose(offsets, offsets[0, 0]) or np.any(positions[:, 2] != 0):
        raise ValueError(f"L2F rotor positions {positions.tolist()} are not a planar X of equal arms")
    spins = tuple(_spin_of(direction) for direction in dynamics["rotor_torque_directions"])
    j_inv = np.array(dynamics["J_inv"], dtype=float)
    for name in ("rotor_thrust_coefficients", "rotor_torque_constants", "rotor_time_constants_rising"):
        if any(value != dynamics[name][0] for value in dynamics[name]):
            raise ValueError(f"L2F's rotors differ in {name}: {dynamics[name]}")
    gravity = dynamics["gravity"]
    return QuadrotorParams(
        name="l2f_crazyflie",
        mass=float(dynamics["mass"]),
        arm_length=float(offsets[0, 0]) * math.sqrt(2.0),
        inertia=(float(1.0 / j_inv[0, 0]), float(1.0 / j_inv[1, 1]), float(1.0 / j_inv[2, 2])),
        thrust_curve=tuple(float(c) for c in dynamics["rotor_thrust_coefficients"][0]),  # type: ignore[arg-type]
        torque_to_thrust=float(dynamics["rotor_torque_constants"][0]),
        motor_rise_time_constant=float(dynamics["rotor_time_constants_rising"][0]),
        motor_fall_time_constant=float(dynamics["rotor_time_constants_falling"][0]),
        min_command=float(dynamics["action_limit"]["min"]),
        max_command=float(dynamics["action_limit"]["max"]),
        gravity=-float(gravity[2]),
        rotor_spin=spins,  # type: ignore[arg-type]
        source=f"{L2F_SOURCE}, read from the installed package's parameters_to_json",
    )


def _spin_of(torque_direction: Sequence[float]) -> str:
    """robo_rl's spin name of a rotor whose L2F yaw torque direction is `torque_direction` (a ccw rotor pushes the
    body clockwise: direction -z)."""
    x, y, z = (float(v) for v in torque_direction)
    if x != 0 or y != 0 or abs(z) != 1:
        raise ValueError(f"L2F rotor torque direction {torque_direction} is not along body z")
    return next(name for name, sign in SPIN_SIGN.items() if sign == -z)


def l2f_fall_time_constant(params: QuadrotorParams) -> float:
    """L2F's motors fall with one constant. A rotor-speed frame's fall rate grows with the speed, so it is given as
    its constant at the hover command (where a hovering policy's motors spend their time)."""
    return params.motor_fall_time_constant / (
        params.fall_idle_fraction + (1.0 - params.fall_idle_fraction) * params.hover_command
    )


def l2f_parameters_json(params: QuadrotorParams, dt: float = 0.01) -> str:
    """L2F parameters (its full JSON, for `parameters_from_json`) holding robo_rl's model of `params`: mass,
    inertia, rotor positions, thrust curve, yaw torque per thrust and spin, rise and fall time constants, gravity,
    integration step `dt` s, action limits (min_command, max_command). L2F's other settings stay its defaults,
    except its termination (off: the gate judges crashes by robo_rl's criteria) and its noise (none).

    Raises ValueError for what L2F's model cannot hold (linear drag).
    """
    if any(params.linear_drag):
        raise ValueError(f"frame {params.name!r} has linear drag {params.linear_drag}: L2F's model has none")
    data = json.loads(native_parameters_json())
    d = data["dynamics"]
    n = len(d["rotor_positions"])
    positions = [[x, y, 0.0] for x, y in params.rotor_positions]
    inertia = params.inertia
    d.update(
        rotor_positions=positions,
        rotor_thrust_directions=[[0.0, 0.0, 1.0] for _ in range(n)],
        rotor_torque_directions=[[0.0, 0.0, -float(s)] for s in params.spin_signs],
        rotor_thrust_coefficients=[list(params.thrust_curve) for _ in range(n)],
        rotor_torque_constants=[params.torque_to_thrust] * n,
        rotor_time_constants_rising=[params.motor_rise_time_constant] * n,
        rotor_time_constants_falling=[l2f_fall_time_constant(params)] * n,
        mass=params.mass,
        gravity=[0.0, 0.0, -params.gravity],
        J=[[inertia[i] if i == j else 0.0 for j in range(3)] for i in range(3)],
        J_inv=[[1.0 / inertia[i] if i == j else 0.0 for j in range(3)] for i in range(3)],
        hovering_throttle_relative=params.hover_command,
        action_limit={"min": params.min_command, "max": params.max_command},
    )
    _quiet(data, dt)
    return json.dumps(data)


def _quiet(data: dict[str, Any], dt: float) -> None:
    """Termination off, no noise, no disturbances, no randomization, integration step `dt` (in place)."""
    data["integration"]["dt"] = dt
    mdp = data["mdp"]
    mdp["termination"]["enabled"] = False
    for key in mdp["observation_noise"]:
        mdp["observation_noise"][key] = 0.0
    mdp["action_noise"]["normalized_rpm"] = 0.0
    for kind in data.get("disturbances", {}).values():
        kind.update(mean=0.0, std=0.0)


def native_plant_json(dt: float = 0.01) -> str:
    """L2F's own Crazyflie parameters, untouched but for termination off, no noise and integration step `dt`."""
    data = json.loads(native_parameters_json())
    _quiet(data, dt)
    return json.dumps(data)


# ------------------------------------------------------------------------------------------------ the engine


class L2FEngine:
    """`num_envs` quadrotors in L2F's vector interface (one padded power-of-two batch), all with the parameters of
    `parameters_json`. States are robo_rl's layout `(num_envs, 17)`: position (3, m, world z up), quaternion wxyz
    body-to-world (4), velocity (3, m/s, world), body rates (3, rad/s), motor state u (4)."""

    def __init__(self, parameters_json: str, num_envs: int, seed: int = 0) -> None:
        if not 1 <= num_envs <= L2F_MAX_BATCH:
            raise ValueError(f"L2FEngine: num_envs must lie in [1, {L2F_MAX_BATCH}], got {num_envs}")
        l2f = _l2f()
        self.num_envs = num_envs
        self._batch = 1 << (num_envs - 1).bit_length()
        self._vector = l2f.vector_selector[self._batch]
        self._device = l2f.Device()
        self._env = self._vector.VectorEnvironment()
        self._rng = self._vector.VectorRng()
        self._vector.initialize_environment(self._device, self._env)
        self._vector.initialize_rng(self._device, self._rng, seed)
        single_env, parameters = l2f.Environment(), l2f.Parameters()
        l2f.initialize_environment(self._device, single_env)
        l2f.parameters_from_json(self._device, single_env, parameters_json, parameters)
        self._parameters = self._vector.VectorParameters()
        self._parameters.parameters = [parameters] * self._batch
        limit = json.loads(parameters_json)["dynamics"]["action_limit"]
        self.command_limits = (float(limit["min"]), float(limit["max"]))
        """L2F's action limits: the motor commands its actions -1 and +1 mean."""
        self._state = self._vector.VectorState()
        self._next = self._vector.VectorState()
        self._vector.initial_state(self._device, self._env, self._parameters, self._state)
        self._obs = np.zeros((self._batch, self._env.OBSERVATION_DIM), dtype=np.float32)
        self._action = np.zeros((self._batch, 4), dtype=np.float32)

    def set_state(self, state: np.ndarray) -> None:
        """Overwrite every env's state with `state` `(num_envs, 17)` (the padding envs copy the last row)."""
        state = np.asarray(state, dtype=np.float64).reshape(self.num_envs, 17)
        rows = np.concatenate([state, np.repeat(state[-1:], self._batch - self.num_envs, axis=0)])
        states = self._state.states
        for s, row in zip(states, rows, strict=True):
            s.position = row[0:3].tolist()
            s.orientation = row[3:7].tolist()
            s.linear_velocity = row[7:10].tolist()
            s.angular_velocity = row[10:13].tolist()
            s.rpm = row[13:17].tolist()
        self._state.states = states

    def state(self) -> np.ndarray:
        """`(num_envs, 17)` copy of the states (per-env Python copies: slow, for checks rather than flights)."""
        fields = ("position", "orientation", "linear_velocity", "angular_velocity", "rpm")
        states = self._state.states[: self.num_envs]
        return np.array([np.concatenate([np.asarray(getattr(s, f), dtype=np.float64) for f in fields]) for s in states])

    def kinematics(self) -> np.ndarray:
        """`(num_envs, 18)` float32 from L2F's own observation: position (3), rotation matrix body-to-world
        row-major (9), velocity (3), body rates (3) (its reference is the origin at rest and its noise is off)."""
        self._vector.observe(self._device, self._env, self._parameters, self._state, self._obs, self._rng)
        return self._obs[: self.num_envs, :OBS_WIDTH_KINEMATICS]

    def step(self, command: np.ndarray) -> None:
        """Advance one integration step with motor commands `command` `(num_envs, 4)`, turned into L2F's actions
        in [-1, 1] by L2F's own normalization onto its action limits."""
        low, high = self.command_limits
        self._action[: self.num_envs] = 2.0 * (np.asarray(command) - low) / (high - low) - 1.0
        self._action[self.num_envs :] = self._action[self.num_envs - 1]
        self._vector.step(self._device, self._env, self._parameters, self._state, self._action, self._next, self._rng)
        self._state, self._next = self._next, self._state


# ------------------------------------------------------------------------------------------------ the gate


@dataclass
class _Observer:
    """Builds robo_rl's hover observation by name from L2F's kinematics, with the integral and history rules."""

    names: tuple[str, ...]
    target: np.ndarray
    dt: float
    integral_limit: float
    hover_action: np.ndarray
    columns: np.ndarray = field(init=False)
    history_length: int = field(init=False)

    def __post_init__(self) -> None:
        history = [name for name in self.names if name.startswith("previous_action_")]
        self.history_length = 1 + max((int(name.split("_")[2]) for name in history), default=-1)
        known = self._feature_names()
        unknown = [name for name in self.names if name not in known]
        if unknown:
            raise ValueError(f"observations {unknown} are not ones the L2F gate builds (robo_rl hover names only)")
        if any(name in INTEGRAL_NAMES for name in self.names) and not self.integral_limit > 0:
            raise ValueError("the policy observes position_error_integral_* but no integral limit > 0 was given")
        self.columns = np.array([known.index(name) for name in self.names])

    def _feature_names(self) -> list[str]:
        xyz = "xyz"
        names = [f"position_error_{a}" for a in xyz] + [f"rotation_{r}{c}" for r in range(3) for c in range(3)]
        names += [f"velocity_{a}" for a in xyz] + [f"angular_velocity_{a}" for a in xyz] + list(INTEGRAL_NAMES)
        return names + [f"previous_action_{k}_{i}" for k in range(self.history_length) for i in range(4)]

    def reset(self, n: int) -> None:
        self.integral = np.zeros((n, 3))
        self.history = np.tile(self.hover_action, (n, self.history_length))

    def push_action(self, action: np.ndarray) -> None:
        if self.history_length:
            self.history = np.concatenate([action, self.history[:, :-4]], axis=1)

    def __call__(self, kinematics: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(obs `(n, obs_dim)` float32, position error `(n, 3)` m) of this step's kinematics `(n, 18)`."""
        error = kinematics[:, 0:3].astype(np.float64) - self.target
        limit = self.integral_limit
        self.integral = np.clip(self.integral + self.dt * error, -limit, limit) if limit > 0 else self.integral
        rotation = np.clip(kinematics[:, 3:12], -1.0, 1.0)
        features = np.concatenate([error, rotation, kinematics[:, 12:18], self.integral, self.history], axis=1)
        obs = np.nan_to_num(features[:, self.columns].astype(np.float32), nan=0.0, posinf=0.0, neginf=0.0)
        return obs, error


def initial_states(config: HoverConfig, episodes: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(states `(episodes, 17)`, hover action `(4,)`): robo_rl's evaluation initial states of `config` for `seed`
    (its torch reset, nominal: no randomization, no curriculum) and the env's hover action."""
    plain = replace(
        config, backend="torch", compile=False, randomization=RandomizationConfig(), curriculum=CurriculumConfig()
    )
    env = QuadrotorHover(episodes, config=plain, seed=seed)
    return env.state.double().numpy(), np.array(env.hover_action, dtype=np.float64)


def fly(
    policy_fn: PolicyFn,
    obs_names: Sequence[str],
    dt: float,
    actuator: MotorActuator,
    plant: Plant = "native",
    episodes: int = 500,
    seed: int = 0,
    config: HoverConfig | None = None,
    integral_limit: float | None = None,
    start_episodes: EpisodesStart | None = None,
) -> L2FResult:
    """Fly `episodes` hover episodes of `config.episode_length` s in L2F and judge them by robo_rl's hover gate.

    `policy_fn` maps obs `(n, len(obs_names))` float32 to actions `(n, 4)`; `obs_names` are robo_rl hover
    observation names (in the policy's order); `dt` the policy's control period in s (L2F integrates one RK4 step
    per control step); `actuator` turns each clipped action into the motor command u (`MotorActuator.command`).
    `plant`: "native" (L2F's own Crazyflie) or a `QuadrotorParams` frame put into L2F's engine. Initial states
    are robo_rl's for `config` (default `HoverConfig()`) and `seed`, with the motor states at the plant's hover
    command. `integral_limit`: L of the position_error_integral_* observations (default
    `config.position_integral_limit`). `start_episodes(n)` (a policy with memory) is called before the first step
    of each batch of n episodes (every episode runs from its own first step to its last: nothing is reset inside).
    """
    config = HoverConfig() if config is None else config
    if episodes < 1:
        raise ValueError(f"episodes must be at least 1, got {episodes}")
    make: Callable[[int, int], Engine]
    if isinstance(plant, EnginePlant):
        make, plant_name, hover_command = plant.make, plant.name, plant.hover_command
    elif plant == "native":
        parameters, plant_name = native_plant_json(dt), f"L2F {L2F_VERSION} Crazyflie (its own parameters)"
        hover_command = native_params().hover_command
        make = lambda n, seed: L2FEngine(parameters, n, seed)  # noqa: E731
    elif isinstance(plant, QuadrotorParams):
        frame_parameters = l2f_parameters_json(plant, dt)
        plant_name = f"L2F {L2F_VERSION} engine, frame {plant.name}"
        hover_command = plant.hover_command
        make = lambda n, seed: L2FEngine(frame_parameters, n, seed)  # noqa: E731
    else:
        raise ValueError(f"plant must be 'native', a QuadrotorParams or an EnginePlant, got {plant!r}")
    limit = getattr(config, "position_integral_limit", 0.0) if integral_limit is None else integral_limit
    states, hover_action = initial_states(config, episodes, seed)
    states[:, 13:17] = hover_command
    observer = _Observer(tuple(obs_names), np.array(config.target_position), dt, float(limit), hover_action)
    command = np.vectorize(actuator.command, otypes=[np.float64])
    batches = [states[start : start + L2F_MAX_BATCH] for start in range(0, episodes, L2F_MAX_BATCH)]
    outcomes = [
        _fly_batch(policy_fn, observer, command, make, batch, config, seed, start_episodes) for batch in batches
    ]
    crashed = np.concatenate([o[0] for o in outcomes])
    window_error = np.concatenate([o[1] for o in outcomes])
    success = ~crashed & (window_error < config.success_position_error)
    steady = float(window_error[~crashed].mean()) if (~crashed).any() else math.nan
    return L2FResult(float(success.mean()), float(crashed.mean()), steady, episodes, plant_name)


def _fly_batch(
    policy_fn: PolicyFn,
    observer: _Observer,
    command: Callable[[np.ndarray], np.ndarray],
    make: Callable[[int, int], Engine],
    states: np.ndarray,
    config: HoverConfig,
    seed: int,
    start_episodes: EpisodesStart | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(crashed `(n,)`, mean position error over the last window `(n,)` m) of one batch of episodes."""
    n = len(states)
    engine = make(n, seed)
    engine.set_state(states)
    observer.reset(n)
    if start_episodes is not None:
        start_episodes(n)
    steps, window = config.max_episode_steps, config.success_steps
    crashed = np.zeros(n, dtype=bool)
    error_sum = np.zeros(n)
    obs, _ = observer(engine.kinematics())
    for step in range(1, steps + 1):
        action = np.clip(np.asarray(policy_fn(obs), dtype=np.float64).reshape(n, 4), -1.0, 1.0)
        engine.step(command(action))
        observer.push_action(action)
        kinematics = engine.kinematics()
        obs, error = observer(kinematics)
        distance = np.sqrt(np.square(error).sum(1))
        crashed |= _crashed(kinematics, distance, config)
        if step > steps - window:
            error_sum += distance
    return crashed, error_sum / window


def _crashed(kinematics: np.ndarray, distance: np.ndarray, config: HoverConfig) -> np.ndarray:
    """robo_rl's crash test `(n,)`: beyond the distance, tilt or body-rate limits, below the floor, or not finite
    (written as "not within bounds" so that NaN counts as a crash)."""
    within = (distance <= config.max_position_error) & (kinematics[:, 11] >= math.cos(config.max_tilt))
    within &= np.square(kinematics[:, 15:18].astype(np.float64)).sum(1) <= config.max_angular_speed**2
    if config.floor_height is not None:
        within &= kinematics[:, 2] >= config.floor_height
    return ~within
