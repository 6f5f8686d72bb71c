"""Our motor simulator against gym-electric-motor (GEM 3.0.3), an independent simulator of the same machines: with
our parameters, GEM's own environment reproduces our currents (and speed) step for step.

The commands are recorded from a closed-loop run on our simulator (so the currents stay inside the limits and pass
through saturation, where the inverter clips phases) and replayed open loop in both, so any difference in the
model (equations, inverter averaging and its dead time, transforms, angle advance, delay) shows and is not corrected
by feedback. GEM integrates with its default dopri5 solver; ours is one RK4 step per period.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from robo_rl.sim.electric_motor import CurrentControlConfig, DcMotorParams, LoadParams, PmsmParams
from robo_rl.sim.electric_motor.dc_motor import converter_voltage, dc_step
from robo_rl.sim.electric_motor.foc import FocCurrentController
from robo_rl.sim.electric_motor.gem_judge import gem_env, gem_missing_reason, rollout_gem
from robo_rl.sim.electric_motor.pmsm import PmsmState, inverter_dq, pmsm_step
from robo_rl.sim.electric_motor.scenario import draw_scenario, rollout
from robo_rl.sim.electric_motor.scoring import pi_factory

pytestmark = pytest.mark.skipif(gem_missing_reason() is not None, reason=str(gem_missing_reason()))

TOLERANCE_A = 0.05
"""Largest current difference accepted, A (0.02 % of the nominal 240 A): integration error only."""


def _replay(commands: np.ndarray):  # type: ignore[no-untyped-def]
    """A controller factory replaying `commands` `(E, T, 2)`: all episodes at once (ours), or one per build (GEM)."""
    built = {"episode": 0}

    def build(num_envs: int):  # type: ignore[no-untyped-def]
        rows = slice(None) if num_envs == commands.shape[0] else slice(built["episode"], built["episode"] + 1)
        built["episode"] += num_envs == 1
        step = {"t": 0}

        def control(obs: torch.Tensor, speed: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
            out = torch.from_numpy(np.nan_to_num(commands[rows, step["t"]]))
            step["t"] += 1
            return out

        return control

    return build


def test_gem_reproduces_the_pmsm_with_its_inverter_dead_time_and_delay_step_for_step() -> None:
    config = CurrentControlConfig(noise_std=0.0)  # GEM's defaults + 1 us dead time, 10 kHz, one period of delay
    scenario = draw_scenario(config, 6, seed=3)
    recorded = rollout(scenario, pi_factory(config.motor, config.dt))
    assert (recorded.trip_step < 0).all()
    saturated = np.linalg.norm(recorded.commands, axis=-1) > 1.0  # phases clipped by the inverter
    assert saturated.any(), "the replay should pass through overmodulation"
    ours = rollout(scenario, _replay(recorded.commands))
    gem = rollout_gem(scenario, _replay(recorded.commands))
    np.testing.assert_allclose(ours.currents, recorded.currents, atol=1e-9)  # the replay is the run
    assert (gem.trip_step < 0).all()
    difference = np.abs(gem.currents - ours.currents)
    print(f"GEM vs ours: max |di| {difference.max():.3g} A over {np.isfinite(difference).sum()} values")
    assert difference.max() < TOLERANCE_A, f"GEM differs by {difference.max():.3g} A"
    # and the difference is not hidden in small currents: the replay moves them by hundreds of amps
    assert np.ptp(ours.currents[..., 1]) > 200


def test_gem_reproduces_the_pmsm_on_a_free_shaft_with_friction_and_inertia() -> None:
    motor, load, period, steps = PmsmParams(), LoadParams(), 1e-4, 400
    pi = FocCurrentController(motor, period, 1)
    state = PmsmState(*(torch.tensor([value], dtype=torch.float64) for value in (0.0, 0.0, 0.3, 20.0)))
    commands, ours = [], []
    pending = torch.zeros(1, 2, dtype=torch.float64)
    for _ in range(steps):  # accelerate at 150 A of torque current from 20 rad/s
        command = pi(state.i_d, state.i_q, torch.zeros(1), torch.full((1,), 150.0), state.omega).double()
        commands.append(command[0].numpy())
        u_d, u_q = inverter_dq(pending, state, motor, period)
        pending = command
        state = pmsm_step(state, u_d, u_q, motor, period, load)
        ours.append([float(state.i_d), float(state.i_q), float(state.omega)])
    env = gem_env(motor, 20.0, 0.3, period, 1, load)
    names, limits = list(env.unwrapped.state_names), np.asarray(env.unwrapped.limits)
    index = [names.index(name) for name in ("i_sd", "i_sq", "omega")]
    env.reset(seed=0)
    gem = []
    for command in commands:
        (gem_state, _), _, terminated, _, _ = env.step(command)
        assert not terminated
        gem.append(gem_state[index] * limits[index])
    ours_array, gem_array = np.array(ours), np.array(gem)
    assert ours_array[-1, 2] > 40.0, "the shaft should have accelerated"
    np.testing.assert_allclose(gem_array[:, :2], ours_array[:, :2], atol=TOLERANCE_A)
    np.testing.assert_allclose(gem_array[:, 2], ours_array[:, 2], atol=1e-4)


def test_gem_reproduces_the_dc_motor_on_its_four_quadrant_converter() -> None:
    """GEM's four-quadrant converter subtracts each leg's interlocking loss with the same sign on both legs, so its
    dead time cancels there (a leg carrying -i should lose the opposite sign; ours does): compared without it."""
    import gym_electric_motor as gem

    motor, period, speed = DcMotorParams(dead_time=0.0), 1e-4, 150.0
    current = torch.zeros(1, dtype=torch.float64)
    omega = torch.full((1,), speed, dtype=torch.float64)
    commands, ours = [], []
    for t in range(300):  # a P controller on a stepped reference, recorded
        reference = 80.0 if t < 150 else -40.0
        u = motor.psi_e * speed + motor.r_a * reference + 0.3 * motor.l_a / period * (reference - float(current))
        command = torch.tensor([u / motor.u_dc], dtype=torch.float64).clamp(-1, 1)
        commands.append(float(command))
        current, omega = dc_step(current, omega, converter_voltage(command, current, motor, period), motor, period)
        ours.append(float(current))
    env = gem.make(
        "Cont-CC-PermExDc-v0",
        motor=dict(
            motor_parameter=dict(r_a=motor.r_a, l_a=motor.l_a, psi_e=motor.psi_e, j_rotor=motor.j_rotor),
            limit_values=dict(i=motor.i_limit, u=motor.u_dc, omega=motor.omega_limit),
            nominal_values=dict(i=motor.i_nominal, u=motor.u_dc, omega=motor.omega_limit),
        ),
        supply=dict(u_nominal=motor.u_dc),
        load=dict(omega_fixed=speed),
        tau=period,
        visualization=(),
    )
    names, limits = list(env.unwrapped.state_names), np.asarray(env.unwrapped.limits)
    env.reset(seed=0)
    gem_currents = []
    for command in commands:
        (state, _), _, terminated, _, _ = env.step(np.array([command]))
        assert not terminated
        gem_currents.append(state[names.index("i")] * limits[names.index("i")])
    assert max(ours) > 70 and min(ours) < -30
    np.testing.assert_allclose(gem_currents, ours, atol=TOLERANCE_A)


def test_dead_time_lowers_the_voltage_against_the_current_as_gem_models_it() -> None:
    """One leg's loss is sign(i_phase) * dead_time / period of u_dc (GEM's ContDynamicallyAveragedConverter._interlock):
    with i along a and zero command, phase a loses 1 % of 300 V at 1 us / 100 us."""
    motor = PmsmParams()
    state = PmsmState(*(torch.tensor([value], dtype=torch.float64) for value in (100.0, 0.0, 0.0, 0.0)))
    u_d, u_q = inverter_dq(torch.zeros(1, 2, dtype=torch.float64), state, motor, 1e-4)
    # i_a = 100, i_b = i_c = -50: phase a -3 V, b and c +3 V; in dq (amplitude invariant) u_d = (2/3)(-3 - 3/2*2) = -4
    assert float(u_d) == pytest.approx(-4.0, abs=1e-9) and float(u_q) == pytest.approx(0.0, abs=1e-9)
    none = inverter_dq(torch.zeros(1, 2, dtype=torch.float64), state, replace(motor, dead_time=0.0), 1e-4)
    assert float(none[0]) == pytest.approx(0.0, abs=1e-12)
    assert math.isclose(motor.u_max, 150.0)
