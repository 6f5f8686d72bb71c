"""`robo-rl eval POLICY.onnx --sim l2f` and the demo's last step: a hover policy artifact flown in L2F.

Everything the flight needs comes from the file: the observation names and their bounds (the position integral's
limit), the control period, the training task's config (initial-state ranges, crash and success criteria, target)
and the actuator model (`robo_rl.actuator`: how an action becomes a motor command). The flight itself is
`robo_rl.sim.quadrotor.l2f_gate.fly`. A policy with memory (`robo_rl.memory`) has its state carried from step to
step, each episode's starting at the file's reset value.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from robo_rl.actuator import ACTUATOR_KEY, ActuatorError, MotorActuator
from robo_rl.api.onnx_policy import onnx_actor, policy_artifact
from robo_rl.artifact import PolicyArtifact
from robo_rl.config import ConfigError, from_dict
from robo_rl.runners.policy_stepper import PolicyStepper
from robo_rl.sim.quadrotor.hover import HoverConfig
from robo_rl.sim.quadrotor.l2f_gate import INTEGRAL_NAMES, L2FResult, L2FUnavailableError, fly, native_params
from robo_rl.sim.quadrotor.params import QuadrotorParams, load_frame

HOVER_TASK = "quadrotor/hover"


@dataclass(frozen=True)
class L2FPolicy:
    """A hover policy artifact, read for flying in L2F."""

    act: Callable[[np.ndarray], np.ndarray]
    """obs `(n, obs_dim)` float32 → actions `(n, 4)`, in onnxruntime (with memory: each env's state carried)."""
    start_episodes: Callable[[int], None]
    """n episodes begin: a policy with memory sets their states to the reset value (without memory: nothing)."""
    obs_names: tuple[str, ...]
    dt: float
    config: HoverConfig
    """The training task's config (from `robo_rl.task_config`)."""
    actuator: MotorActuator
    integral_limit: float
    """L of the position_error_integral_* observations (their bound in the file), 0 without them."""
    notes: tuple[str, ...]
    """What was assumed because the file does not say it (printed with the result)."""


def read_l2f_policy(path: Path) -> L2FPolicy:
    """The policy at `path` (a policy.onnx, or a run directory's) with what `fly` needs; ValueError naming the file
    and what is wrong for a file that is not a motor-level hover policy."""
    from robo_rl.export.onnx import read_metadata

    path = path / "policy.onnx" if path.is_dir() else path
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such policy file")
    artifact = policy_artifact(path)  # one line naming the file when it is no robo_rl policy
    props = read_metadata(path)
    if artifact.task != HOVER_TASK:
        raise ValueError(f"{path}: --sim l2f flies {HOVER_TASK} policies; this one is for {artifact.task!r}")
    if artifact.action_chunk != 1:
        raise ValueError(f"{path}: --sim l2f flies one action per step; this policy outputs chunks")
    notes: list[str] = []
    config = _hover_config(path, artifact, notes)
    if config.action_mode != "motor":
        raise ValueError(f"{path}: --sim l2f flies motor-level policies; this one has action_mode {config.action_mode}")
    actuator = _actuator(path, props.get(ACTUATOR_KEY), config, notes)
    stepper = PolicyStepper(onnx_actor(path, artifact.obs.dim, artifact.action.dim))

    def act(obs: np.ndarray) -> np.ndarray:
        return stepper(torch.from_numpy(obs)).numpy()

    bounds = [
        artifact.obs.high[artifact.obs.names.index(name)] for name in INTEGRAL_NAMES if name in artifact.obs.names
    ]
    dt = artifact.dt if artifact.dt is not None else config.dt
    limit = float(max(bounds, default=0.0))
    return L2FPolicy(act, stepper.start, artifact.obs.names, dt, config, actuator, limit, tuple(notes))


def _hover_config(path: Path, artifact: PolicyArtifact, notes: list[str]) -> HoverConfig:
    if artifact.task_config is None:
        notes.append("the file records no task config: robo_rl's default hover config judges the flights")
        return HoverConfig()
    try:
        return from_dict(HoverConfig, json.loads(artifact.task_config))
    except (ConfigError, ValueError, TypeError) as error:
        raise ValueError(f"{path}: its task config does not fit this robo_rl's HoverConfig: {error}") from None


def _actuator(path: Path, text: str | None, config: HoverConfig, notes: list[str]) -> MotorActuator:
    if text is not None:
        try:
            return MotorActuator.from_json(text)
        except ActuatorError as error:
            raise ValueError(f"{path}: {error}") from None
    notes.append(
        f"the file has no {ACTUATOR_KEY} (exported before it was recorded): assuming actions [-1, 1] map linearly "
        "onto motor commands [0, 1]"
    )
    try:
        frame = load_frame(config.frame)
    except (ConfigError, ValueError, FileNotFoundError):
        frame = native_params()
    return MotorActuator(
        frame.thrust_curve,
        frame.torque_to_thrust,
        frame.motor_rise_time_constant,
        frame.motor_fall_time_constant,
        frame=config.frame,
    )


def resolve_plant(plant: str, policy: L2FPolicy) -> str | QuadrotorParams:
    """--plant as `fly` takes it: "native", the training frame ("robo_rl"), or a frame YAML file."""
    if plant == "native":
        return "native"
    if plant == "robo_rl":
        return load_frame(policy.config.frame or policy.actuator.frame)  # the config keeps a frame file's path
    return load_frame(Path(plant))


def evaluate_in_l2f(
    path: Path, plant: str = "native", episodes: int = 500, seed: int = 12345
) -> tuple[L2FResult, tuple[str, ...]]:
    """(result, notes): the policy at `path` flown in L2F (see `fly`), and what was assumed about the file."""
    if episodes < 1:
        raise ValueError(f"--episodes must be at least 1, got {episodes}")
    policy = read_l2f_policy(path)
    try:
        result = fly(
            policy.act,
            policy.obs_names,
            policy.dt,
            policy.actuator,
            plant=resolve_plant(plant, policy),  # type: ignore[arg-type]
            episodes=episodes,
            seed=seed,
            config=policy.config,
            integral_limit=policy.integral_limit,
            start_episodes=policy.start_episodes,
        )
    except L2FUnavailableError as error:
        raise ValueError(str(error)) from None
    return result, policy.notes
