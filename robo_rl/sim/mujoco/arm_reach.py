"""Arm reaching on MuJoCo: move the end effector of a 4-DoF arm to a random target and hold it there.

Model: `assets/arm_reach.xml`, a gravity-compensated arm on a 0.25 m pedestal: base yaw (±3.05 rad), shoulder
(±1.6 rad), elbow (±2.6 rad) and wrist (±2 rad) pitch, links 0.30 / 0.25 / 0.10 m, joint damping 0.1 N*m*s/rad,
torque limits 5 / 8 / 5 / 2 N*m, 5 ms physics step. Targets are drawn around the shoulder (0.3 m above the
floor) in a region the arm can reach within its joint limits (the tests check that every 1 cm x 0.04 rad cell
of the default distance x elevation ranges is reached by some joint configuration).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import mujoco
import numpy as np
import torch

from robo_rl.envs import SpaceSpec, StepResult
from robo_rl.sim.mujoco.engine import BACKENDS, Backend, make_engine, snapshot
from robo_rl.sim.mujoco.episodes import controls
from robo_rl.sim.mujoco.kinematics import SiteKinematics
from robo_rl.sim.mujoco.model import load_model
from robo_rl.sim.mujoco.task import MujocoTask, check_int_fields

ArmActionMode = Literal["torque", "position"]
ARM_ACTION_MODES: tuple[ArmActionMode, ...] = ("torque", "position")
JOINTS = ("yaw", "shoulder", "elbow", "wrist")
"""Joint (and actuator) names, in qpos and action order."""


@dataclass(frozen=True)
class ArmReachConfig:
    """Action mode, simulation, initial state, targets, reward and success of the reaching task."""

    action_mode: ArmActionMode = "torque"
    """"torque": actions are joint torques in N*m (motor actuators). "position": actions are joint angle targets in
    rad, tracked by position servos with gains `position_kp`, `position_kd` within the same torque limits."""
    position_kp: float = 30.0
    """Position servo stiffness in N*m/rad ("position" mode)."""
    position_kd: float = 3.0
    """Position servo damping in N*m*s/rad ("position" mode)."""
    frame_skip: int = 4
    """Physics steps (5 ms each) per control step: the control period dt is 20 ms by default."""
    episode_length: float = 3.0
    """Episode duration in s before truncation (max_episode_steps = episode_length / dt, rounded)."""
    home_pose: tuple[float, float, float, float] = (0.0, 0.5, -1.0, 0.5)
    """Joint angles in rad (yaw, shoulder, elbow, wrist) around which episodes start."""
    init_joint_range: float = 0.2
    """Initial joint angles: home_pose + U(-r, r) rad each (clipped to the joint limits); velocities start at 0."""
    target_distance_range: tuple[float, float] = (0.15, 0.55)
    """Target distance from the shoulder in m, uniform in this range..."""
    target_elevation_range: tuple[float, float] = (-0.5, 1.2)
    """...elevation above the shoulder's horizontal plane in rad, uniform in this range..."""
    target_azimuth_range: float = 2.5
    """...and azimuth about the base's vertical axis uniform in ±this many rad (0: along +x)."""
    distance_weight: float = 1.0
    """Reward penalty per m of end-effector-to-target distance."""
    control_weight: float = 0.01
    """Reward penalty per unit of sum((joint torque / torque limit)^2), torques as applied in the last physics step."""
    success_distance: float = 0.02
    """The end effector is at the target within this many m: `success_bonus` is paid, and an episode that ends
    so succeeds (reported as `info["success"]`)."""
    success_bonus: float = 1.0
    """Reward added at every step that ends within `success_distance` of the target."""
    backend: Backend = "rollout"
    """Physics backend: "rollout" (MuJoCo on CPU threads) or "mjx" (needs jax and mujoco-mjx installed)."""
    num_threads: int = 2
    """CPU threads of the "rollout" backend (batches under 128 envs per thread step on the calling thread)."""

    def __post_init__(self) -> None:
        if self.action_mode not in ARM_ACTION_MODES:
            raise ValueError(f"ArmReachConfig.action_mode must be one of {ARM_ACTION_MODES}, got {self.action_mode!r}")
        if self.backend not in BACKENDS:
            raise ValueError(f"ArmReachConfig.backend must be one of {BACKENDS}, got {self.backend!r}")
        positive = ("position_kp", "episode_length", "success_distance")
        bad = [name for name in positive if not getattr(self, name) > 0]
        non_negative: tuple[str, ...] = ("position_kd", "init_joint_range", "target_azimuth_range", "distance_weight")
        non_negative += ("control_weight", "success_bonus")
        bad += [name for name in non_negative if not getattr(self, name) >= 0]
        low, high = self.target_distance_range
        if not 0 <= low <= high:
            bad.append("target_distance_range")
        low, high = self.target_elevation_range
        if not -math.pi / 2 <= low <= high <= math.pi / 2:
            bad.append("target_elevation_range")
        if len(self.home_pose) != len(JOINTS):
            bad.append("home_pose")
        if bad:
            raise ValueError(
                f"ArmReachConfig fields out of range (positive / >= 0 as documented, ranges as (low, high) with "
                f"0 <= distance and elevation within ±pi/2, home_pose of 4 angles): {bad}"
            )
        check_int_fields(self, {"frame_skip": 1, "num_threads": 0})


def use_position_servos(model: mujoco.MjModel, kp: float, kd: float) -> None:
    """Turn `model`'s joint motors into position servos, in place.

    Each actuator's control becomes a target angle in rad within its joint's range, and its force
    `kp (target - q) - kd qdot` is clipped to the motor's former control range (its torque limit, N*m).
    """
    for actuator in range(model.nu):
        joint = model.actuator_trnid[actuator, 0]
        model.actuator_forcerange[actuator] = model.actuator_ctrlrange[actuator]
        model.actuator_forcelimited[actuator] = 1
        model.actuator_ctrlrange[actuator] = model.jnt_range[joint]
        model.actuator_gaintype[actuator] = mujoco.mjtGain.mjGAIN_FIXED
        model.actuator_gainprm[actuator, :] = 0.0
        model.actuator_gainprm[actuator, 0] = kp
        model.actuator_biastype[actuator] = mujoco.mjtBias.mjBIAS_AFFINE
        model.actuator_biasprm[actuator, :] = 0.0
        model.actuator_biasprm[actuator, 1:3] = (-kp, -kd)


class ArmReach(MujocoTask):
    """`num_envs` 4-DoF MuJoCo arms reaching random targets, implementing `BatchedEnv` and `RenderableEnv`.

    Observation `(num_envs, 14)`: joint angles (4, rad), joint velocities (4, rad/s), target position (3, m,
    world frame), end-effector-to-target vector (3, m, world frame). Action `(num_envs, 4)`, clipped to the
    bounds of `action_spec`: joint torques in N*m ("torque" mode) or joint angle targets in rad ("position").

    Reward `(num_envs,)` after the step: `-distance_weight * d - control_weight * sum((tau / tau_max)^2)` plus
    `success_bonus` where `d <= success_distance`, d the end-effector-to-target distance in m and tau the joint
    torques applied in the last physics step. Episodes never terminate; they are truncated after
    `max_episode_steps` and reset inside `step` with a new target. `info["success"]`: the episode ended with the
    end effector within `success_distance` of the target. The target is drawn as a mocap sphere in `render`.

    Beyond the protocols: `model` (the compiled `MjModel`, with position servos in "position" mode), `engine`
    (the batched physics, `robo_rl.sim.mujoco.engine.PhysicsEngine`), `set_joint_state` and `set_target`.
    """

    def __init__(
        self,
        num_envs: int,
        device: str | torch.device = "cpu",
        config: ArmReachConfig = ArmReachConfig(),
        seed: int | None = None,
    ) -> None:
        """Build the envs and reset them; `seed` None draws a non-deterministic seed."""
        self.config = config
        model = load_model("arm_reach")
        self._torque_limit = model.actuator_ctrlrange[:, 1].copy()
        if config.action_mode == "position":
            use_position_servos(model, config.position_kp, config.position_kd)
        self._ctrl_low, self._ctrl_high = model.actuator_ctrlrange.T.copy()
        engine = make_engine(model, num_envs, config.frame_skip, config.backend, config.num_threads)
        super().__init__(num_envs, device, engine, config.episode_length, seed)
        self._end_effector = SiteKinematics(self.model, "end_effector")
        self._shoulder = self._joint_anchor("shoulder")
        self._joint_low, self._joint_high = self.model.jnt_range.T.copy()
        self._target = np.zeros((num_envs, 3))
        self.obs_spec = self._obs_spec()
        self.action_spec = self._action_spec()
        self.reset(seed)

    # ----------------------------------------------------------------------------------------------- public API

    @property
    def target(self) -> torch.Tensor:
        """`(num_envs, 3)` float64 CPU copy of the target positions in m (world frame)."""
        return torch.from_numpy(self._target.copy())

    def set_target(self, target: torch.Tensor) -> None:
        """Move the targets of every env to `target` `(num_envs, 3)` in m; episodes continue."""
        self._target[:] = target.detach().cpu().numpy().reshape(self.num_envs, 3)

    def end_effector_position(self) -> torch.Tensor:
        """`(num_envs, 3)` float64 CPU end-effector positions in m (world frame) in the current state."""
        return torch.from_numpy(self._end_effector(self.engine.qpos))

    def step(self, action: torch.Tensor) -> StepResult:
        """Apply actions `(num_envs, 4)` (N*m or rad, see the action mode) for `dt`; auto-resets finished envs."""
        self.engine.step(controls(action, self._ctrl_low, self._ctrl_high))
        end_effector = self._end_effector(self.engine.qpos)
        final_obs = self._observe(end_effector)
        distance = np.linalg.norm(self._target - end_effector, axis=1)
        reward = self._reward(distance)
        truncated = self._episodes.tick()
        success = truncated & (distance <= self.config.success_distance)
        return self._end_step(final_obs, reward, truncated, success)

    def render(self, index: int = 0) -> np.ndarray:
        """RGB frame `(480, 640, 3)` uint8 of env `index` and its target from the MJCF's fixed camera."""
        snapshot(self.engine, index, self._renderer.data, mocap_pos=self._target[index : index + 1])
        return self._renderer.render()

    # ------------------------------------------------------------------------------------------------ internals

    def _task_state(self) -> dict[str, Any]:
        return {"target": torch.from_numpy(self._target.copy())}

    def _load_task_state(self, state_dict: dict[str, Any]) -> None:
        self._target = state_dict["target"].cpu().numpy().astype(np.float64).reshape(self.num_envs, 3)

    def _joint_anchor(self, joint: str) -> np.ndarray:
        """World position `(3,)` of `joint`'s anchor at qpos0 (the shoulder's does not move: yaw turns about it)."""
        data = mujoco.MjData(self.model)
        mujoco.mj_kinematics(self.model, data)
        return data.xanchor[mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_JOINT, joint)].copy()

    def _obs_spec(self) -> SpaceSpec:
        names = [f"{j}_angle" for j in JOINTS] + [f"{j}_velocity" for j in JOINTS]
        names += [f"target_{a}" for a in "xyz"] + [f"end_effector_to_target_{a}" for a in "xyz"]
        units = ["rad"] * 4 + ["rad/s"] * 4 + ["m"] * 6
        # Joint limits are soft in MuJoCo (angles can pass them slightly), so no element is bounded.
        return SpaceSpec(tuple(names), (-math.inf,) * 14, (math.inf,) * 14, tuple(units))

    def _action_spec(self) -> SpaceSpec:
        torque = self.config.action_mode == "torque"
        names = tuple(f"{j}_torque" if torque else f"{j}_angle_target" for j in JOINTS)
        units = ("N*m" if torque else "rad",) * 4
        return SpaceSpec(names, tuple(map(float, self._ctrl_low)), tuple(map(float, self._ctrl_high)), units)

    def _restart(self, index: np.ndarray) -> None:
        c, episodes = self.config, self._episodes
        home = np.asarray(c.home_pose)
        qpos = np.clip(
            episodes.uniform(index.size, home - c.init_joint_range, home + c.init_joint_range),
            self._joint_low,
            self._joint_high,
        )
        episodes.restart(index, qpos, np.zeros_like(qpos))
        self._target[index] = self._sample_targets(index.size)

    def _sample_targets(self, count: int) -> np.ndarray:
        c = self.config
        low = np.array([c.target_distance_range[0], c.target_elevation_range[0], -c.target_azimuth_range])
        high = np.array([c.target_distance_range[1], c.target_elevation_range[1], c.target_azimuth_range])
        distance, elevation, azimuth = self._episodes.uniform(count, low, high).T
        direction = np.stack(
            (np.cos(elevation) * np.cos(azimuth), np.cos(elevation) * np.sin(azimuth), np.sin(elevation)), axis=1
        )
        return self._shoulder + distance[:, None] * direction

    def _current_obs(self) -> np.ndarray:
        return self._observe(self._end_effector(self.engine.qpos))

    def _observe(self, end_effector: np.ndarray) -> np.ndarray:
        qpos, qvel = self.engine.qpos, self.engine.qvel
        return np.concatenate((qpos, qvel, self._target, self._target - end_effector), axis=1)

    def _reward(self, distance: np.ndarray) -> np.ndarray:
        c = self.config
        effort = ((self.engine.sensordata[:, : len(JOINTS)] / self._torque_limit) ** 2).sum(axis=1)
        bonus = np.where(distance <= c.success_distance, c.success_bonus, 0.0)
        return -c.distance_weight * distance - c.control_weight * effort + bonus
