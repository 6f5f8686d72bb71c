"""The speed-control task: the current loop below it is the PI/FOC controller at 10 kHz (ten periods per step), the
torque command acts one speed period late, the shaft obeys the load (its mechanics match GEM's PolynomialStaticLoad
in test_gem_mapping), and the PI speed controller reaches its references without a trip, setting the presets'
target."""

from __future__ import annotations

import pytest
import torch

from robo_rl.sim.electric_motor.presets import SPEED_TARGET_RETURN
from robo_rl.sim.electric_motor.speed_control import PmsmSpeedControl, SpeedControlConfig
from robo_rl.sim.electric_motor.speed_scoring import pi_speed_controller, score_speed


def test_the_period_must_hold_whole_current_periods() -> None:
    with pytest.raises(ValueError, match="whole number"):
        SpeedControlConfig(dt=1.05e-3)
    assert SpeedControlConfig(dt=2e-4).dt == 2e-4


def test_torque_acts_one_period_late_and_accelerates_the_shaft_by_its_inertia() -> None:
    config = SpeedControlConfig(speed_noise_std=0.0, current_noise_std=0.0)
    env = PmsmSpeedControl(1, config=config, seed=0)
    start = float(env.motor_state.omega)
    env.step(torch.ones(1, 1))
    assert abs(float(env.motor_state.i_q)) < 1.0, "the torque command must not reach the current loop yet"
    for _ in range(20):
        env.step(torch.ones(1, 1))
    state = env.motor_state
    assert float(state.i_q) == pytest.approx(config.motor.i_nominal, rel=0.05)  # the current loop follows
    # 20 ms at about the nominal torque (71 N m) less friction on 0.049 kg m^2: of the order of 25 rad/s
    gained = float(state.omega) - start
    j_total = config.motor.j_rotor + config.load.j_load
    assert 0.6 * config.torque_scale / j_total * 0.02 < gained < config.torque_scale / j_total * 0.021


def test_pi_speed_control_reaches_its_references_without_a_trip_and_sets_the_presets_target() -> None:
    task = PmsmSpeedControl(64, seed=0)
    result = score_speed(task, pi_speed_controller(task), episodes_per_env=4)  # episodes vary: 256 of them
    assert result.trips == 0 and result.episodes == 256
    assert result.mean_abs_error < 0.3 * task.config.omega_scale
    assert SPEED_TARGET_RETURN == pytest.approx(1.1 * result.mean_return, rel=0.05)
