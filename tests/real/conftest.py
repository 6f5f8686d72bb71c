"""Fixtures for the deploy core: policies exported from robo_rl actors with random weights, and a fake clock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import is_dataclass, replace
from pathlib import Path

import pytest
import torch
from filelock import FileLock

from robo_rl.actuator import actuator_of
from robo_rl.api.configs import preset
from robo_rl.build import build_policy
from robo_rl.config import config_hash, to_dict
from robo_rl.experiment import ExperimentConfig, TaskConfig
from robo_rl.export.onnx import PolicyMetadata, export_onnx
from robo_rl.image_spec import ImageSpec
from robo_rl.real.profile import load_profile
from robo_rl.sim import make

from .camera_probe import write_profile_probe

# Bundled profile → (preset, task params) of the policy it deploys.
PROFILE_TASKS = {
    "quadrotor_crazyflie": (lambda: preset("quadrotor_hover_ppo"), ()),
    "quadrotor_px4": (lambda: preset("quadrotor_hover_x500_ppo"), ()),
    "quadrotor_crazyswarm2": (lambda: preset("quadrotor_hover_ppo"), ("action_mode=ctbr", "position_integral_limit=0")),
    "rc_car": (lambda: preset("rc_car_race_ppo"), ()),
    "arm": (lambda: preset("mujoco_arm_reach_ppo"), ("action_mode=position",)),
    "arm_peg": (lambda: _peg_ppo(), ()),
}


CAMERA_PROFILES = {"arm_peg_pixels": (ImageSpec("wrist", 64, 64, 3), ImageSpec("side", 64, 64, 3))}
"""Bundled camera profile → the cameras of the policy it deploys (mujoco/peg_insert_pixels's); its test policy is
`camera_probe.write_profile_probe`'s hand-built graph, not an exported actor."""


def _peg_ppo() -> ExperimentConfig:
    """A PPO actor for mujoco/peg_insert (no preset trains one: the arm's PPO preset on the peg task)."""
    return replace(preset("mujoco_arm_reach_ppo"), task=TaskConfig(name="mujoco/peg_insert", num_envs=1))


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


def task_config_json(env: object) -> str | None:
    """The task config `env` was made with, as `robo-rl export` records it (`robo_rl.task_config`, canonical JSON);
    None for a task without one."""
    config = getattr(env, "config", None)
    if config is None or not is_dataclass(config):
        return None
    return json.dumps(to_dict(config), sort_keys=True, separators=(",", ":"))


def export_policy(profile: str, path: Path) -> Path:
    """Export a randomly initialized actor for the task `profile` deploys, with its real metadata (the actuator
    model too, as `robo-rl export` records it); for a camera profile, the camera probe of its cameras."""
    if profile in CAMERA_PROFILES:
        return write_profile_probe(path, load_profile(profile), CAMERA_PROFILES[profile], gain=0.01)
    preset, params = PROFILE_TASKS[profile]
    cfg = preset()
    env = make(cfg.task.name, num_envs=1, config=cfg.task.config, params=params)
    torch.manual_seed(0)
    policy = build_policy(cfg, env)
    metadata = PolicyMetadata(
        env.obs_spec, env.action_spec, env.dt, cfg.task.name, config_hash(cfg), "test", task_config_json(env),
        actuator=actuator_of(env),
    )  # fmt: skip
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


def export_linear_policy(
    profile: str, path: Path, weights: dict[tuple[str, str], float], bias: dict[str, float]
) -> Path:
    """A policy for the task `profile` deploys whose action is `bias[a] + sum(weights[a, o] * obs[o])` (then clipped
    to the action bounds by the exporter's scaling): an end-to-end probe of which observation reaches which action,
    in which frame and sign. Names are the task's observation and action names; the metadata is the task's."""
    preset, params = PROFILE_TASKS[profile]
    cfg = preset()
    env = make(cfg.task.name, num_envs=1, config=cfg.task.config, params=params)
    obs, actions = env.obs_spec.names, env.action_spec.names
    linear = torch.nn.Linear(len(obs), len(actions))
    with torch.no_grad():
        linear.weight.zero_()
        linear.bias.copy_(torch.tensor([bias.get(a, 0.0) for a in actions]))
        for (action, observation), weight in weights.items():
            linear.weight[actions.index(action), obs.index(observation)] = weight
    low, high = env.action_spec.low_tensor(), env.action_spec.high_tensor()

    class Clipped(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.clamp(linear(x), low, high)

    metadata = PolicyMetadata(
        env.obs_spec, env.action_spec, env.dt, cfg.task.name, config_hash(cfg), "test", task_config_json(env),
        actuator=actuator_of(env),
    )  # fmt: skip
    return export_onnx(Clipped(), metadata, path)


@pytest.fixture(scope="session")
def linear_policy(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """`linear_policy(profile, weights, bias=None)`: `export_linear_policy` into a fresh folder."""

    def make_policy(profile: str, weights: dict[tuple[str, str], float], bias: dict[str, float] | None = None) -> Path:
        return export_linear_policy(profile, tmp_path_factory.mktemp("linear") / "policy.onnx", weights, bias or {})

    return make_policy


def export_chunk_probe(path: Path, horizon: int) -> Path:
    """A chunked rc_car policy of `horizon` steps whose step i is steering = 0.1 i + lateral_offset, drive = 0.05 i:
    the steering command shows which step of which observation's chunk was sent."""
    preset, params = PROFILE_TASKS["rc_car"]
    cfg = preset()
    env = make(cfg.task.name, num_envs=1, config=cfg.task.config, params=params)
    obs, actions = env.obs_spec.names, env.action_spec.names
    linear = torch.nn.Linear(len(obs), horizon * len(actions))
    with torch.no_grad():
        linear.weight.zero_()
        for i in range(horizon):
            linear.weight[i * len(actions) + actions.index("steering"), obs.index("lateral_offset")] = 1.0
            linear.bias[i * len(actions) + actions.index("steering")] = 0.1 * i
            linear.bias[i * len(actions) + actions.index("drive")] = 0.05 * i
    metadata = PolicyMetadata(
        env.obs_spec, env.action_spec, env.dt, cfg.task.name, config_hash(cfg), "test", action_chunk=horizon,
        actuator=actuator_of(env),
    )  # fmt: skip
    return export_onnx(linear, metadata, path)


def export_step_chunks(profile: str, path: Path, horizon: int, first: float, step: float) -> Path:
    """A chunked policy for the task `profile` deploys whose step i is `first + step * i` for every action, whatever
    the observation: each command shows which step of a chunk was sent."""
    preset, params = PROFILE_TASKS[profile]
    cfg = preset()
    env = make(cfg.task.name, num_envs=1, config=cfg.task.config, params=params)
    linear = torch.nn.Linear(env.obs_spec.dim, horizon * env.action_spec.dim)
    with torch.no_grad():
        linear.weight.zero_()
        linear.bias.copy_((first + step * torch.arange(horizon)).repeat_interleave(env.action_spec.dim))
    metadata = PolicyMetadata(
        env.obs_spec, env.action_spec, env.dt, cfg.task.name, config_hash(cfg), "test", action_chunk=horizon,
        actuator=actuator_of(env),
    )  # fmt: skip
    return export_onnx(linear, metadata, path)


@pytest.fixture(scope="session")
def step_chunks_policy(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """`step_chunks_policy(profile, horizon, first, step)`: `export_step_chunks` into a fresh folder."""

    def make_policy(profile: str, horizon: int, first: float, step: float) -> Path:
        path = tmp_path_factory.mktemp("chunks") / "policy.onnx"
        return export_step_chunks(profile, path, horizon, first, step)

    return make_policy


PEG_RUN_ITERATIONS = 300
"""Environment steps of the tiny peg_insert_sac run (two 150-step episodes): enough for SAC to have updated its actor
(learning starts at step 100), far too few to insert anything; what is tested is the trained artifact's path."""


@pytest.fixture(scope="session")
def trained_peg_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run directory of robo_rl's peg_insert_sac preset (mujoco/peg_insert, the arm_peg profile's task) trained
    for `PEG_RUN_ITERATIONS` steps with the simulated operator's corrections (`--teleop simulated`, as issue 36's
    policies learn), then exported by `robo-rl export RUN` (its `policy.onnx`). Made once per session, shared by
    the pytest-xdist workers through a file lock, in about 15 s."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    root = shared / "trained_peg"
    with FileLock(str(shared / "trained_peg.lock")):
        policies = sorted(root.glob("peg_insert_sac/*/policy.onnx"))
        if not policies:
            cli = [sys.executable, "-m", "robo_rl.cli.main"]
            argv = [*cli, "train", "peg_insert_sac", "--seed", "0", "--runs-root", str(root), "--teleop", "simulated"]
            argv += ["--max-iterations", str(PEG_RUN_ITERATIONS), "--quiet", "--threads", "1"]
            argv += ["--set", "off_policy.learning_starts=100", "--set", "off_policy.loop.eval_episodes=2"]
            trained = subprocess.run(argv, capture_output=True, text=True, timeout=600)
            assert trained.returncode == 0, trained.stderr[-2000:]
            (run,) = root.glob("peg_insert_sac/*")
            exported = subprocess.run([*cli, "export", str(run)], capture_output=True, text=True, timeout=600)
            assert exported.returncode == 0, exported.stderr[-2000:]
            policies = sorted(root.glob("peg_insert_sac/*/policy.onnx"))
    (policy,) = policies
    return policy.parent


@pytest.fixture(scope="session")
def trained_peg_pixels_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run directory of a short pixel-SAC run (peg_insert_rlpd's learner on mujoco/peg_insert_pixels, both cameras
    at 64 x 64, the arm_peg_pixels profile's task; 40 steps, a few updates: its weights are not trained, its
    shapes and its export are what count), exported by `robo-rl export RUN`. Made once per session, shared by the
    pytest-xdist workers through a file lock."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    root = shared / "trained_peg_pixels"
    with FileLock(str(shared / "trained_peg_pixels.lock")):
        policies = sorted(root.glob("*/*/policy.onnx"))
        if not policies:
            cli = [sys.executable, "-m", "robo_rl.cli.main"]
            settings = ["task.name=mujoco/peg_insert_pixels", "task.config.cameras=[wrist,side]"]
            settings += ["off_policy.learning_starts=20", "off_policy.batch_size=16", "off_policy.loop.eval_interval=0"]
            settings += ["sac.encoder.channels=8"]
            argv = [*cli, "train", "peg_insert_rlpd", "--seed", "0", "--runs-root", str(root), "--quiet"]
            argv += ["--max-iterations", "40", "--threads", "1", *(x for item in settings for x in ("--set", item))]
            trained = subprocess.run(argv, capture_output=True, text=True, timeout=600)
            assert trained.returncode == 0, trained.stderr[-2000:]
            (run,) = root.glob("*/*/")
            exported = subprocess.run([*cli, "export", str(run)], capture_output=True, text=True, timeout=600)
            assert exported.returncode == 0, exported.stderr[-2000:]
            policies = sorted(root.glob("*/*/policy.onnx"))
    (policy,) = policies
    return policy.parent
