"""Rewards computed on the robot from the profile's observation fields: what the simulated tasks reward, from what
the robot's topics carry. One function per profile kind, or per task where a kind runs several (the arm reaches or
inserts a peg); `reward_for(profile)` picks it."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np

from robo_rl.real.profile import RobotProfile

Reward = Callable[[Mapping[str, float], float], float]

OFF_TRACK_PENALTY = 10.0
"""rc_car/race's `off_track_penalty` in the rc_car_race_ppo preset."""
ARM_SUCCESS_DISTANCE = 0.02
"""mujoco/arm_reach's `success_distance`, m."""


def rc_car_progress(fields: Mapping[str, float], dt: float) -> float:
    """Distance driven along the track in this step (speed × cos(heading error) × dt, m), minus the off-track
    penalty when the car's centre is outside the half width: rc_car/race's reward from the car's own topics."""
    progress = fields["odom.twist.twist.linear.x"] * math.cos(fields["track.heading_error"]) * dt
    off_track = abs(fields["track.lateral_offset"]) > fields["track.half_width"]
    return progress - OFF_TRACK_PENALTY * float(off_track)


def arm_reach(fields: Mapping[str, float], dt: float) -> float:
    """−distance (m) from the end effector to the target, +1 within 2 cm: mujoco/arm_reach's reward per step."""
    del dt
    distance = math.sqrt(sum(fields[f"state.end_effector_to_target.{a}"] ** 2 for a in "xyz"))
    return -distance + float(distance <= ARM_SUCCESS_DISTANCE)


PEG_INSERTED_DEPTH = 0.015
"""m below the estimated hole mouth the peg tip must be for the on-robot peg reward: mujoco/peg_insert's
`success_depth` (20 mm below the true mouth) less a margin for the estimate's error (2 mm per axis)."""
PEG_INSERTED_RADIUS = 0.017
"""m from the estimated hole axis within which the tip counts as in the hole: the hole's 11 mm plus 3 times the
estimate's error. The block's top is at the mouth, so a tip that deep and that near can only be in the hole."""


def peg_insert(fields: Mapping[str, float], dt: float) -> float:
    """1 while the peg tip is `PEG_INSERTED_DEPTH` below the estimated hole mouth within `PEG_INSERTED_RADIUS` of its
    axis, else 0: mujoco/peg_insert's sparse reward, from the tip-to-estimate offset the robot publishes (the true
    hole is unknown on the robot)."""
    del dt
    x, y, z = (fields[f"state.peg_tip_to_hole_estimate.{a}"] for a in "xyz")
    return _peg_inserted(x, y, z)


def _peg_inserted(x: float, y: float, z: float) -> float:
    return float(z <= -PEG_INSERTED_DEPTH and math.hypot(x, y) <= PEG_INSERTED_RADIUS)


def peg_success(profile: RobotProfile) -> Callable[[np.ndarray], bool]:
    """The peg reward's condition on the policy's observation (in the profile's order): an inserted peg ends the
    episode as a success, as mujoco/peg_insert's success terminates it in simulation."""
    index = [profile.obs_names.index(f"peg_tip_to_hole_estimate_{a}") for a in "xyz"]

    def inserted(obs: np.ndarray) -> bool:
        x, y, z = (float(v) for v in np.asarray(obs, dtype=np.float64).reshape(-1)[index])
        return bool(_peg_inserted(x, y, z))

    return inserted


REWARDS: dict[str, Reward] = {"rc_car": rc_car_progress, "arm": arm_reach}
TASK_REWARDS: dict[str, Reward] = {"mujoco/peg_insert": peg_insert, "mujoco/peg_insert_pixels": peg_insert}
"""Rewards of tasks whose kind has another task's reward."""


TASK_SUCCESS: dict[str, Callable[[RobotProfile], Callable[[np.ndarray], bool]]] = {
    "mujoco/peg_insert": peg_success,
    "mujoco/peg_insert_pixels": peg_success,
}
"""Tasks whose sparse reward is their success (terminal in simulation): with the profile's `episode.success:
reward`, RobotEnv ends an episode as a success where this holds (`success_for`)."""


def success_for(profile: RobotProfile) -> Callable[[np.ndarray], bool] | None:
    """The success detector on the observation that `episode.success: reward` means for the profile's task, or None
    where the task's episodes do not end at a success (the car laps on, the arm reaching holds the target)."""
    if profile.episode is None or profile.episode.success != "reward" or profile.task not in TASK_SUCCESS:
        return None
    return TASK_SUCCESS[profile.task](profile)


def reward_for(profile: RobotProfile) -> Reward:
    """The reward of the profile's task, else of its kind; ValueError for a kind without one (the quadrotor learns
    in simulation)."""
    if profile.task in TASK_REWARDS:
        return TASK_REWARDS[profile.task]
    if profile.kind not in REWARDS:
        raise ValueError(f"no on-robot reward for {profile.kind!r} robots (have: {', '.join(sorted(REWARDS))})")
    return REWARDS[profile.kind]
