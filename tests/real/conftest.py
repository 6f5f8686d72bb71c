"""Fixtures for the deploy core: policies exported from robo_rl actors with random weights, and a fake clock."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from robo_rl.build import build_policy
from robo_rl.config import config_hash
from robo_rl.experiment import mujoco_arm_reach_ppo, quadrotor_hover_ppo, rc_car_race_ppo
from robo_rl.export.onnx import PolicyMetadata, export_onnx
from robo_rl.sim import make

# Bundled profile → (preset, task params) of the policy it deploys.
PROFILE_TASKS = {
    "quadrotor_crazyflie": (quadrotor_hover_ppo, ()),
    "quadrotor_px4": (quadrotor_hover_ppo, ("action_mode=ctbr",)),
    "rc_car": (rc_car_race_ppo, ()),
    "arm": (mujoco_arm_reach_ppo, ("action_mode=position",)),
}


class FakeClock:
    """A clock that only moves when told: `clock()` reads it, `sleep(s)` and `advance(s)` move it."""

    def __init__(self, start: float = 100.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def advance(self, seconds: float) -> None:
        self.now += seconds


def export_policy(profile: str, path: Path) -> Path:
    """Export a randomly initialized actor for the task `profile` deploys, with its real metadata."""
    preset, params = PROFILE_TASKS[profile]
    cfg = preset()
    env = make(cfg.task.name, num_envs=1, params=params)
    torch.manual_seed(0)
    policy = build_policy(cfg, env)
    metadata = PolicyMetadata(env.obs_spec, env.action_spec, env.dt, cfg.task.name, config_hash(cfg), "test")
    return export_onnx(policy.deterministic_actor(), metadata, path)


@pytest.fixture(scope="session")
def policy_file(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """`policy_file(profile_name)`: path of a policy exported for that bundled profile (exported once)."""
    cache: dict[str, Path] = {}
    folder = tmp_path_factory.mktemp("policies")

    def get(profile: str) -> Path:
        if profile not in cache:
            cache[profile] = export_policy(profile, folder / f"{profile}.onnx")
        return cache[profile]

    return get


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()
