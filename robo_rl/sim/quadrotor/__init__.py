"""Batched quadrotor simulation: rigid-body dynamics, frames, action modes and the hover and tracking tasks."""

from robo_rl.envs import INFO_TRACKING_ERROR
from robo_rl.sim.quadrotor.actions import ACTION_MODES, CtbrActionMap, CtbrConfig, MotorActionMap, make_action_map
from robo_rl.sim.quadrotor.curriculum import CurriculumConfig
from robo_rl.sim.quadrotor.dynamics import DynamicsParams, integrate, pack_state, quat_to_rotmat
from robo_rl.sim.quadrotor.hover import QuadrotorHover
from robo_rl.sim.quadrotor.hover_config import HoverConfig
from robo_rl.sim.quadrotor.params import QuadrotorParams, frame_names, load_frame, load_params
from robo_rl.sim.quadrotor.randomization import RandomizationConfig
from robo_rl.sim.quadrotor.track import QuadrotorTrack, TrackConfig

__all__ = [
    "ACTION_MODES",
    "INFO_TRACKING_ERROR",
    "CtbrActionMap",
    "CtbrConfig",
    "CurriculumConfig",
    "DynamicsParams",
    "HoverConfig",
    "MotorActionMap",
    "QuadrotorHover",
    "QuadrotorParams",
    "QuadrotorTrack",
    "RandomizationConfig",
    "TrackConfig",
    "frame_names",
    "integrate",
    "load_frame",
    "load_params",
    "make_action_map",
    "pack_state",
    "quat_to_rotmat",
]
