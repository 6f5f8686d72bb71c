"""Compile the simulators' numba kernels into their disk cache (`make install` runs `warm_caches`), so that no run
pays for the compilation later (`robo_rl.sim.numba_support.cache_directory`)."""

from __future__ import annotations

import torch

from robo_rl.sim.numba_dispatch import KernelRun
from robo_rl.sim.quadrotor.hover import QuadrotorHover
from robo_rl.sim.quadrotor.hover_config import HoverConfig
from robo_rl.sim.rc_car.race import RCCarRace
from robo_rl.sim.rc_car.race_config import RaceConfig


def warm_caches() -> None:
    """Step a 2-env hover and race on their numba backend: once on one thread (the serial copy of each kernel), once
    on two (the parallel copy)."""
    hover = QuadrotorHover(2, config=HoverConfig(backend="numba"), seed=0)
    race = RCCarRace(2, config=RaceConfig(backend="numba"), seed=0)
    for env, run in ((hover, hover.kernel_run), (race, race.kernel_run)):
        _warm(env, run)


def _warm(env: QuadrotorHover | RCCarRace, run: KernelRun | None) -> None:
    if run is None:
        raise RuntimeError(f"{type(env).__name__} did not take its numba step")
    action = torch.zeros(env.num_envs, env.action_spec.dim)
    env.step(action)  # the serial copy
    run.threads = 2
    env.step(action)  # the parallel one
