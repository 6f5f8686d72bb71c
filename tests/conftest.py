"""Shared test fixtures."""

from __future__ import annotations

import importlib.util
import math
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import ModuleType

# Headless MuJoCo rendering: must be set before mujoco is imported (robo_rl.sim imports it).
os.environ.setdefault("MUJOCO_GL", "egl")
# Idle OpenMP threads sleep instead of spinning, as under `robo-rl` (robo_rl.api.threads): set before torch loads,
# so that test processes running side by side on few cores do not slow each other down many times over.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest
import torch
from filelock import FileLock

# Tests send SIGINT to the processes they start (Ctrl-C in `robo-rl train`, `robo-rl launch` stopping its nodes).
# A process inherits an ignored SIGINT, and a shell script's background commands start with it ignored (a CI job
# started with `&`): Python then installs no KeyboardInterrupt handler, and those processes would never stop. With
# a handler here, the processes the tests start get the default disposition again.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

from robo_rl.envs import INFO_FINAL_OBS, INFO_FINAL_PRIVILEGED_OBS, INFO_PRIVILEGED_OBS, SpaceSpec, StepResult
from robo_rl.sim.pendulum import Pendulum

# `make test` runs two pytest-xdist workers, one per core of a 2-core machine: each one computes in one thread, so
# that they do not compete with each other (and with the node processes the ROS tests start) for the same cores.
if os.environ.get("PYTEST_XDIST_WORKER"):
    torch.set_num_threads(1)


class PendulumWithAngle(Pendulum):
    """Pendulum with a privileged observation `[theta, theta_dot]` recovered from the obs, to cover that path."""

    privileged_obs_spec = SpaceSpec(("theta", "theta_dot"), (-math.pi, -8.0), (math.pi, 8.0), ("rad", "rad/s"))

    @staticmethod
    def angle_obs(obs: torch.Tensor) -> torch.Tensor:
        return torch.stack((torch.atan2(obs[:, 1], obs[:, 0]), obs[:, 2]), dim=-1)

    def reset(self, seed: int | None = None) -> torch.Tensor:
        obs = super().reset(seed)
        self.privileged_obs = self.angle_obs(obs)
        return obs

    def step(self, action: torch.Tensor) -> StepResult:
        obs, reward, terminated, truncated, info = super().step(action)
        self.privileged_obs = self.angle_obs(obs)
        info[INFO_PRIVILEGED_OBS] = self.privileged_obs
        info[INFO_FINAL_PRIVILEGED_OBS] = self.angle_obs(info[INFO_FINAL_OBS])
        return obs, reward, terminated, truncated, info


@pytest.fixture
def pendulum_with_angle() -> type[Pendulum]:
    """A Pendulum whose critic-only (privileged) observation is the true `[theta, theta_dot]`."""
    return PendulumWithAngle


@pytest.fixture(scope="session")
def project_copy() -> ModuleType:
    """tests/project_copy.py: a copy of the project to follow a guide in (pytest's importlib mode puts no test folder
    on sys.path, so it is loaded by its path)."""
    spec = importlib.util.spec_from_file_location("project_copy", Path(__file__).with_name("project_copy.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def trained_hover_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run directory of robo_rl's quadrotor_hover_ppo preset (seed 0), trained as the preset says (until 97 % of
    its 1000 evaluation flights pass the hover gate's criterion), and exported (`policy.onnx` in it). Trained once
    per test session: the pytest-xdist workers share it through a file lock in the session's temporary folder, so
    the tests that need a flying policy (the L2F transfer, the simulated ROS graph, the preset's learning) pay for one
    training."""
    return _trained_run(tmp_path_factory, "quadrotor_hover_ppo")


@pytest.fixture(scope="session")
def trained_x500_hover_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run directory of robo_rl's quadrotor_hover_x500_ppo preset (seed 0: the PX4 X500 in the ctbr action mode,
    the policy the quadrotor_px4 profile deploys), trained to its gate and exported, once per test session as
    `trained_hover_run` (about 20 s on one core)."""
    return _trained_run(tmp_path_factory, "quadrotor_hover_x500_ppo")


def _trained_run(tmp_path_factory: pytest.TempPathFactory, preset: str) -> Path:
    """`robo-rl train PRESET --seed 0 --export` once per session, shared by the pytest-xdist workers (a file lock in
    the session's temporary folder); the run directory."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    root = shared / "trained_hover"
    with FileLock(str(shared / f"trained_{preset}.lock")):
        policies = sorted(root.glob(f"{preset}/*/policy.onnx"))
        if not policies:
            argv = [sys.executable, "-m", "robo_rl.cli.main", "train", preset, "--seed", "0"]
            argv += ["--runs-root", str(root), "--export", "--quiet", "--threads", "1"]
            done = subprocess.run(argv, capture_output=True, text=True, timeout=3000)
            assert done.returncode == 0, done.stderr[-2000:]
            policies = sorted(root.glob(f"{preset}/*/policy.onnx"))
    (policy,) = policies
    return policy.parent
