"""Policy files as other stacks write them, made here with torch: an rsl_rl actor with its empirical normalizer
inside (exported as rsl_rl's and Isaac Lab's exporters do: input `obs`, output `actions`, batch 1), mjlab's
metadata on it (comma-separated, mjlab's exporter_utils), and an Isaac Lab run config (params/env.yaml, with the
Python tags Isaac Lab's dump writes)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import onnx
import torch
from torch import nn

JOINTS = tuple(f"{leg}_{part}_joint" for leg in ("FL", "FR", "RL", "RR") for part in ("hip", "thigh", "calf"))
DEFAULT_POSE = {"hip": 0.1, "thigh": 0.8, "calf": -1.5}
TERMS = ("base_lin_vel", "base_ang_vel", "projected_gravity", "command", "joint_pos", "joint_vel", "actions")
OBS_SIZE = 3 + 3 + 3 + 3 + 3 * len(JOINTS)


def default_pose() -> np.ndarray:
    return np.array([DEFAULT_POSE[j.split("_")[1]] for j in JOINTS])


class RslActor(nn.Module):
    """rsl_rl's exported actor: (obs − mean) / (std + eps) → ELU MLP."""

    def __init__(self, obs_size: int, action_size: int, seed: int = 0) -> None:
        super().__init__()
        generator = torch.Generator().manual_seed(seed)
        self.register_buffer("mean", torch.randn(obs_size, generator=generator) * 0.3)
        self.register_buffer("std", torch.rand(obs_size, generator=generator) + 0.5)
        torch.manual_seed(seed)
        self.actor = nn.Sequential(
            nn.Linear(obs_size, 64), nn.ELU(), nn.Linear(64, 32), nn.ELU(), nn.Linear(32, action_size)
        )

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.actor((obs - self.mean) / (self.std + 1e-2))


def export_rsl_rl(path: Path, obs_size: int = OBS_SIZE, action_size: int = len(JOINTS), seed: int = 0) -> RslActor:
    actor = RslActor(obs_size, action_size, seed).eval()
    with warnings.catch_warnings():  # rsl_rl still uses the TorchScript exporter, which torch calls deprecated
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(
            actor, (torch.zeros(1, obs_size),), str(path), input_names=["obs"], output_names=["actions"], dynamo=False
        )
    return actor


def _csv(values: list) -> str:
    return ",".join(f"{v:.3f}" if isinstance(v, float) else str(v) for v in values)


def add_mjlab_metadata(path: Path, action_scale: float | list[float] = 0.25) -> None:
    model = onnx.load(str(path))
    metadata = {
        "run_path": "local/test-run",
        "joint_names": _csv(list(JOINTS)),
        "joint_stiffness": _csv([20.0] * len(JOINTS)),
        "joint_damping": _csv([0.5] * len(JOINTS)),
        "default_joint_pos": _csv(default_pose().tolist()),
        "command_names": "twist",
        "observation_names": _csv(list(TERMS)),
        "action_scale": _csv(action_scale) if isinstance(action_scale, list) else str(action_scale),
    }
    onnx.helper.set_model_props(model, metadata)
    onnx.save(model, str(path))


ENV_YAML = """\
viewer:
  eye: !!python/tuple [7.5, 7.5, 7.5]
sim:
  dt: 0.005
  render_interval: 4
decimation: 4
scene:
  num_envs: 4096
  robot:
    class_type: isaaclab.assets.articulation.articulation:Articulation
    init_state:
      pos: !!python/tuple [0.0, 0.0, 0.4]
      joint_pos:
        .*_hip_joint: 0.1
        .*_thigh_joint: 0.8
        .*_calf_joint: -1.5
      joint_vel:
        .*: 0.0
observations:
  policy:
    concatenate_terms: true
    enable_corruption: true
    history_length: null
    base_lin_vel:
      func: isaaclab.envs.mdp.observations:base_lin_vel
      params: {}
      noise: {func: isaaclab.utils.noise.noise_model:uniform_noise, n_min: -0.1, n_max: 0.1}
      clip: null
      scale: 2.0
      history_length: 0
    base_ang_vel:
      func: isaaclab.envs.mdp.observations:base_ang_vel
      params: {}
      clip: null
      scale: 0.25
    projected_gravity:
      func: isaaclab.envs.mdp.observations:projected_gravity
      params: {}
      clip: null
      scale: null
    velocity_commands:
      func: isaaclab.envs.mdp.observations:generated_commands
      params: {command_name: base_velocity}
      clip: null
      scale: null
    joint_pos:
      func: isaaclab.envs.mdp.observations:joint_pos_rel
      params: {asset_cfg: {name: robot, joint_names: null}}
      clip: null
      scale: null
    joint_vel:
      func: isaaclab.envs.mdp.observations:joint_vel_rel
      params: {}
      clip: null
      scale: 0.05
    actions:
      func: isaaclab.envs.mdp.observations:last_action
      params: {}
      clip: null
      scale: null
  critic: null
actions:
  joint_pos:
    class_type: isaaclab.envs.mdp.actions.joint_actions:JointPositionAction
    asset_name: robot
    debug_vis: false
    clip:
      .*: !!python/tuple [-2.5, 2.5]
    joint_names: [.*]
    scale: {.*_hip_joint: 0.125, .*: 0.25}
    offset: 0.0
    preserve_order: false
    use_default_offset: true
"""
