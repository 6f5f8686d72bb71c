"""gym-electric-motor (GEM, PyPI `gym-electric-motor` 3.0.3) as the outside judge of the current-control task.

`gem_env` builds GEM's own `Cont-CC-PMSM-v0` with our motor (`PmsmParams`: GEM's defaults unless changed), our DC
link, dead time and control period, the speed held by GEM's ConstantSpeedLoad, actions in dq through GEM's
DqToAbcActionProcessor (which advances the angle by half a period) and one period of delay through its
DeadTimeProcessor, and GEM's SquaredConstraint on (i_sd, i_sq) as the trip. GEM integrates with its default
ScipyOdeSolver (dopri5). `rollout_gem` runs a controller through a `Scenario` there, episode by episode, with the
same references and sensor noise as `scenario.rollout` on our simulator, and returns the same `Trace`.

GEM is imported here only (a dev dependency; `gem_missing_reason` says why it cannot run).
"""

from __future__ import annotations

import importlib.util
import warnings
from typing import Any

import numpy as np
import torch

from robo_rl.sim.electric_motor.params import LoadParams, PmsmParams
from robo_rl.sim.electric_motor.scenario import ControllerFactory, Scenario, Trace, observation

GEM_ENV_ID = "Cont-CC-PMSM-v0"


def gem_missing_reason() -> str | None:
    """Why GEM cannot run here (one line), or None."""
    if importlib.util.find_spec("gym_electric_motor") is None:
        return "gym-electric-motor is not installed (pip install gym-electric-motor==3.0.3; it is in robo-rl[dev])"
    return None


def gem_env(
    params: PmsmParams,
    speed: float,
    start_angle: float,
    period: float,
    delay_steps: int = 1,
    load: LoadParams | None = None,
) -> Any:
    """GEM's `Cont-CC-PMSM-v0` with `params`, starting with zero currents at electrical `start_angle` and mechanical
    `speed` (rad/s): held there (GEM's ConstantSpeedLoad) for `load` None, else free on GEM's PolynomialStaticLoad."""
    import gym_electric_motor as gem
    from gym_electric_motor.physical_system_wrappers import DeadTimeProcessor, DqToAbcActionProcessor
    from gym_electric_motor.physical_systems import PolynomialStaticLoad
    from gym_electric_motor.reference_generators import ConstReferenceGenerator

    wrappers = [DqToAbcActionProcessor.make("PMSM")]
    if delay_steps:
        wrappers.append(DeadTimeProcessor(steps=delay_steps))
    motor = dict(
        motor_parameter=dict(
            p=params.pole_pairs,
            l_d=params.l_d,
            l_q=params.l_q,
            j_rotor=params.j_rotor,
            r_s=params.r_s,
            psi_p=params.psi_p,
        ),
        limit_values=dict(i=params.i_limit, omega=params.omega_limit, u=params.u_dc),
        # GEM refuses a load speed outside its nominal range at reset; ours run up to the limit (above base speed,
        # in field weakening), so GEM's nominal speed is the limit: it bounds initial values and scales GEM's own
        # reference generators, neither used here
        nominal_values=dict(i=params.i_nominal, omega=params.omega_limit, u=params.u_dc),
        motor_initializer={"states": {"i_sd": 0.0, "i_sq": 0.0, "epsilon": float(start_angle)}},
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # gymnasium's checker on GEM's constant reference space
        return gem.make(
            GEM_ENV_ID,
            motor=motor,
            supply=dict(u_nominal=params.u_dc),
            converter=dict(interlocking_time=params.dead_time),
            load=dict(omega_fixed=float(speed))
            if load is None
            else PolynomialStaticLoad(
                load_parameter=dict(a=load.a, b=load.b, c=load.c, j_load=load.j_load),
                limits=dict(omega=params.omega_limit),
                load_initializer={"states": {"omega": float(speed)}},
            ),
            tau=period,
            physical_system_wrappers=tuple(wrappers),
            reference_generator=ConstReferenceGenerator("i_sq", 0.0),  # ours are fed to the controller, not GEM's
            visualization=(),
        )


def rollout_gem(scenario: Scenario, factory: ControllerFactory) -> Trace:
    """Run the controller in GEM through every episode of `scenario` (one GEM env per episode)."""
    c, m = scenario.config, scenario.config.motor
    e, steps = scenario.episodes, scenario.steps
    currents = np.full((e, steps, 2), np.nan)
    commands = np.full((e, steps, 2), np.nan)
    trip_step = np.full(e, -1)
    for episode in range(e):
        env = gem_env(m, float(scenario.speeds[episode]), float(scenario.start_angles[episode]), c.dt, c.delay_steps)
        names = list(env.unwrapped.state_names)
        limits = np.asarray(env.unwrapped.limits)
        index = [names.index("i_sd"), names.index("i_sq")]
        (state, _), _ = env.reset(seed=0)
        controller = factory(1)
        speed = torch.tensor([float(scenario.speeds[episode])])
        pending = torch.zeros(1, 2, dtype=torch.float64)
        for t in range(steps):
            current = state[index] * limits[index]
            reference = torch.from_numpy(scenario.references[episode, t : t + 1])
            measured = torch.from_numpy(current[None, :] + scenario.noise[episode, t : t + 1])
            obs = observation(measured, reference, speed.double(), pending, c)
            command = controller(obs.float(), speed, reference.float()).to(torch.float64).clamp(-1.0, 1.0)
            pending = command
            (state, _), _, terminated, _, _ = env.step(command[0].numpy())
            currents[episode, t] = state[index] * limits[index]
            commands[episode, t] = command[0].numpy()
            if terminated:
                trip_step[episode] = t
                break
        env.close()
    return Trace(currents, commands, trip_step)
