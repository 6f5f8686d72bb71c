"""`HoverConfig`, the settings of the hover task (and of tracking, `TrackConfig`), and the observation spaces they
imply: simulation, initial state, termination, reward, randomization and which backend steps the envs."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from robo_rl.envs import SpaceSpec
from robo_rl.sim.numba_dispatch import Backend, check_backend
from robo_rl.sim.quadrotor.actions import ACTION_MODES, ActionMode, CtbrConfig
from robo_rl.sim.quadrotor.airframes import AirframeDistribution
from robo_rl.sim.quadrotor.curriculum import CurriculumConfig
from robo_rl.sim.quadrotor.dynamics import INTEGRATORS, Integrator
from robo_rl.sim.quadrotor.events import FlightEvent
from robo_rl.sim.quadrotor.randomization import RandomizationConfig


@dataclass(frozen=True)
class HoverConfig:
    """Simulation, initial state, termination, reward and randomization of the hover task."""

    frame: str = "crazyflie_2_1"
    """Bundled frame name (see `robo_rl.sim.quadrotor.params.frame_names`) or path to a frame YAML file."""
    action_mode: ActionMode = "motor"
    """"motor" (per-rotor thrust) or "ctbr" (collective thrust and body rates), see `actions`."""
    ctbr: CtbrConfig = field(default_factory=CtbrConfig)
    """Rate controller of the "ctbr" action mode."""
    dt: float = 0.01
    """Control period in s."""
    substeps: int = 1
    """Integration steps per control period; dt / substeps must stay below the motor time constant."""
    integrator: Integrator = "rk4"
    """"rk4" or "semi_implicit_euler"."""
    episode_length: float = 5.0
    """Episode duration in s before truncation (max_episode_steps = episode_length / dt, rounded)."""
    target_position: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """Hover point in the world frame in m (QuadrotorTrack uses its trajectory instead)."""
    init_position_range: float = 0.5
    """Initial position: reference position + U(-r, r) m per axis."""
    init_attitude_range: float = math.radians(30.0)
    """Initial attitude: rotation by U(0, r) rad about a uniformly random axis (tilt and yaw at most r)."""
    init_velocity_range: float = 1.0
    """Initial linear velocity: reference velocity + U(-r, r) m/s per axis."""
    init_angular_velocity_range: float = 2.0
    """Initial body rates: U(-r, r) rad/s per axis. Rotors start at the nominal hover speed."""
    action_history: int = 1
    """Number of previous actions in the observation (4 values each, newest first)."""
    position_integral_limit: float = 0.0
    """> 0: the observation also holds the integral of the observed position error, `position_error_integral_{x,y,z}`
    in m s, clipped to +-this per axis: I_k = clip(I_(k-1) + dt e_k) at every observation k of an episode, the
    first included (I_(-1) = 0). It gives the policy integral action against a thrust it does not know. A deployer
    computes the same from the errors it observes (its bounds in the policy artifact are +-this)."""
    max_position_error: float = 2.0
    """Crash (terminate) when farther than this many m from the reference."""
    max_tilt: float = math.pi / 2
    """Crash when the body z axis is tilted more than this many rad from world up (pi/2: lying on its side)."""
    cost_tilt_limit: float = 0.0
    """A constraint for safe RL (`info["cost"]`, issue 54): a step costs the tilt of the body z axis from world up
    above this many rad, after the step (an episode's cost sums those excesses); the reward does not change. 0: no
    cost. The torch step only (`backend='torch'`)."""
    max_angular_speed: float = 35.0
    """Crash when the body rate norm exceeds this many rad/s (35 rad/s = 2000 deg/s, a usual gyro range)."""
    floor_height: float | None = None
    """Crash when the world z position drops below this height in m; None disables the floor."""
    alive_reward: float = 2.0
    """Constant reward per step, so that surviving near the reference beats crashing."""
    position_weight: float = 1.0
    """Reward penalty per squared m of position error."""
    distance_weight: float = 1.0
    """Reward penalty per m of position error (not squared): keeps pulling toward the reference within the last
    centimetres, where the squared term is flat (precision the hover success gate needs)."""
    attitude_weight: float = 0.5
    """Reward penalty per unit of 1 - R_zz (0 upright, 1 on its side, 2 upside down)."""
    velocity_weight: float = 0.05
    """Reward penalty per squared m/s of linear velocity error."""
    angular_velocity_weight: float = 0.01
    """Reward penalty per squared rad/s of body rate."""
    action_weight: float = 0.05
    """Reward penalty per squared unit of (action - hover action), summed over the 4 actions."""
    integral_weight: float = 0.0
    """Reward penalty per squared m s of the position integral (with `position_integral_limit`): a steady offset
    winds the integral up to its limit, so this charges a constant error far more than a passing one, which is
    what pushes the policy to use the integral (integral action) rather than tolerate a sag."""
    crash_penalty: float = 5.0
    """Reward penalty charged once, at the step that crashes."""
    reward_floor: float | None = None
    """With a value: the reward of a step before the crash penalty is at least this (0: surviving a step never
    costs reward). Without it, far from the target the penalties outweigh `alive_reward`, and a policy learns that
    crashing early pays better than flying on: measured, it stopped the hover preset from learning to survive for
    tens of iterations (docs/BENCHMARKS.md). None: no floor."""
    success_position_error: float = 0.10
    """An episode succeeds when it is not crashed and its mean position error over the last `success_window`..."""
    success_window: float = 1.0
    """...seconds is below `success_position_error` m (reported as `info["success"]`)."""
    randomization: RandomizationConfig = field(default_factory=RandomizationConfig)
    """Domain randomization, all off by default."""
    airframes: AirframeDistribution | None = None
    """With a distribution: every env flies a whole airframe drawn at each reset (mass, arm, inertia, thrust curve,
    motor time constants, torque per thrust, latency; `robo_rl.sim.quadrotor.airframes`), expressed as scales of
    `frame`, which then only fixes the action map (the motor command range) and the units of the scales. The
    action stays a normalized motor command; its thrust comes from each airframe's own curve. The reward's hover
    action, the initial motor states and the latency buffer follow each airframe's hover command; the action
    history starts at `frame`'s hover action (what a deployer knows). `randomization` may still draw the thrust
    scale, battery sag, disturbances (as accelerations of the drawn airframe) and observation noise, not the
    factors an airframe draws. "motor" actions only. None: the frame alone (default)."""
    event: FlightEvent | None = None
    """A change to the airframe at a fixed time into every episode (`robo_rl.sim.quadrotor.events`: a payload, a
    weakened motor), to measure adaptation in flight; torch step only. None: none (default)."""
    curriculum: CurriculumConfig = field(default_factory=CurriculumConfig)
    """Growth of the initial-state and randomization ranges during training, off by default (evaluate with it
    off: full ranges)."""
    compile: bool = False
    """Fuse the step (physics, observation, reward, resets; not the random draws) with `torch.compile`: about
    2-4x the eager env-steps/s at 1,024-4,096 envs on CPU, but the first step compiles (6-8 s on a 2-core CPU,
    under 1 s when cached on disk by an earlier process). Worth it for long runs, not for a 10 s training run. Envs of
    different sizes or settings in one process compile separately (torch keeps at most 8 graphs per function)."""

    backend: Backend = "torch"
    """"torch": tensor ops (CPU or CUDA; fused further by `compile`). "numba": the whole step in one compiled
    per-env CPU loop (`robo_rl.sim.quadrotor.fused`, the same equations), for "motor" actions, a fixed hover
    point and no randomization but the thrust scale; its reset draws come from a counter-based generator inside the
    kernel, so its episodes differ from the torch backend's (same distribution). The first process compiles it
    (10-20 s), later ones load it from disk (~/.cache/robo_rl/numba). "auto": numba where it applies (and is
    installed), else torch: what the hover presets evaluate on, and train on (where they randomize only the
    thrust scale)."""

    def __post_init__(self) -> None:
        check_backend("HoverConfig", self.backend, self.numba_unsupported())
        if self.action_mode not in ACTION_MODES:
            raise ValueError(f"HoverConfig.action_mode must be one of {ACTION_MODES}, got {self.action_mode!r}")
        if self.integrator not in INTEGRATORS:
            raise ValueError(f"HoverConfig.integrator must be one of {INTEGRATORS}, got {self.integrator!r}")
        positive: tuple[str, ...] = ("dt", "episode_length", "max_position_error", "max_tilt", "max_angular_speed")
        positive += ("success_position_error", "success_window")
        bad = [name for name in positive if not getattr(self, name) > 0]
        non_negative: tuple[str, ...] = ("init_position_range", "init_attitude_range", "init_velocity_range")
        non_negative += ("init_angular_velocity_range", "alive_reward", "position_weight", "attitude_weight")
        non_negative += ("distance_weight", "position_integral_limit", "integral_weight")
        non_negative += ("velocity_weight", "angular_velocity_weight", "action_weight", "crash_penalty")
        non_negative += ("cost_tilt_limit",)
        bad += [name for name in non_negative if not getattr(self, name) >= 0]
        if bad:
            raise ValueError(f"HoverConfig fields out of range (must be positive, or >= 0 for ranges/weights): {bad}")
        for name in ("substeps", "action_history"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < (1 if name == "substeps" else 0):
                raise ValueError(f"HoverConfig.{name} must be an int >= {1 if name == 'substeps' else 0}, got {value}")
        if self.max_episode_steps < 1 or self.init_attitude_range > math.pi or self.max_tilt > math.pi:
            raise ValueError("HoverConfig: need episode_length >= dt, init_attitude_range <= pi and max_tilt <= pi")
        if self.airframes is not None:
            self._check_airframes()

    def _check_airframes(self) -> None:
        r = self.randomization
        drawn: tuple[str, ...] = ("mass", "inertia", "inertia_scale", "torque_coefficient", "motor_time_constant")
        drawn += ("motor_rise_time_constant", "motor_fall_time_constant", "thrust_to_weight", "max_action_latency")
        clash = [name for name in drawn if getattr(r, name) not in (0, 0.0, None)]
        if clash:
            raise ValueError(f"HoverConfig: airframes draw these themselves; set them off in randomization: {clash}")
        if self.action_mode != "motor":
            raise ValueError("HoverConfig.airframes needs action_mode='motor' (a normalized motor command per rotor)")

    def numba_unsupported(self) -> list[str]:
        """What this configuration would need for the numba step (empty: it applies, on the CPU)."""
        needs = (
            ("action_mode='motor'", self.action_mode != "motor"),
            ("no domain randomization but thrust_coefficient", not self.randomization.only_thrust_scale),
            ("no observation noise", any(self.randomization.observation_noise)),  # the kernel adds none
            ("compile=false (numba is the other way to fuse the step)", self.compile),
            ("no flight event", self.event is not None),
            ("no cost (cost_tilt_limit 0)", self.cost_tilt_limit > 0),
        )
        return [what for what, bad in needs if bad]

    @property
    def max_episode_steps(self) -> int:
        return round(self.episode_length / self.dt)

    @property
    def success_steps(self) -> int:
        """Number of final steps whose mean position error decides success."""
        return max(1, min(self.max_episode_steps, round(self.success_window / self.dt)))


def observation_spec(config: HoverConfig, moving: bool) -> SpaceSpec:
    """The observation's names, bounds and units (`QuadrotorHover`); `moving`: the reference moves (tracking)."""
    inf = math.inf
    velocity = "velocity_error" if moving else "velocity"
    groups = [
        (_xyz("position_error"), -inf, inf, "m"),
        ([f"rotation_{r}{c}" for r in range(3) for c in range(3)], -1.0, 1.0, "1"),
        (_xyz(velocity), -inf, inf, "m/s"),
        (_xyz("angular_velocity"), -inf, inf, "rad/s"),
    ]
    if moving:
        groups.append((_xyz("reference_velocity"), -inf, inf, "m/s"))
    if config.position_integral_limit > 0:
        limit = config.position_integral_limit
        groups.append((_xyz("position_error_integral"), -limit, limit, "m*s"))
    history = [f"previous_action_{k}_{i}" for k in range(config.action_history) for i in range(4)]
    groups.append((history, -1.0, 1.0, "1"))
    return SpaceSpec(
        names=tuple(name for g in groups for name in g[0]),
        low=tuple(g[1] for g in groups for _ in g[0]),
        high=tuple(g[2] for g in groups for _ in g[0]),
        units=tuple(g[3] for g in groups for _ in g[0]),
    )


def rotor_spec() -> SpaceSpec:
    """The motor states at the end of the privileged observation (normalized commands reached)."""
    names = tuple(f"motor_state_{i}" for i in range(4))
    return SpaceSpec(names, (0.0,) * 4, (1.0,) * 4, ("1",) * 4)


def concat_specs(first: SpaceSpec, second: SpaceSpec) -> SpaceSpec:
    return SpaceSpec(
        names=first.names + second.names,
        low=first.low + second.low,
        high=first.high + second.high,
        units=first.units + second.units,
    )


def _xyz(prefix: str) -> list[str]:
    return [f"{prefix}_{axis}" for axis in "xyz"]
