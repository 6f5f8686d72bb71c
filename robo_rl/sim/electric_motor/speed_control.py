"""PMSM speed control at 1 kHz above the 10 kHz PI/FOC current loop: bring a shaft with inertia and friction to
random speed references.

Each env is one motor on a free shaft with a load (`LoadParams`: inertia, Coulomb, viscous and fan friction, GEM's
PolynomialStaticLoad). The policy commands the torque once per millisecond; the current loop below it (the PI/FOC
controller of `foc`, tuned by gem-control's symmetric optimum) runs ten periods of 0.1 ms per step with i_d = 0 and
i_q = torque / (3/2 p psi_p), each with the current task's sensor noise and one period of delay. The torque
command itself reaches the current loop one speed period late (the speed controller's computation delay), and the
speed sensor has Gaussian noise.

Observation (normalized, 5): speed error (ref - measured) / omega_scale; reference / omega_scale; measured speed /
omega_scale; measured i_q / i_nominal; the pending torque command. Action (1): torque, 1 = the torque at the nominal
current. Reward: -|ref - speed| / omega_scale per step; exceeding the speed or current limit terminates with
`trip_penalty`. Success: no trip and a mean |error| below `success_error` * omega_scale.
`info["tracking_error"]`: |ref - speed| in rad/s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from robo_rl.envs import INFO_SUCCESS, INFO_TRACKING_ERROR, SpaceSpec, StepResult
from robo_rl.sim.batched_task import BatchedTask
from robo_rl.sim.electric_motor.current_control import INFO_TRIP
from robo_rl.sim.electric_motor.foc import PiGains, pi_current_step
from robo_rl.sim.electric_motor.params import LoadParams, PmsmParams
from robo_rl.sim.electric_motor.pmsm import PmsmState, inverter_dq, pmsm_step

SPEED_OBS_NAMES = ("speed_error", "speed_reference", "speed", "current_q", "pending_torque")


@dataclass(frozen=True)
class SpeedControlConfig:
    """The speed-control task: GEM's PMSM and inverter (`PmsmParams`) on a load (`LoadParams`)."""

    motor: PmsmParams = field(default_factory=PmsmParams)
    load: LoadParams = field(default_factory=LoadParams)
    dt: float = 1e-3
    """Speed-control period in s (1 kHz)."""
    current_period: float = 1e-4
    """The current loop's period in s (10 kHz); dt must be a whole number of them."""
    max_episode_steps: int = 500
    """Steps per episode (0.5 s)."""
    omega_scale: float = 0.5 * 3000 * math.pi / 30
    """Speed references lie within +-this (rad/s; 1500 rpm, half the nominal speed: full torque needs no field
    weakening there); also the observation's scale."""
    hold_steps: tuple[int, int] = (100, 300)
    """A speed reference is held for a number of steps drawn from this range (inclusive)."""
    speed_noise_std: float = 0.5
    """Speed sensor noise in rad/s."""
    current_noise_std: float = 1.0
    """Current sensor noise in A (of the current loop and the observation)."""
    trip_penalty: float = 50.0
    """Reward lost at a trip (speed beyond omega_limit or current beyond i_limit)."""
    success_error: float = 0.05
    """Success: mean |speed error| over the episode below this fraction of omega_scale, without a trip."""

    def __post_init__(self) -> None:
        ratio = self.dt / self.current_period
        if not (self.current_period > 0 and ratio >= 1 and abs(ratio - round(ratio)) < 1e-9):
            raise ValueError("SpeedControlConfig: dt must be a whole number (>= 1) of current periods")
        if not (self.max_episode_steps > 0 and 0 < self.omega_scale <= self.motor.omega_limit):
            raise ValueError("SpeedControlConfig: max_episode_steps > 0 and 0 < omega_scale <= omega_limit")
        low, high = self.hold_steps
        if not 1 <= low <= high:
            raise ValueError(f"SpeedControlConfig.hold_steps must be 1 <= low <= high, got {self.hold_steps}")
        if self.speed_noise_std < 0 or self.current_noise_std < 0 or not self.success_error > 0:
            raise ValueError("SpeedControlConfig: noise must be >= 0 and success_error > 0")

    @property
    def torque_scale(self) -> float:
        """N m of an action of 1: the torque at the nominal current with i_d = 0."""
        return 1.5 * self.motor.pole_pairs * self.motor.psi_p * self.motor.i_nominal


class PmsmSpeedControl(BatchedTask):
    """`num_envs` PMSMs under speed control (`BatchedEnv`; module docstring)."""

    state_attributes = (
        "_i_d",
        "_i_q",
        "_eps",
        "_omega",
        "_pending_torque",
        "_pending_voltage",
        "_integral",
        "_ref",
        "_hold",
        "_error_sum",
    )

    def __init__(
        self,
        num_envs: int,
        device: str | torch.device = "cpu",
        config: SpeedControlConfig = SpeedControlConfig(),
        seed: int | None = None,
    ) -> None:
        super().__init__(num_envs, device, config.dt, config.max_episode_steps, seed)
        self.config = config
        self.obs_spec = SpaceSpec(
            names=SPEED_OBS_NAMES,
            low=(-3.0, -1.0, -3.0, -2.0, -1.0),
            high=(3.0, 1.0, 3.0, 2.0, 1.0),
            units=("1",) * 5,
        )
        self.action_spec = SpaceSpec(names=("torque",), low=(-1.0,), high=(1.0,), units=("1",))
        self._gains = PiGains.symmetric_optimum(config.motor, config.current_period)
        self._substeps = round(config.dt / config.current_period)
        zeros = torch.zeros(num_envs, dtype=self.dtype, device=self.device)
        self._i_d, self._i_q, self._eps, self._omega = zeros.clone(), zeros.clone(), zeros.clone(), zeros.clone()
        self._pending_torque = zeros.clone()
        self._pending_voltage = torch.zeros(num_envs, 2, dtype=self.dtype, device=self.device)
        self._integral = torch.zeros(num_envs, 2, dtype=self.dtype, device=self.device)
        self._ref, self._error_sum = zeros.clone(), zeros.clone()
        self._hold = torch.zeros(num_envs, dtype=torch.long, device=self.device)
        self.reset(seed)

    @property
    def motor_state(self) -> PmsmState:
        """Copies of the true currents (A), electrical angle (rad) and speed (rad/s), `(N,)` each."""
        return PmsmState(self._i_d.clone(), self._i_q.clone(), self._eps.clone(), self._omega.clone())

    @property
    def reference(self) -> torch.Tensor:
        """`(N,)` copy of the speed references in rad/s."""
        return self._ref.clone()

    def step(self, action: torch.Tensor) -> StepResult:
        c, m = self.config, self.config.motor
        command = action.to(device=self.device, dtype=self.dtype).reshape(self.num_envs).clamp(-1.0, 1.0)
        torque, self._pending_torque = self._pending_torque, command
        i_q_ref = torque * c.torque_scale / (1.5 * m.pole_pairs * m.psi_p)
        reference = torch.stack((torch.zeros_like(i_q_ref), i_q_ref), dim=-1)
        trip = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
        for _ in range(self._substeps):
            trip = trip | self._current_period(reference)
        trip = trip | (self._omega.abs() > m.omega_limit)
        error = self._ref - self._omega
        reward = -error.abs() / c.omega_scale - c.trip_penalty * trip
        self._error_sum = self._error_sum + error.abs()
        success = ~trip & (self._error_sum / (self._steps + 1) <= c.success_error * c.omega_scale)
        info = {INFO_SUCCESS: success, INFO_TRACKING_ERROR: error.abs(), INFO_TRIP: trip}
        self._advance_references()
        return self._end_step(self._current_obs(), reward, info, terminated=trip)

    def _current_period(self, reference: torch.Tensor) -> torch.Tensor:
        """One period of the current loop under the PI/FOC controller; whether the current limit tripped."""
        c, m = self.config, self.config.motor
        state = PmsmState(self._i_d, self._i_q, self._eps, self._omega)
        measured = torch.stack((self._i_d, self._i_q), dim=-1) + c.current_noise_std * self._randn(2)
        voltage, self._integral = pi_current_step(
            self._integral, measured, reference, self._omega, m, self._gains, c.current_period
        )
        applied, self._pending_voltage = self._pending_voltage, voltage
        u_d, u_q = inverter_dq(applied, state, m, c.current_period)
        self._i_d, self._i_q, self._eps, self._omega = pmsm_step(state, u_d, u_q, m, c.current_period, c.load)
        return self._i_d.square() + self._i_q.square() > m.i_limit**2

    def _randn(self, *shape: int) -> torch.Tensor:
        return torch.randn(self.num_envs, *shape, generator=self._generator, device=self.device, dtype=self.dtype)

    def _advance_references(self) -> None:
        self._hold = self._hold - 1
        self._renew(self._hold <= 0, _ref=self._draw_references(), _hold=self._draw_holds())

    def _draw_references(self) -> torch.Tensor:
        unit = torch.rand(self.num_envs, generator=self._generator, device=self.device, dtype=self.dtype)
        return (2 * unit - 1) * self.config.omega_scale

    def _draw_holds(self) -> torch.Tensor:
        low, high = self.config.hold_steps
        return torch.randint(low, high + 1, (self.num_envs,), generator=self._generator, device=self.device)

    def _reset_where(self, done: torch.Tensor) -> None:
        unit = torch.rand(self.num_envs, 2, generator=self._generator, device=self.device, dtype=self.dtype)
        zeros = torch.zeros_like(self._omega)
        self._renew(
            done,
            _i_d=zeros,
            _i_q=zeros,
            _eps=(2 * unit[:, 0] - 1) * math.pi,
            _omega=(2 * unit[:, 1] - 1) * self.config.omega_scale,
            _pending_torque=zeros,
            _pending_voltage=torch.zeros_like(self._pending_voltage),
            _integral=torch.zeros_like(self._integral),
            _ref=self._draw_references(),
            _hold=self._draw_holds(),
            _error_sum=zeros,
        )

    def _current_obs(self) -> torch.Tensor:
        c, m = self.config, self.config.motor
        speed = self._omega + c.speed_noise_std * self._randn()
        i_q = self._i_q + c.current_noise_std * self._randn()
        columns = ((self._ref - speed) / c.omega_scale, self._ref / c.omega_scale, speed / c.omega_scale)
        return torch.stack((*columns, i_q / m.i_nominal, self._pending_torque), dim=-1)
