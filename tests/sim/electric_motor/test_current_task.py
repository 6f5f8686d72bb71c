"""The current-control task: its references are reachable, the command reaches the inverter one period late, the
sensor noise is in the observation only, a trip ends the episode, and the PI/FOC baseline (gem-control's design)
follows its references with zero trips, setting the presets' target."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from robo_rl.sim import make
from robo_rl.sim.electric_motor import CurrentControlConfig, PmsmCurrentControl, PmsmParams
from robo_rl.sim.electric_motor.current_control import INFO_TRIP
from robo_rl.sim.electric_motor.foc import PiGains
from robo_rl.sim.electric_motor.presets import CURRENT_TARGET_RETURN
from robo_rl.sim.electric_motor.references import draw_references, steady_voltage
from robo_rl.sim.electric_motor.scenario import draw_scenario, rollout
from robo_rl.sim.electric_motor.scoring import pi_factory, score


def test_references_are_inside_the_current_disc_and_the_voltage_the_inverter_has() -> None:
    motor, generator = PmsmParams(), torch.Generator().manual_seed(0)
    omega = torch.linspace(-motor.omega_limit, motor.omega_limit, 4001)
    i_d, i_q = draw_references(omega, motor, 0.9, generator)
    u_d, u_q = steady_voltage(i_d, i_q, omega, motor)
    assert (i_d <= 0).all() and (i_d.square() + i_q.square() <= motor.i_nominal**2 + 1e-3).all()
    assert (torch.hypot(u_d, u_q) <= 0.9 * motor.u_max + 1e-3).all()
    # near the limit speed only field-weakening references fit: strongly negative i_d where i_q is large
    fast = omega.abs() > 0.95 * motor.omega_limit
    assert (i_d[fast & (i_q.abs() > 100)] < -100).all()
    # and at standstill the whole disc is reachable (uniform draws cover it)
    slow = omega.abs() < 0.1 * motor.omega_limit
    assert i_q[slow].abs().max() > 0.9 * motor.i_nominal and i_d[slow].min() < -0.9 * motor.i_nominal


def test_the_command_reaches_the_inverter_one_period_late() -> None:
    config = CurrentControlConfig(noise_std=0.0, speed_range=0.0)  # standstill: no back-EMF
    env = PmsmCurrentControl(2, config=config, seed=0)
    push = torch.tensor([[0.0, 0.5], [0.0, 0.0]])
    env.step(push)
    first = env.motor_state
    assert torch.allclose(first.i_q, torch.zeros(2), atol=1e-4), "the first command must not act yet"
    env.step(torch.zeros(2, 2))
    second = env.motor_state
    assert float(second.i_q[0]) > 5.0 and abs(float(second.i_q[1])) < 1e-3
    no_delay = PmsmCurrentControl(1, config=replace(config, delay_steps=0), seed=0)
    no_delay.step(push[:1])
    assert float(no_delay.motor_state.i_q[0]) > 5.0


def test_sensor_noise_is_in_the_observation_only() -> None:
    quiet = PmsmCurrentControl(64, config=CurrentControlConfig(noise_std=0.0), seed=5)
    noisy = PmsmCurrentControl(64, config=CurrentControlConfig(noise_std=2.0), seed=5)
    obs_quiet, _, _, _, _ = quiet.step(torch.zeros(64, 2))
    obs_noisy, _, _, _, _ = noisy.step(torch.zeros(64, 2))
    assert torch.equal(quiet.motor_state.i_q, noisy.motor_state.i_q)
    spread = ((obs_noisy[:, :2] - obs_quiet[:, :2]) * 240.0).std()
    assert 1.5 < float(spread) < 2.5


def test_a_trip_terminates_the_episode_with_its_penalty() -> None:
    env = make("electric_motor/current", 4, seed=1, config={"noise_std": 0.0, "speed_range": 0.0})
    steps = 0
    while True:
        _, reward, terminated, _, info = env.step(torch.tensor([[0.0, 1.0]] * 4))  # full q voltage at standstill
        steps += 1
        if terminated.any() or steps == 200:
            break
    assert bool(info[INFO_TRIP].all()) and bool(terminated.all()) and steps > 10
    assert float(reward.max()) < -50.0


def test_pi_gains_follow_the_symmetric_optimum_of_gem_control() -> None:
    """gem-control (upb-lea/gem-control) `PController`/`PIController` tuning, hand-worked for GEM's PMSM at 10 kHz,
    a = 4: K_p = L / (a tau): d 0.37e-3 / 4e-4 = 0.925 V/A, q 1.2e-3 / 4e-4 = 3.0 V/A; K_i = K_p / (a^2 tau)."""
    gains = PiGains.symmetric_optimum(PmsmParams(), 1e-4)
    assert gains.kp_d == pytest.approx(0.925) and gains.kp_q == pytest.approx(3.0)
    assert gains.ki_d == pytest.approx(0.925 / 16e-4) and gains.ki_q == pytest.approx(3.0 / 16e-4)


def test_pi_tracks_every_reference_without_a_trip_and_sets_the_presets_target() -> None:
    config = CurrentControlConfig()
    scenario = draw_scenario(config, 256, seed=12345)
    result = score(scenario, rollout(scenario, pi_factory(config.motor, config.dt)))
    assert result.trips == 0 and result.unsettled <= 0.01 * result.holds
    # the target return is 1.1x the PI's tracking error: return = -(2 * steps / i_nominal) * mean per-axis error
    pi_return = -2 * config.max_episode_steps / config.motor.i_nominal * result.mean_abs_error
    assert CURRENT_TARGET_RETURN == pytest.approx(1.1 * pi_return, rel=0.02)
    # the integrators remove the steady-state error: at the end of each settled hold the error is within the noise
    final = np.abs(
        rollout(scenario, pi_factory(config.motor, config.dt)).currents[:, 200] - scenario.references[:, 200]
    )
    assert np.median(final) < 2.0
