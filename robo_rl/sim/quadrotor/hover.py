"""Quadrotor hover as a `BatchedEnv`: fly to a reference point from a random initial state and stay there.

`QuadrotorHover` flies to a fixed point by default; given a moving `Reference` it is the engine of
`QuadrotorTrack`. Conventions (frames, rotor order, spin) are in `robo_rl.sim.quadrotor.params`, the action
modes in `robo_rl.sim.quadrotor.actions`, the domain randomization in `robo_rl.sim.quadrotor.randomization`.
"""

from __future__ import annotations

import importlib.util
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import numpy as np
import torch

from robo_rl.actuator import MotorActuator
from robo_rl.envs import (
    INFO_FINAL_OBS,
    INFO_FINAL_PRIVILEGED_OBS,
    INFO_PRIVILEGED_OBS,
    INFO_SUCCESS,
    INFO_TRACKING_ERROR,
    SpaceSpec,
    StepResult,
)
from robo_rl.sim.batched_task import BatchedTask
from robo_rl.sim.quadrotor.actions import ACTION_MODES, ActionMode, CtbrConfig, make_action_map
from robo_rl.sim.quadrotor.airframes import HOVER_FEATURE, AirframeDistribution
from robo_rl.sim.quadrotor.curriculum import CurriculumConfig
from robo_rl.sim.quadrotor.dynamics import (
    ANGULAR_VELOCITY,
    INTEGRATORS,
    MOTOR_STATE,
    POSITION,
    QUATERNION,
    STATE_DIM,
    VELOCITY,
    DynamicsParams,
    Integrator,
    integrate,
    normalize_quaternion_,
    quat_to_rotmat,
    rotation_rows,
    rows_matmul,
)
from robo_rl.sim.quadrotor.events import FlightEvent, after_event
from robo_rl.sim.quadrotor.params import load_frame
from robo_rl.sim.quadrotor.randomization import (
    BATTERY,
    DISTURBANCE_ACCELERATION,
    DISTURBANCE_ANGULAR_ACCELERATION,
    EPISODE_NAMES,
    LATENCY,
    SCALES,
    THRUST_SCALE,
    EpisodeSampler,
    RandomizationConfig,
    thrust_curves,
)
from robo_rl.sim.quadrotor.reference import FixedPoint, Reference

Backend = Literal["torch", "numba", "auto"]
BACKENDS: tuple[str, ...] = ("torch", "numba", "auto")
_INIT_DRAWS = 13
"""Uniform draws per env at reset: position 3, velocity 3, angular velocity 3, attitude angle 1, axis 2, phase 1."""

if TYPE_CHECKING:  # matplotlib loads only when an env renders
    from robo_rl.sim.quadrotor.render import QuadrotorRenderer


class _Draws(NamedTuple):
    """Every random number one `step` uses, drawn before the (compilable) transition."""

    noise: torch.Tensor | None
    """`(9, N)` standard normal observation noise, or None without noise."""
    episode: torch.Tensor | None
    """`(18, N)` U(0, 1) for the episode parameters of envs that reset, or None without randomization."""
    init: torch.Tensor
    """`(13, N)` U(0, 1) for the initial states of envs that reset (`_INIT_DRAWS`)."""


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
    tens of iterations (docs/BENCHMARKS.md, issue 46). None: no floor."""
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
        if self.backend not in BACKENDS:
            raise ValueError(f"HoverConfig.backend must be one of {BACKENDS}, got {self.backend!r}")
        unsupported = self.numba_unsupported()
        if self.backend == "numba" and unsupported:
            raise ValueError(f"HoverConfig.backend='numba' needs {', '.join(unsupported)}")
        if self.action_mode not in ACTION_MODES:
            raise ValueError(f"HoverConfig.action_mode must be one of {ACTION_MODES}, got {self.action_mode!r}")
        if self.integrator not in INTEGRATORS:
            raise ValueError(f"HoverConfig.integrator must be one of {INTEGRATORS}, got {self.integrator!r}")
        positive = ("dt", "episode_length", "max_position_error", "max_tilt", "max_angular_speed")
        positive += ("success_position_error", "success_window")
        bad = [name for name in positive if not getattr(self, name) > 0]
        non_negative = ("init_position_range", "init_attitude_range", "init_velocity_range")
        non_negative += ("init_angular_velocity_range", "alive_reward", "position_weight", "attitude_weight")
        non_negative += ("distance_weight", "position_integral_limit", "integral_weight")
        non_negative += ("velocity_weight", "angular_velocity_weight", "action_weight", "crash_penalty")
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
        drawn = ("mass", "inertia", "inertia_scale", "torque_coefficient", "motor_time_constant")
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
        )
        return [what for what, bad in needs if bad]

    @property
    def max_episode_steps(self) -> int:
        return round(self.episode_length / self.dt)

    @property
    def success_steps(self) -> int:
        """Number of final steps whose mean position error decides success."""
        return max(1, min(self.max_episode_steps, round(self.success_window / self.dt)))


class QuadrotorHover(BatchedTask):
    """`num_envs` quadrotors flying to a reference point, implementing the `BatchedEnv` protocol.

    Observation `(num_envs, 18 + 4 * action_history)` (+3 with a moving reference): position error to the
    reference (3, world, m), rotation matrix body-to-world flattened row-major (9), linear velocity (3, world,
    m/s; minus the reference velocity), body angular velocity (3, rad/s), [reference velocity (3, m/s) when the
    reference moves], [the clipped integral of the position error (3, m s) with `position_integral_limit`],
    previous actions (4 per step, newest first). Action `(num_envs, 4)` in [-1, 1] (clipped), see
    `robo_rl.sim.quadrotor.actions`; `hover_action` holds the nominal frame in hover, and in "motor" mode
    `actuator` states what an action means (the policy artifact records it).

    Reward: `alive_reward - position_weight |e_p|^2 - distance_weight |e_p| - attitude_weight (1 - R_zz)
    - velocity_weight |e_v|^2 - angular_velocity_weight |w|^2 - action_weight |a - hover_action|^2
    - integral_weight |I|^2` (at least `reward_floor` when it is set), minus `crash_penalty` at a crash.
    Terminated (crash) beyond `max_position_error`, `max_tilt`, `max_angular_speed` or below `floor_height`
    (and on non-finite states); truncated after `max_episode_steps`; finished envs reset inside `step`.
    `info["success"]`: truncated without crash and mean position error over the last `success_window` below
    `success_position_error`. `info["tracking_error"]` `(num_envs,)`: position error norm in m at every step.

    Privileged (critic) observation `(num_envs, 22)`: this episode's parameter scales, action latency and
    disturbance (see `randomization.EPISODE_NAMES`), then the motor states (normalized commands reached). With
    `airframes`, `(num_envs, 31)`: the drawn airframe's normalized features (`airframes.FEATURE_NAMES`: log mass,
    arm, inertia, motor time constants, torque per thrust, and its hover command) come before the motor states.

    Internally tensors are component-major (`(17, num_envs)` state, see `robo_rl.sim.quadrotor.dynamics`);
    everything the env returns or accepts is batch-major `(num_envs, ...)`.
    """

    component_major = True

    def __init__(
        self,
        num_envs: int,
        device: str | torch.device = "cpu",
        config: HoverConfig = HoverConfig(),
        seed: int | None = None,
        *,
        reference: Reference | None = None,
    ) -> None:
        """Build the envs and reset them; `seed` is passed to `reset`, None draws a non-deterministic seed.

        `reference` replaces the fixed hover point `config.target_position` (QuadrotorTrack passes a trajectory).
        """
        super().__init__(num_envs, device, config.dt, config.max_episode_steps, seed)
        self.config = config
        self.params = load_frame(config.frame)
        if reference is None:
            reference = FixedPoint(config.target_position, self.device, self.dtype)
        self._reference = reference
        self._action_map = make_action_map(config.action_mode, self.params, config.ctbr, self.device, self.dtype)
        self.hover_action: tuple[float, float, float, float] = self._action_map.hover_action
        self.nominal_action = self.hover_action
        """The action that holds the nominal frame at rest (`PolicyConfig.init_mean="nominal"` starts there)."""
        self._nominal = DynamicsParams.nominal(self.params, num_envs, self.device, self.dtype)
        self._sampler = EpisodeSampler(
            config.randomization, self.params, self.device, self.dtype, config.airframes, config.dt
        )
        self._draws_episodes = config.randomization.enabled or config.airframes is not None
        self._check_motor_stability()
        self.obs_spec = self._obs_spec()
        self.action_spec = SpaceSpec(self._action_map.names, (-1.0,) * 4, (1.0,) * 4, ("1",) * 4)
        self.privileged_obs_spec = _concat_specs(self._sampler.spec, self._rotor_spec())
        self.actuator: MotorActuator | None = getattr(self._action_map, "actuator", None)
        """What a "motor" action means physically (None in "ctbr" mode)."""
        self._make_constants()
        self.control_steps = 0
        """Batched `step` calls since construction (not reset by `reset`): the curriculum's clock."""
        self._transition_fn = torch.compile(self._transition, dynamic=False) if config.compile else self._transition
        self._fused: Any = None
        self._fused_seed = 0
        if config.backend == "numba" or (config.backend == "auto" and self._numba_applies(reference)):
            self._fused = self._fused_kernel()
        self.render_box: tuple[tuple[float, float, float], float] = (config.target_position, config.max_position_error)
        """(centre m, half-width m) of the 3-D box `render` shows; QuadrotorTrack sets it around its trajectory."""
        self._renderers: dict[int, tuple[QuadrotorRenderer, int]] = {}
        self.reset(seed)

    # ----------------------------------------------------------------------------------------------- public API

    @property
    def state(self) -> torch.Tensor:
        """`(num_envs, 17)` copy of the physical state, columns as the rows in `robo_rl.sim.quadrotor.dynamics`."""
        return self._state.T.contiguous()

    @property
    def episode_params(self) -> torch.Tensor:
        """`(num_envs, 18)` copy of this episode's randomized parameters (`randomization.EPISODE_NAMES`; with
        airframes `(num_envs, 27)`, then `airframes.FEATURE_NAMES`)."""
        return self._episode.T.contiguous()

    @property
    def episode_time(self) -> torch.Tensor:
        """`(num_envs,)` time since each env's episode started, in s."""
        return self._steps.to(self.dtype) * self.dt

    def reference_at(self, time: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Reference (position m, velocity m/s) `(num_envs, 3)` of each env at episode time `time` `(num_envs,)` s."""
        position, velocity = self._reference(time.to(device=self.device, dtype=self.dtype), self._phase)
        return position.T, velocity.T

    def tracking_error(self) -> torch.Tensor:
        """`(num_envs,)` distance in m between each quadrotor and its reference at the current episode time."""
        return _norm(self._errors()[0][0])

    def set_state(self, state: torch.Tensor) -> None:
        """Overwrite the physical state `(num_envs, 17)` (quaternion renormalized); episode data are kept."""
        state = state.to(device=self.device, dtype=self.dtype).reshape(self.num_envs, STATE_DIM)
        self._state = normalize_quaternion_(state.T.contiguous())
        self.privileged_obs = self._privileged()

    def _reset_all(self) -> torch.Tensor:
        """New initial states and randomization in every env."""
        n = self.num_envs
        self._episode = self._sampler.nominal(n)
        self._phase = torch.zeros(n, device=self.device, dtype=self.dtype)
        self._error_sum = torch.zeros(n, device=self.device, dtype=self.dtype)
        self._history = self._hover_history.expand(-1, n).clone()
        self._integral = torch.zeros(3 if self._integrates else 0, n, device=self.device, dtype=self.dtype)
        self._action_buffer = self._hover_buffer.expand(-1, -1, n).clone()
        self._state = self._state_template.expand(-1, n).clone()
        draws = self._draw()
        self._reset_where(torch.ones(n, dtype=torch.bool, device=self.device), draws, self.curriculum_fraction)
        self._apply_episode()
        self.privileged_obs = self._privileged()
        if self._fused is not None:  # the seed of the kernel's counter-based draws, from this reset's generator
            self._fused_seed = int(torch.randint(2**62, (1,), generator=self._generator))
        return self._observe(*self._errors(), self._scaled_noise(draws)).T.contiguous()

    @property
    def curriculum_fraction(self) -> float:
        """Current size of the initial-state and randomization ranges relative to the configured ones."""
        return self.config.curriculum.fraction(self.control_steps)

    def step(self, action: torch.Tensor) -> StepResult:
        """Apply actions `(num_envs, 4)` in [-1, 1] for `dt`; auto-resets envs whose episode is over."""
        if self._fused is not None:
            self.control_steps += 1
            return self._fused_step(action)
        return self.transition(action, self.draw())

    @property
    def capturable(self) -> bool:
        """Whether `draw` / `transition` apply (the torch step; the numba step is one CPU kernel of its own)."""
        return self._fused is None

    def draw(self) -> tuple[_Draws, float | torch.Tensor]:
        """The random numbers of one `step` and its curriculum fraction (`robo_rl.envs.CapturableEnv`); counts the
        step. The fraction is a 0-d tensor on the env's device while a curriculum grows it (a captured graph reads
        the new value), else the float 1.0."""
        if self._fused is not None:
            raise ValueError("the numba step (HoverConfig.backend='numba') has no split step: use backend='torch'")
        self.control_steps += 1
        fraction: float | torch.Tensor = self.curriculum_fraction
        if self.config.curriculum.steps > 0:
            fraction = torch.full((), fraction, device=self.device, dtype=self.dtype)
        elif self.config.compile and fraction < 1.0:
            fraction = torch.tensor(fraction, dtype=self.dtype)  # a CPU scalar input: no recompile per value
        return self._draw(), fraction

    def transition(self, action: torch.Tensor, draws: tuple[_Draws, float | torch.Tensor]) -> StepResult:
        """`step` after `draw`: no random call, no host sync (compiled with `HoverConfig.compile`)."""
        action = action.to(device=self.device, dtype=self.dtype)
        return self._transition_fn(action, *draws)

    def _transition(self, action: torch.Tensor, draws: _Draws, fraction: float | torch.Tensor) -> StepResult:
        """Everything `step` does after the random draws (no random calls, no host syncs: compilable)."""
        action = action.reshape(self.num_envs, 4).T.contiguous().clamp_(-1.0, 1.0)
        self._advance(action)
        errors, rotation = self._errors()
        distance = _norm(errors[0])
        terminated = self._crashed(distance, rotation)
        noise = self._scaled_noise(draws)
        final_obs, final_privileged = self._observe(errors, rotation, noise), self._privileged()
        reward = self._reward(errors, distance, rotation, action, terminated)
        truncated, success = self._time_limit(distance, terminated)
        obs = self._auto_reset(terminated | truncated, final_obs, draws, fraction)
        self.privileged_obs = self._privileged()
        info = {
            INFO_FINAL_OBS: final_obs.T.contiguous(),
            INFO_PRIVILEGED_OBS: self.privileged_obs,
            INFO_FINAL_PRIVILEGED_OBS: final_privileged,
            INFO_SUCCESS: success,
            INFO_TRACKING_ERROR: distance,
        }
        return obs.T.contiguous(), reward, terminated, truncated, info

    def _numba_applies(self, reference: Reference) -> bool:
        """For backend "auto": the numba step fits this env and numba is installed."""
        if self.device.type != "cpu" or not isinstance(reference, FixedPoint) or self.config.numba_unsupported():
            return False
        return importlib.util.find_spec("numba") is not None

    def _fused_kernel(self) -> Any:
        """The numba step (`robo_rl.sim.quadrotor.fused`) and its constants, checked against this env."""
        if self.device.type != "cpu" or not isinstance(self._reference, FixedPoint):
            raise ValueError("HoverConfig.backend='numba' runs the hover task (a fixed point) on the CPU only")
        from robo_rl.sim.numba_support import FUSED_PARALLEL_ENVS
        from robo_rl.sim.quadrotor import fused

        # Below a few hundred envs one thread beats waking numba's pool (sim_bridge steps one env in real time).
        self._fused_threads = torch.get_num_threads() if self.num_envs >= FUSED_PARALLEL_ENVS else 1
        self._fused_constants = fused.constants(
            self.config, self.params, self._action_map, self._nominal.geometry, self._sampler
        )
        return fused

    def _fused_step(self, action: torch.Tensor) -> StepResult:
        """`step` by the numba kernel: the same outcome as `_transition` (to float rounding) but for the reset draws."""
        n, dim = self.num_envs, self.obs_spec.dim
        action = action.to(device="cpu", dtype=self.dtype).reshape(n, 4).contiguous()
        constants = self._fused.with_fraction(self._fused_constants, self.config, self.curriculum_fraction)
        final_obs, obs = torch.empty(dim, n), torch.empty(dim, n)
        reward, distance = torch.empty(n), torch.empty(n)
        done, terminated, truncated, success = (torch.empty(n, dtype=torch.bool) for _ in range(4))
        rotor, rotor_now = torch.empty(4, n), torch.empty(4, n)
        outcome = (final_obs, reward, done, terminated, truncated, success, distance, rotor)
        # The kernel draws new episode parameters in place where an episode ends: keep the ended ones.
        final_episode = self._episode.clone() if self._draws_episodes else self._episode
        self._fused.step(
            self._fused_threads,
            constants, self._state.numpy(), self._history.numpy(), self._steps.numpy(), self._error_sum.numpy(),
            self._integral.numpy(), self._episode.numpy(), self._action_buffer.numpy(), action.numpy(),
            self._fused_seed, self.control_steps, tuple(t.numpy() for t in outcome), obs.numpy(), rotor_now.numpy(),
        )  # fmt: skip
        self.privileged_obs = torch.cat((self._episode, rotor_now)).T.contiguous()
        info = {
            INFO_FINAL_OBS: final_obs.T.contiguous(),
            INFO_PRIVILEGED_OBS: self.privileged_obs,
            INFO_FINAL_PRIVILEGED_OBS: torch.cat((final_episode, rotor)).T.contiguous(),
            INFO_SUCCESS: success,
            INFO_TRACKING_ERROR: distance,
        }
        return obs.T.contiguous(), reward, terminated, truncated, info

    def render(self, index: int = 0) -> np.ndarray:
        """RGB frame `(480, 480, 3)` uint8 of env `index` now: its body, its reference point and its path since
        the episode started (matplotlib, headless)."""
        if not 0 <= index < self.num_envs:
            raise IndexError(f"render: env index {index} out of range for {self.num_envs} envs")
        steps = int(self._steps[index])
        renderer, last_steps = self._renderers.get(index, (None, -1))
        if renderer is None:
            from robo_rl.sim.quadrotor.render import QuadrotorRenderer

            center, half_width = self.render_box
            renderer = QuadrotorRenderer(self.params.arm_length, center, half_width)
        self._renderers[index] = (renderer, steps)
        state = self._state[:, index].detach().to("cpu", torch.float64)
        time = torch.tensor([steps * self.dt], device=self.device, dtype=self.dtype)
        reference = self._reference(time, self._phase[index : index + 1])[0][:, 0].cpu().double().numpy()
        rotation = quat_to_rotmat(state[QUATERNION]).numpy()
        return renderer.draw(state[POSITION].numpy(), rotation, reference, steps * self.dt, steps < last_steps)

    def _physics_state(self) -> dict[str, Any]:
        """Its "state" entry is `(num_envs, 17)`, the others are internal (component-major)."""
        return {
            "state": self.state,
            "episode": self._episode.clone(),
            "phase": self._phase.clone(),
            "error_sum": self._error_sum.clone(),
            "history": self._history.clone(),
            "integral": self._integral.clone(),
            "action_buffer": self._action_buffer.clone(),
            "control_steps": self.control_steps,
            "fused_seed": self._fused_seed,
        }

    def _load_physics_state(self, state_dict: dict[str, Any]) -> None:
        for name in ("episode", "phase", "error_sum", "history", "action_buffer", "integral"):
            if name not in state_dict:  # "integral": checkpoints from before the position integral
                continue
            setattr(self, f"_{name}", state_dict[name].to(device=self.device, dtype=self.dtype).clone())
        self.control_steps = int(state_dict.get("control_steps", 0))
        self._fused_seed = int(state_dict.get("fused_seed", 0))
        self._apply_episode()
        # Not set_state: renormalizing the saved quaternion would change its last bits.
        self._state = state_dict["state"].to(device=self.device, dtype=self.dtype).T.contiguous()
        self.privileged_obs = self._privileged()

    # ------------------------------------------------------------------------------------------------ internals

    def _make_constants(self) -> None:
        c, p = self.config, self.params

        def column(values: list[float]) -> torch.Tensor:
            return torch.tensor(values, device=self.device, dtype=self.dtype).unsqueeze(-1)

        self._hover = column(list(self.hover_action))
        self._hover_history = self._hover.repeat(c.action_history, 1)
        self._hover_buffer = self._hover.unsqueeze(0).repeat(self._sampler.max_latency + 1, 1, 1)
        self._hover_target = self._hover
        """The action the reward's action term measures from: `(4, 1)` the frame's hover action, or with airframes
        `(1, N)` each airframe's own (`_apply_episode`)."""
        self._state_template = column([0.0, 0.0, 0.0, 1.0] + [0.0] * 9 + [p.hover_command] * 4)
        ranges = [c.init_position_range] * 3 + [c.init_velocity_range] * 3 + [c.init_angular_velocity_range] * 3
        self._init_width = column([2 * r for r in ranges])
        self._init_offset = column([-r for r in ranges])
        noise = c.randomization.observation_noise
        self._noise_std = column([s for s in noise for _ in range(3)]) if any(noise) else None
        self._nominal_mass = p.mass
        self._nominal_inertia = column(list(p.inertia))
        self._integral_limit = c.position_integral_limit
        self._cos_max_tilt = math.cos(c.max_tilt)
        self._max_angular_speed_squared = c.max_angular_speed**2
        # Reward: weights @ [e_p; e_v; w; a - hover]^2, rows 3 + 3 + 3 + 4.
        weights = [c.position_weight] * 3 + [c.velocity_weight] * 3 + [c.angular_velocity_weight] * 3
        self._cost_weights = torch.tensor([weights + [c.action_weight] * 4], device=self.device, dtype=self.dtype)

    def _check_motor_stability(self) -> None:
        h = self.config.dt / self.config.substeps
        ranges = self.config.randomization.scale_ranges(self.params)
        p = self.params
        tau = min(p.motor_rise_time_constant * ranges[6][0], p.motor_fall_time_constant * ranges[7][0])
        if self.config.airframes is not None:  # the fall is never faster than the rise
            tau = self.config.airframes.motor_rise_time_constant[0]
        if h >= tau:
            raise ValueError(
                f"integration step dt/substeps = {h:.4g} s is not below the smallest motor time constant "
                f"{tau:.4g} s of frame {self.params.name!r}; increase HoverConfig.substeps"
            )

    def _obs_spec(self) -> SpaceSpec:
        inf = math.inf
        moving = self._reference.moving
        velocity = "velocity_error" if moving else "velocity"
        groups = [
            (_xyz("position_error"), -inf, inf, "m"),
            ([f"rotation_{r}{c}" for r in range(3) for c in range(3)], -1.0, 1.0, "1"),
            (_xyz(velocity), -inf, inf, "m/s"),
            (_xyz("angular_velocity"), -inf, inf, "rad/s"),
        ]
        if moving:
            groups.append((_xyz("reference_velocity"), -inf, inf, "m/s"))
        self._integrates = self.config.position_integral_limit > 0
        if self._integrates:
            limit = self.config.position_integral_limit
            groups.append((_xyz("position_error_integral"), -limit, limit, "m*s"))
        history = [f"previous_action_{k}_{i}" for k in range(self.config.action_history) for i in range(4)]
        groups.append((history, -1.0, 1.0, "1"))
        return SpaceSpec(
            names=tuple(name for g in groups for name in g[0]),
            low=tuple(g[1] for g in groups for _ in g[0]),
            high=tuple(g[2] for g in groups for _ in g[0]),
            units=tuple(g[3] for g in groups for _ in g[0]),
        )

    def _rotor_spec(self) -> SpaceSpec:
        names = tuple(f"motor_state_{i}" for i in range(4))
        return SpaceSpec(names, (0.0,) * 4, (1.0,) * 4, ("1",) * 4)

    def _advance(self, action: torch.Tensor) -> None:
        """Apply the clipped action `(4, N)` (after its latency) for one control period."""
        command = self._action_map(self._delayed(action), self._state[ANGULAR_VELOCITY])
        if self.config.action_history > 0:
            self._history = torch.cat((action, self._history[:-4]))
        c = self.config
        dynamics, force, torque = self._dynamics, self._force, self._torque
        if c.event is not None:
            dynamics, force, torque = after_event(c.event, self.episode_time, self._state, dynamics, force, torque)
        self._state = integrate(self._state, command, dynamics, c.dt, c.substeps, c.integrator, force, torque)
        self._tick()

    def _time_limit(self, distance: torch.Tensor, terminated: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(truncated, success) `(N,)`; accumulates the position error of the episode's final window."""
        window = self.config.success_steps
        self._error_sum.addcmul_(distance, self._steps > self.max_episode_steps - window)
        truncated = self._truncated(terminated)
        success = truncated & (self._error_sum < self.config.success_position_error * window)
        return truncated, success

    def _delayed(self, action: torch.Tensor) -> torch.Tensor:
        """The action `(4, N)` to apply now: `action` delayed by each env's latency in control steps."""
        if self._sampler.max_latency == 0:
            return action
        self._action_buffer = torch.cat((action.unsqueeze(0), self._action_buffer[:-1]))
        return self._action_buffer.gather(0, self._latency_index).squeeze(0)

    def _errors(self) -> tuple[tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]:
        """((position error, velocity error, body rates, reference velocity) `(3, N)` each, rotation `(9, N)`)."""
        reference_position, reference_velocity = self._reference(self.episode_time, self._phase)
        state = self._state
        position_error = state[POSITION] - reference_position
        velocity_error = state[VELOCITY] - reference_velocity
        rotation = rotation_rows(state[QUATERNION])
        return (position_error, velocity_error, state[ANGULAR_VELOCITY], reference_velocity), rotation

    def _draw(self) -> _Draws:
        """The random numbers of one step (or reset), in a fixed order: noise, episode parameters, initial state."""
        generator, shape = self._generator, (9, self.num_envs)
        noise = None
        if self._noise_std is not None:
            noise = torch.randn(shape, generator=generator, device=self.device, dtype=self.dtype)
        episode = self._sampler.draw(self.num_envs, generator) if self._draws_episodes else None
        init = torch.rand(_INIT_DRAWS, self.num_envs, generator=generator, device=self.device, dtype=self.dtype)
        return _Draws(noise, episode, init)

    def _scaled_noise(self, draws: _Draws) -> torch.Tensor | None:
        """`(9, N)` observation noise for (position error, velocity error, body rates), or None when off."""
        return None if draws.noise is None or self._noise_std is None else draws.noise * self._noise_std

    def _observe(
        self,
        errors: tuple[torch.Tensor, ...],
        rotation: torch.Tensor,
        noise: torch.Tensor | None,
        integrate: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Component-major observation `(obs_dim, N)`. With the position integral on, the integral of the envs in
        `integrate` (a `(N,)` mask; None: all) first takes in this observation's position error."""
        position_error, velocity_error, angular_velocity, reference_velocity = errors
        if noise is not None:
            position_error, velocity_error, angular_velocity = (
                position_error + noise[0:3], velocity_error + noise[3:6], angular_velocity + noise[6:9]
            )  # fmt: skip
        parts = [position_error, rotation.clamp(-1.0, 1.0), velocity_error, angular_velocity]
        if self._reference.moving:
            parts.append(reference_velocity)
        if self._integrates:
            increment = position_error * self.dt if integrate is None else position_error * (integrate * self.dt)
            self._integral = (self._integral + increment).clamp_(-self._integral_limit, self._integral_limit)
            parts.append(self._integral)
        parts.append(self._history)
        return torch.cat(parts)

    def _privileged(self) -> torch.Tensor:
        """Batch-major privileged observation `(N, 22)`."""
        return torch.cat((self._episode, self._state[MOTOR_STATE])).T.contiguous()

    def _crashed(self, distance: torch.Tensor, rotation: torch.Tensor) -> torch.Tensor:
        # Written as "not within bounds" so that NaN states count as crashes.
        c = self.config
        within = (distance <= c.max_position_error) & (rotation[8] >= self._cos_max_tilt)
        within &= self._state[ANGULAR_VELOCITY].square().sum(0) <= self._max_angular_speed_squared
        if c.floor_height is not None:
            within &= self._state[2] >= c.floor_height
        return ~within

    def _reward(
        self,
        errors: tuple[torch.Tensor, ...],
        distance: torch.Tensor,
        rotation: torch.Tensor,
        action: torch.Tensor,
        terminated: torch.Tensor,
    ) -> torch.Tensor:
        c = self.config
        position_error, velocity_error, angular_velocity, _ = errors
        deviations = torch.cat((position_error, velocity_error, angular_velocity, action - self._hover_target))
        cost = rows_matmul(self._cost_weights, deviations.square_()).squeeze(0)
        cost = cost.add_(1.0 - rotation[8], alpha=c.attitude_weight)
        if c.reward_floor is None:
            cost = cost.add_(terminated, alpha=c.crash_penalty)
        cost = cost.add_(distance, alpha=c.distance_weight)
        if self._integrates and c.integral_weight > 0:
            cost = cost.add_(self._integral.square().sum(0), alpha=c.integral_weight)
        reward = cost.neg_().add_(c.alive_reward)
        if c.reward_floor is None:
            return reward
        return reward.clamp_(min=c.reward_floor).sub_(terminated.to(reward.dtype), alpha=c.crash_penalty)

    def _reset_where(self, done: torch.Tensor, draws: _Draws, fraction: float | torch.Tensor) -> None:
        if draws.episode is not None:
            self._episode = torch.where(done, self._sampler.from_uniform(draws.episode, fraction), self._episode)
        uniform = draws.init
        self._phase = torch.where(done, self._reference.phase(uniform[12]), self._phase)
        self._state = torch.where(done, self._initial_state(uniform, fraction), self._state)
        self._error_sum.masked_fill_(done, 0.0)
        if self.config.action_history > 0:
            self._history = torch.where(done, self._hover_history, self._history)
        if self._integrates:
            self._integral = self._integral.masked_fill(done, 0.0)
        if self._sampler.max_latency > 0:
            self._action_buffer = torch.where(done, self._buffer_start(), self._action_buffer)
        if self._draws_episodes:
            self._apply_episode()

    def _first_obs(self, done: torch.Tensor, draws: _Draws, fraction: float | torch.Tensor) -> torch.Tensor:
        # The first observation of a new episode reuses this step's noise draw (its last one is only for bootstrap).
        return self._observe(*self._errors(), self._scaled_noise(draws), done)

    def _initial_state(self, uniform: torch.Tensor, fraction: float | torch.Tensor) -> torch.Tensor:
        """`(17, N)` initial states around the reference at time 0 (uses `self._phase`), from U(0, 1) `(13, N)`,
        with every range scaled by the curriculum `fraction`."""
        offsets = torch.addcmul(self._init_offset, uniform[:9], self._init_width)
        if isinstance(fraction, torch.Tensor) or fraction < 1.0:
            offsets = offsets * fraction
        reference_position, reference_velocity = self._reference(torch.zeros_like(self._phase), self._phase)
        half_angle = uniform[9] * (self.config.init_attitude_range * fraction / 2)
        axis_z = uniform[10] * 2 - 1  # uniform on the sphere: z ~ U(-1, 1), azimuth ~ U(0, 2 pi)
        azimuth = uniform[11] * (2 * math.pi)
        radius = (1 - axis_z.square()).clamp_(min=0.0).sqrt_()
        axis = torch.stack((radius * azimuth.cos(), radius * azimuth.sin(), axis_z))
        quaternion = torch.cat((half_angle.cos().unsqueeze(0), axis.mul_(half_angle.sin())))
        position, velocity = reference_position + offsets[0:3], reference_velocity + offsets[3:6]
        rotor = self._state_template[MOTOR_STATE].expand(-1, self.num_envs)
        if self.config.airframes is not None:  # each airframe starts at its own hover command
            rotor = self._airframe_hover_command().expand(4, -1)
        return torch.cat((position, quaternion, velocity, offsets[6:9], rotor))

    def _airframe_hover_command(self) -> torch.Tensor:
        """`(1, N)` each env's hover command (normalized motor command) of the episode parameters now."""
        return self._episode[len(EPISODE_NAMES) + HOVER_FEATURE :][:1]

    def _buffer_start(self) -> torch.Tensor:
        """The latency buffer of a new episode `(L + 1, 4, N or 1)`: the hover action (each airframe's own)."""
        if self.config.airframes is None:
            return self._hover_buffer
        hover = self._action_map.action_of(self._airframe_hover_command())
        return hover.unsqueeze(0).expand(self._sampler.max_latency + 1, 4, -1)

    def _apply_episode(self) -> None:
        """Derive the dynamics parameters, disturbances and latencies from the episode parameters."""
        randomization, episode = self.config.randomization, self._episode
        airframes = self.config.airframes is not None
        self._dynamics = self._nominal
        if randomization.randomizes_dynamics or airframes:
            scales = episode[SCALES].clone()
            scales[THRUST_SCALE] *= episode[BATTERY]
            curve = None
            if self._sampler.rebuilds_thrust_curve:
                curve = thrust_curves(episode, self._nominal.mass * scales[0], self.params.gravity)
            self._dynamics = self._nominal.scaled(scales, curve)
        self._force = self._torque = None
        if randomization.has_disturbance:  # accelerations of the nominal frame, or of each drawn airframe
            mass = self._dynamics.mass if airframes else self._nominal_mass
            inertia = self._dynamics.inertia if airframes else self._nominal_inertia  # the arm folded in
            self._force = episode[DISTURBANCE_ACCELERATION] * mass
            self._torque = episode[DISTURBANCE_ANGULAR_ACCELERATION] * inertia
        if self._sampler.max_latency > 0:
            self._latency_index = episode[LATENCY : LATENCY + 1].long().unsqueeze(1).expand(1, 4, self.num_envs)
        if airframes:
            self._hover_target = self._action_map.action_of(self._airframe_hover_command())


def _norm(vectors: torch.Tensor) -> torch.Tensor:
    """`(N,)` Euclidean norms of component-major vectors `(3, N)` (norm(dim=0) is slow on CPU)."""
    return vectors.square().sum(0).sqrt_()


def _xyz(prefix: str) -> list[str]:
    return [f"{prefix}_{axis}" for axis in "xyz"]


def _concat_specs(first: SpaceSpec, second: SpaceSpec) -> SpaceSpec:
    return SpaceSpec(
        names=first.names + second.names,
        low=first.low + second.low,
        high=first.high + second.high,
        units=first.units + second.units,
    )
