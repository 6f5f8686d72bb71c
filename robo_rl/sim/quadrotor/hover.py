"""Quadrotor hover as a `BatchedEnv`: fly to a reference point from a random initial state and stay there.

`QuadrotorHover` flies to a fixed point by default; given a moving `Reference` it is the engine of
`QuadrotorTrack`. Its settings are `HoverConfig` (`robo_rl.sim.quadrotor.hover_config`), its torch step's crash
test, reward and initial states `robo_rl.sim.quadrotor.hover_physics`, its numba step
`robo_rl.sim.quadrotor.hover_numba`. Conventions (frames, rotor order, spin) are in `robo_rl.sim.quadrotor.params`,
the action modes in `robo_rl.sim.quadrotor.actions`, the domain randomization in
`robo_rl.sim.quadrotor.randomization`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

import robo_rl.sim.quadrotor.hover_physics as physics
from robo_rl.actuator import MotorActuator
from robo_rl.cost_spec import tilt_above
from robo_rl.envs import (
    INFO_COST,
    INFO_FINAL_OBS,
    INFO_FINAL_PRIVILEGED_OBS,
    INFO_PRIVILEGED_OBS,
    INFO_SUCCESS,
    INFO_TRACKING_ERROR,
    SpaceSpec,
    StepResult,
)
from robo_rl.sim.batched_task import BatchedTask
from robo_rl.sim.numba_dispatch import Backend, KernelRun, kernel_seed, uses_numba
from robo_rl.sim.quadrotor.actions import MotorActionMap, make_action_map
from robo_rl.sim.quadrotor.airframes import HOVER_FEATURE
from robo_rl.sim.quadrotor.dynamics import (
    ANGULAR_VELOCITY,
    MOTOR_STATE,
    POSITION,
    QUATERNION,
    STATE_DIM,
    VELOCITY,
    DynamicsParams,
    integrate,
    normalize_quaternion_,
    quat_to_rotmat,
    rotation_rows,
)
from robo_rl.sim.quadrotor.events import after_event
from robo_rl.sim.quadrotor.hover_config import HoverConfig, concat_specs, observation_spec, rotor_spec
from robo_rl.sim.quadrotor.hover_physics import Draws, Errors, HoverTensors
from robo_rl.sim.quadrotor.params import load_frame
from robo_rl.sim.quadrotor.randomization import (
    EPISODE_NAMES,
    LATENCY,
    EpisodeSampler,
)
from robo_rl.sim.quadrotor.reference import FixedPoint, Reference

__all__ = ["Backend", "HoverConfig", "QuadrotorHover"]

DEFAULT_CONFIG = HoverConfig()

if TYPE_CHECKING:  # matplotlib loads only when an env renders; numba only for the numba step
    from robo_rl.sim.quadrotor.hover_numba import HoverKernel
    from robo_rl.sim.quadrotor.render import QuadrotorRenderer


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

    component_major = True

    def __init__(
        self,
        num_envs: int,
        device: str | torch.device = "cpu",
        config: HoverConfig = DEFAULT_CONFIG,
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
        self._motor_map = self._action_map if isinstance(self._action_map, MotorActionMap) else None
        self.hover_action: tuple[float, float, float, float] = self._action_map.hover_action
        self.nominal_action = self.hover_action
        """The action that holds the nominal frame at rest (`PolicyConfig.init_mean="nominal"` starts there)."""
        self._nominal = DynamicsParams.nominal(self.params, num_envs, self.device, self.dtype)
        self._sampler = EpisodeSampler(
            config.randomization, self.params, self.device, self.dtype, config.airframes, config.dt
        )
        self._draws_episodes = config.randomization.enabled or config.airframes is not None
        physics.check_motor_stability(config, self.params)
        self._integrates = config.position_integral_limit > 0
        self.obs_spec = observation_spec(config, reference.moving)
        self.action_spec = SpaceSpec(self._action_map.names, (-1.0,) * 4, (1.0,) * 4, ("1",) * 4)
        self.privileged_obs_spec = concat_specs(self._sampler.spec, rotor_spec())
        self.actuator: MotorActuator | None = getattr(self._action_map, "actuator", None)
        """What a "motor" action means physically (None in "ctbr" mode)."""
        self._make_constants()
        self.control_steps = 0
        """Batched `step` calls since construction (not reset by `reset`): the curriculum's clock."""
        self._transition_fn = torch.compile(self._transition, dynamic=False) if config.compile else self._transition
        self._fused: HoverKernel | None = None
        self._fused_seed = 0
        self.cost_spec = None if config.cost_tilt_limit <= 0 else tilt_above(config.cost_tilt_limit)
        applies = self.device.type == "cpu" and isinstance(reference, FixedPoint) and not config.numba_unsupported()
        if uses_numba(config.backend, applies):
            self._fused = self._numba_kernel()
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
        return physics.norm(self._errors()[0][0])

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
            self._fused_seed = kernel_seed(self._generator)
        return self._observe(*self._errors(), self._scaled_noise(draws)).T.contiguous()

    @property
    def curriculum_fraction(self) -> float:
        """Current size of the initial-state and randomization ranges relative to the configured ones."""
        return self.config.curriculum.fraction(self.control_steps)

    def step(self, action: torch.Tensor) -> StepResult:
        """Apply actions `(num_envs, 4)` in [-1, 1] for `dt`; auto-resets envs whose episode is over."""
        if self._fused is not None:
            self.control_steps += 1
            return self._numba_step(self._fused, action)
        return self.transition(action, self.draw())

    @property
    def capturable(self) -> bool:
        """Whether `draw` / `transition` apply (the torch step; the numba step is one CPU kernel of its own)."""
        return self._fused is None

    def draw(self) -> tuple[Draws, float | torch.Tensor]:
        """The random numbers of one `step` and its curriculum fraction (`robo_rl.envs.CapturableEnv`); counts the
        step. The fraction is a 0-d tensor on the env's device while a curriculum grows it (a captured graph reads
        the new value), else the float 1.0."""
        if self._fused is not None:
            raise ValueError("the numba step (HoverConfig.backend='numba') has no split step: use backend='torch'")
        self.control_steps += 1
        value = self.curriculum_fraction
        fraction: float | torch.Tensor = value
        if self.config.curriculum.steps > 0:
            fraction = torch.full((), value, device=self.device, dtype=self.dtype)
        elif self.config.compile and value < 1.0:
            fraction = torch.tensor(value, dtype=self.dtype)  # a CPU scalar input: no recompile per value
        return self._draw(), fraction

    def transition(self, action: torch.Tensor, draws: tuple[Draws, float | torch.Tensor]) -> StepResult:
        """`step` after `draw`: no random call, no host sync (compiled with `HoverConfig.compile`)."""
        action = action.to(device=self.device, dtype=self.dtype)
        return self._transition_fn(action, *draws)

    def _transition(self, action: torch.Tensor, draws: Draws, fraction: float | torch.Tensor) -> StepResult:
        """Everything `step` does after the random draws (no random calls, no host syncs: compilable)."""
        action = action.reshape(self.num_envs, 4).T.contiguous().clamp_(-1.0, 1.0)
        self._advance(action)
        errors, rotation = self._errors()
        distance = physics.norm(errors[0])
        terminated = physics.crashed(self.config, self._state, distance, rotation)
        noise = self._scaled_noise(draws)
        final_obs, final_privileged = self._observe(errors, rotation, noise), self._privileged()
        integral = self._integral if self._integrates and self.config.integral_weight > 0 else None
        offset = action - self._hover_target
        weights = self._cost_weights
        reward = physics.reward(self.config, weights, errors, distance, rotation, offset, terminated, integral)
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
        if self.cost_spec is not None:  # the tilt after the step (before any reset), above the limit
            tilt = torch.acos(rotation[8].clamp(-1.0, 1.0))
            info[INFO_COST] = (tilt - self.config.cost_tilt_limit).clamp_(min=0.0)
        return obs.T.contiguous(), reward, terminated, truncated, info

    @property
    def kernel_run(self) -> KernelRun | None:
        """The numba step's kernel run (its `threads` may be set), or None where the torch step runs."""
        return None if self._fused is None else self._fused.run

    def _numba_kernel(self) -> HoverKernel:
        """The numba step (`robo_rl.sim.quadrotor.hover_numba`) of this env, checked against it."""
        if self.device.type != "cpu" or not isinstance(self._reference, FixedPoint) or self._motor_map is None:
            raise ValueError("HoverConfig.backend='numba' runs the hover task (a fixed point) on the CPU only")
        from robo_rl.sim.quadrotor.hover_numba import HoverKernel

        geometry = self._nominal.geometry
        return HoverKernel(
            self.config, self.params, self._motor_map, geometry, self._sampler, self.num_envs, self.obs_spec.dim
        )

    def _numba_step(self, kernel: HoverKernel, action: torch.Tensor) -> StepResult:
        """`step` by the numba kernel: the same outcome as `_transition` (to float rounding) but for the reset draws."""
        tensors = HoverTensors(
            self._state, self._history, self._steps, self._error_sum, self._integral, self._episode,
            self._action_buffer,
        )  # fmt: skip
        result = kernel.step(tensors, action, self._fused_seed, self.control_steps, self.curriculum_fraction)
        self.privileged_obs = result[4][INFO_PRIVILEGED_OBS]
        return result

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
            setattr(self, f"_{name}", state_dict[name].to(device=self.device, dtype=self.dtype).clone())
        self.control_steps = int(state_dict["control_steps"])
        self._fused_seed = int(state_dict["fused_seed"])
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
        # Reward: weights @ [e_p; e_v; w; a - hover]^2, rows 3 + 3 + 3 + 4.
        weights = [c.position_weight] * 3 + [c.velocity_weight] * 3 + [c.angular_velocity_weight] * 3
        self._cost_weights = torch.tensor([weights + [c.action_weight] * 4], device=self.device, dtype=self.dtype)

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

    def _errors(self) -> tuple[Errors, torch.Tensor]:
        """((position error, velocity error, body rates, reference velocity) `(3, N)` each, rotation `(9, N)`)."""
        reference_position, reference_velocity = self._reference(self.episode_time, self._phase)
        state = self._state
        position_error = state[POSITION] - reference_position
        velocity_error = state[VELOCITY] - reference_velocity
        rotation = rotation_rows(state[QUATERNION])
        return (position_error, velocity_error, state[ANGULAR_VELOCITY], reference_velocity), rotation

    def _draw(self) -> Draws:
        """The random numbers of one step (or reset), in a fixed order: noise, episode parameters, initial state."""
        sampler = self._sampler if self._draws_episodes else None
        noise = self._noise_std is not None
        return physics.draw(self._generator, self.num_envs, noise, sampler, self.device, self.dtype)

    def _scaled_noise(self, draws: Draws) -> torch.Tensor | None:
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

    def _reset_where(self, done: torch.Tensor, draws: Draws, fraction: float | torch.Tensor) -> None:
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

    def _first_obs(self, done: torch.Tensor, draws: Draws, fraction: float | torch.Tensor) -> torch.Tensor:
        # The first observation of a new episode reuses this step's noise draw (its last one is only for bootstrap).
        return self._observe(*self._errors(), self._scaled_noise(draws), done)

    def _initial_state(self, uniform: torch.Tensor, fraction: float | torch.Tensor) -> torch.Tensor:
        """`(17, N)` initial states around the reference at time 0 (uses `self._phase`), from U(0, 1) `(13, N)`,
        with every range scaled by the curriculum `fraction` (`hover_physics.initial_state`)."""
        reference = self._reference(torch.zeros_like(self._phase), self._phase)
        rotor = self._state_template[MOTOR_STATE].expand(-1, self.num_envs)
        if self.config.airframes is not None:  # each airframe starts at its own hover command
            rotor = self._airframe_hover_command().expand(4, -1)
        offset, width = self._init_offset, self._init_width
        return physics.initial_state(self.config, uniform, fraction, offset, width, reference, rotor)

    def _airframe_hover_command(self) -> torch.Tensor:
        """`(1, N)` each env's hover command (normalized motor command) of the episode parameters now."""
        return self._episode[len(EPISODE_NAMES) + HOVER_FEATURE :][:1]

    def _buffer_start(self) -> torch.Tensor:
        """The latency buffer of a new episode `(L + 1, 4, N or 1)`: the hover action (each airframe's own)."""
        if self.config.airframes is None:
            return self._hover_buffer
        hover = self._airframe_action(self._airframe_hover_command())
        return hover.unsqueeze(0).expand(self._sampler.max_latency + 1, 4, -1)

    def _apply_episode(self) -> None:
        """Derive the dynamics parameters, disturbances and latencies from the episode parameters."""
        episode, nominal = self._episode, self._nominal
        rebuilds, gravity = self._sampler.rebuilds_thrust_curve, self.params.gravity
        self._dynamics, self._force, self._torque = physics.episode_dynamics(
            self.config, episode, nominal, rebuilds, gravity, self._nominal_mass, self._nominal_inertia
        )
        if self._sampler.max_latency > 0:
            self._latency_index = episode[LATENCY : LATENCY + 1].long().unsqueeze(1).expand(1, 4, self.num_envs)
        if self.config.airframes is not None:
            self._hover_target = self._airframe_action(self._airframe_hover_command())

    def _airframe_action(self, command: torch.Tensor) -> torch.Tensor:
        """The actions that give the motor commands `command` (airframes fly "motor" actions only)."""
        if self._motor_map is None:
            raise ValueError("HoverConfig.airframes needs action_mode='motor'")
        return self._motor_map.action_of(command)
