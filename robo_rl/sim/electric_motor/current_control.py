"""PMSM current (torque) control at 10 kHz: follow random dq current references, never trip the current limit.

Each env is one motor held at a constant speed drawn per episode (a dynamometer, GEM's ConstantSpeedLoad), fed by a
two-level inverter (`pmsm.inverter_dq`), with current sensors of Gaussian noise and one control period of delay
between the command and the inverter (the digital controller's computation delay, GEM's DeadTimeProcessor of one
step). References are piecewise constant, redrawn after random holds, always reachable (`references`).

Observation (normalized, 7): current error (ref - measured) d, q / i_nominal; reference d, q / i_nominal; speed /
omega_limit; the command still pending from the last step (d, q; it is what the inverter applies next).
Action (2): normalized dq voltage command, 1 = u_dc/2 per axis (the inverter clips each phase to its rail).
Reward: -(|e_d| + |e_q|) / i_nominal with the true currents after the step; a trip (|i_dq| > i_limit) terminates the
episode with `trip_penalty` more. Success: no trip and a mean error (|e_d| + |e_q|)/2 over the episode below
`success_error` * i_nominal. `info["tracking_error"]`: |i_dq - ref| in A after the step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from robo_rl.envs import INFO_SUCCESS, INFO_TRACKING_ERROR, SpaceSpec, StepResult
from robo_rl.sim.batched_task import BatchedTask
from robo_rl.sim.electric_motor.params import PmsmParams
from robo_rl.sim.electric_motor.pmsm import PmsmState, inverter_dq, pmsm_step
from robo_rl.sim.electric_motor.references import draw_references

OBS_NAMES = ("error_d", "error_q", "reference_d", "reference_q", "speed", "pending_u_d", "pending_u_q")
INFO_AXIS_ERROR = "axis_error"
"""info key: `(N, 2)` reference - current per axis (d, q) in A after the step."""
INFO_TRIP = "trip"
"""info key: `(N,)` bool, the current limit was exceeded at this step (the episode terminates)."""


@dataclass(frozen=True)
class CurrentControlConfig:
    """The current-control task; the motor and inverter are GEM's defaults (`PmsmParams`)."""

    motor: PmsmParams = field(default_factory=PmsmParams)
    """The motor, its inverter and its limits."""
    dt: float = 1e-4
    """Control period in s (10 kHz)."""
    max_episode_steps: int = 256
    """Steps per episode (25.6 ms)."""
    speed_range: float = 1.0
    """Each episode's speed is drawn with |speed| in [speed_min, speed_range] * omega_limit, either direction."""
    speed_min: float = 0.0
    """The low end of |speed| / omega_limit (e.g. 0.75: only near the voltage limit, where field weakening starts)."""
    hold_steps: tuple[int, int] = (32, 160)
    """A reference is held for a number of steps drawn from this range (inclusive), then redrawn."""
    voltage_margin: float = 0.9
    """References need at most this fraction of u_dc/2 in steady state."""
    noise_std: float = 1.0
    """Current sensor noise (standard deviation) in A."""
    delay_steps: int = 1
    """Control periods between a command and the inverter applying it (0 or 1)."""
    trip_penalty: float = 50.0
    """Reward lost when the current limit trips."""
    success_error: float = 0.05
    """Success: mean per-axis error over the episode below this fraction of i_nominal, without a trip."""

    def __post_init__(self) -> None:
        if not (self.dt > 0 and self.max_episode_steps > 0 and 0 <= self.speed_min <= self.speed_range <= 1):
            raise ValueError("CurrentControlConfig: dt, max_episode_steps > 0 and 0 <= speed_min <= speed_range <= 1")
        if self.delay_steps not in (0, 1):
            raise ValueError(f"CurrentControlConfig.delay_steps must be 0 or 1, got {self.delay_steps}")
        low, high = self.hold_steps
        if not 1 <= low <= high:
            raise ValueError(f"CurrentControlConfig.hold_steps must be 1 <= low <= high, got {self.hold_steps}")
        if not (0 < self.voltage_margin <= 1 and self.noise_std >= 0 and self.success_error > 0):
            raise ValueError("CurrentControlConfig: voltage_margin in (0, 1], noise_std >= 0, success_error > 0")


def draw_speeds(unit: torch.Tensor, config: CurrentControlConfig) -> torch.Tensor:
    """Speeds in rad/s from uniform draws `unit` in [0, 1): |speed| uniform in [speed_min, speed_range] * omega_limit,
    the sign from which half of [0, 1) the draw fell in."""
    half = 2 * unit - 1
    magnitude = config.speed_min + (config.speed_range - config.speed_min) * half.abs()
    return torch.sign(half) * magnitude * config.motor.omega_limit


class PmsmCurrentControl(BatchedTask):
    """`num_envs` PMSMs under current control (`BatchedEnv`; module docstring)."""

    state_attributes = ("_i_d", "_i_q", "_eps", "_omega", "_pending", "_ref", "_hold", "_error_sum")

    def __init__(
        self,
        num_envs: int,
        device: str | torch.device = "cpu",
        config: CurrentControlConfig = CurrentControlConfig(),
        seed: int | None = None,
    ) -> None:
        super().__init__(num_envs, device, config.dt, config.max_episode_steps, seed)
        self.config = config
        m = config.motor
        self.obs_spec = SpaceSpec(
            names=OBS_NAMES,
            low=(-3.0, -3.0, -1.0, -1.0, -1.0, -1.0, -1.0),
            high=(3.0, 3.0, 1.0, 1.0, 1.0, 1.0, 1.0),
            units=("1",) * 7,
        )
        self.action_spec = SpaceSpec(names=("u_d", "u_q"), low=(-1.0, -1.0), high=(1.0, 1.0), units=("1", "1"))
        zeros = torch.zeros(num_envs, dtype=self.dtype, device=self.device)
        self._i_d, self._i_q, self._eps, self._omega = zeros.clone(), zeros.clone(), zeros.clone(), zeros.clone()
        self._pending = torch.zeros(num_envs, 2, dtype=self.dtype, device=self.device)
        self._ref = torch.zeros(num_envs, 2, dtype=self.dtype, device=self.device)
        self._hold = torch.zeros(num_envs, dtype=torch.long, device=self.device)
        self._error_sum = zeros.clone()
        self._scale = m.i_nominal
        self.reset(seed)

    @property
    def motor_state(self) -> PmsmState:
        """Copies of the true currents (A), electrical angle (rad) and speed (rad/s), `(N,)` each."""
        return PmsmState(self._i_d.clone(), self._i_q.clone(), self._eps.clone(), self._omega.clone())

    @property
    def reference(self) -> torch.Tensor:
        """`(N, 2)` copy of the dq current references in A."""
        return self._ref.clone()

    def step(self, action: torch.Tensor) -> StepResult:
        c, m = self.config, self.config.motor
        command = action.to(device=self.device, dtype=self.dtype).reshape(self.num_envs, 2).clamp(-1.0, 1.0)
        applied = self._pending if c.delay_steps else command
        self._pending = command
        state = PmsmState(self._i_d, self._i_q, self._eps, self._omega)
        u_d, u_q = inverter_dq(applied, state, m, c.dt)
        self._i_d, self._i_q, self._eps, self._omega = pmsm_step(state, u_d, u_q, m, c.dt)
        error = self._ref - torch.stack((self._i_d, self._i_q), dim=-1)
        trip = self._i_d.square() + self._i_q.square() > m.i_limit**2
        reward = -error.abs().sum(-1) / self._scale - c.trip_penalty * trip
        self._error_sum = self._error_sum + 0.5 * error.abs().sum(-1)
        mean_error = self._error_sum / (self._steps + 1)
        success = ~trip & (mean_error <= c.success_error * m.i_nominal)
        info = {INFO_SUCCESS: success, INFO_TRACKING_ERROR: error.norm(dim=-1), INFO_AXIS_ERROR: error, INFO_TRIP: trip}
        self._advance_references()
        return self._end_step(self._current_obs(), reward, info, terminated=trip)

    def _advance_references(self) -> None:
        self._hold = self._hold - 1
        due = self._hold <= 0
        ref_d, ref_q = draw_references(self._omega, self.config.motor, self.config.voltage_margin, self._generator)
        self._renew(due, _ref=torch.stack((ref_d, ref_q), dim=-1), _hold=self._draw_holds())

    def _draw_holds(self) -> torch.Tensor:
        low, high = self.config.hold_steps
        return torch.randint(low, high + 1, (self.num_envs,), generator=self._generator, device=self.device)

    def _reset_where(self, done: torch.Tensor) -> None:
        c, m = self.config, self.config.motor
        unit = torch.rand(self.num_envs, 2, generator=self._generator, device=self.device, dtype=self.dtype)
        omega = draw_speeds(unit[:, 0], c)
        eps = (2 * unit[:, 1] - 1) * math.pi
        ref_d, ref_q = draw_references(omega, m, c.voltage_margin, self._generator)
        zeros = torch.zeros_like(omega)
        self._renew(
            done,
            _i_d=zeros,
            _i_q=zeros,
            _eps=eps,
            _omega=omega,
            _pending=torch.zeros_like(self._pending),
            _ref=torch.stack((ref_d, ref_q), dim=-1),
            _hold=self._draw_holds(),
            _error_sum=zeros,
        )

    def _current_obs(self) -> torch.Tensor:
        c, m = self.config, self.config.motor
        noise = torch.randn(self.num_envs, 2, generator=self._generator, device=self.device, dtype=self.dtype)
        measured = torch.stack((self._i_d, self._i_q), dim=-1) + c.noise_std * noise
        error = (self._ref - measured) / self._scale
        speed = (self._omega / m.omega_limit).unsqueeze(-1)
        return torch.cat((error, self._ref / self._scale, speed, self._pending), dim=-1)
