"""Peg-in-hole insertion on MuJoCo: a 4-DoF arm puts the round peg it holds into a hole whose pose it only estimates.

A contact-rich task that RL alone fails, to be learned with human corrections as in HIL-SERL; its simulated
operator is robo_rl.sim.mujoco.peg_expert, its presets in robo_rl.sim.mujoco.presets.

Model (`assets/peg_insert.xml`): the arm of `arm_reach.xml` (base yaw, shoulder, elbow and wrist pitch, links 0.30 /
0.25 / 0.10 m, gravity-compensated, joint damping 0.1 N*m*s/rad, torque limits 5 / 8 / 5 / 2 N*m) holding a round
peg rigidly at the end of its hand: radius 10 mm, 60 mm long, its tip 0.16 m from the wrist axis. The block's hole
is a 16-sided prism of boxes, inscribed radius 11 mm (1.0 mm radial clearance, 1.2 mm at its corners), 30 mm deep,
its mouth 0.10 m above the floor at (0.40, 0) m nominally. Contacts: peg against block only, friction 0.5,
elliptic cones, multi-point convex collisions (flat peg end on flat faces) by MuJoCo's older MPR collider (the native
one traps a peg pressed at the mouth's plane partly over the hole between contacts of opposite normals: asked to move
4.8 mm sideways in four search moves, it moved 0.39 mm, with MPR 2.78 mm; bench/peg_contacts.py), solref 4 ms
critically damped, solimp 0.95-0.99 over 0.5 mm; physics step 2 ms, implicit-fast integration. The peg points
straight down when shoulder + elbow + wrist = -pi/2 (all three pitch about the same axis), so a round peg needs no
wrist roll. Measured (bench/peg_contacts.py; one MjData, the peg lowered by servo targets 1 mm per 0.1 s): on the
axis it falls in to the hole's floor without touching a wall; 3 mm off the axis it lands on the top surface (contacts
at most 0.012 mm deep, normal forces up to 5 N), and that joint-space push slides it 12 mm sideways over the block (a
push along the transposed vertical Jacobian does not: robo_rl.sim.mujoco.peg_expert). Earlier, with the native
collider and a 0.5 ms step, the slide was the same (13.7 vs 14 mm): the 2 ms step is converged for these contacts.
Speed (one thread, 2-core shared machine): 5.8-5.9k env-steps/s at 16 and 64 envs with the peg in the air; with
every peg pressed on the block MPR is about 25 % slower than the native collider (456 vs 601 env-steps/s side by side
on a loaded machine).

Actions are small joint-angle steps, not absolute targets: each control step the position servos (kp 30 N*m/rad,
kd 3 N*m*s/rad, clipped to the torque limits) are sent to the measured joint angles plus the action, at most
`max_joint_step` rad per joint (0.05 rad: about 2 cm of peg travel per 0.1 s at the arm's reach). Why: insertion
needs millimetre moves, which a bounded step makes the policy's whole action range (absolute targets over the joint
ranges would put 1 mm at 1/3000 of it); the pressing force is bounded by kp * max_joint_step however long the policy
pushes (a compliant insertion, no wind-up); the step is relative to what is measured, so the observation stays
Markov; and human corrections (a spacemouse, HIL-SERL's teleop) are increments too. On the robot the command is
still a JointTrajectory of absolute angles, measured angles + action: profile `arm_peg`'s command fields are
`relative_to` the measured joint angles (robo_rl.real.profile), and its safety filter bounds the absolute targets.

Per episode the hole moves: ±`hole_xy_range` m in x and y about `hole_position`, ±`hole_yaw_range` rad about the
vertical (the block is a mocap body per env, `RolloutEngine(mocap=True)`), and the policy sees it through an estimate
off by Gaussian noise of `hole_estimate_noise` m per axis, drawn once per episode (a camera's estimate is wrong by
the same amount all episode). The peg starts straight down above the nominal hole.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import mujoco
import numpy as np
import torch

from robo_rl.cost_spec import CostSpec
from robo_rl.envs import INFO_COST, INFO_FINAL_PRIVILEGED_OBS, INFO_PRIVILEGED_OBS, SpaceSpec, StepResult
from robo_rl.sim.mujoco.arm_reach import JOINTS, use_position_servos
from robo_rl.sim.mujoco.engine import RolloutEngine, snapshot
from robo_rl.sim.mujoco.episodes import controls, to_torch
from robo_rl.sim.mujoco.kinematics import SiteKinematics
from robo_rl.sim.mujoco.model import load_model
from robo_rl.sim.mujoco.task import MujocoTask, check_int_fields

PegReward = Literal["sparse", "shaped"]
PEG_REWARDS: tuple[PegReward, ...] = ("sparse", "shaped")
PEG_RADIUS = 0.010
"""Peg radius in m."""
PEG_LENGTH = 0.06
"""Peg length in m."""
HOLE_RADIUS = 0.011
"""Inscribed radius of the hole's 16-sided prism in m."""
HOLE_DEPTH = 0.03
"""Depth of the hole in m (from its mouth to its floor)."""
HOLE_HEIGHT = 0.10
"""Height of the hole's mouth (the block's top surface) above the floor in m."""
SHOULDER = np.array([0.0, 0.0, 0.30])
"""World position of the shoulder axis in m (pedestal 0.25 m + base link 0.05 m)."""
LINKS = (0.30, 0.25)
"""Upper arm and forearm lengths in m."""
WRIST_TO_TIP = 0.16
"""Wrist axis to peg tip in m (hand 0.10 m + peg 0.06 m)."""
PEG_CAMERAS = ("wrist", "side")
"""The MJCF's observation cameras: on the hand looking along the peg, and fixed looking at the block."""


@dataclass(frozen=True)
class PegInsertConfig:
    """Servos, simulation, hole randomization, observation noise, reward and success of the insertion task."""

    position_kp: float = 30.0
    """Position servo stiffness in N*m/rad."""
    position_kd: float = 3.0
    """Position servo damping in N*m*s/rad."""
    max_joint_step: float = 0.05
    """Largest joint-angle step per control step in rad (the action bounds)."""
    frame_skip: int = 50
    """Physics steps (2 ms each) per control step: the control period dt is 0.1 s (10 Hz) by default."""
    episode_length: float = 15.0
    """Episode duration in s before truncation (max_episode_steps = episode_length / dt, rounded)."""
    hole_position: tuple[float, float] = (0.40, 0.0)
    """Nominal x, y of the hole's axis in m (world frame); its mouth is `HOLE_HEIGHT` above the floor."""
    hole_xy_range: float = 0.02
    """The hole's x and y are each hole_position + U(-r, r) m per episode."""
    hole_yaw_range: float = math.radians(10.0)
    """The hole turns about the vertical by U(-r, r) rad per episode."""
    hole_estimate_noise: float = 0.002
    """Standard deviation in m of the per-episode Gaussian error of the hole estimate, per axis."""
    start_xy_range: float = 0.03
    """The peg tip starts at hole_position + U(-r, r) m in x and y..."""
    start_height_range: tuple[float, float] = (0.04, 0.08)
    """...and this many m above the hole's mouth, uniform, pointing straight down, at rest."""
    success_depth: float = 0.02
    """Success: the peg tip is at least this many m below the hole's mouth, within `HOLE_RADIUS` of its axis."""
    reward: PegReward = "sparse"
    """"sparse": 1 at the step that succeeds, else 0. "shaped": that plus -distance_weight * the tip's distance in m
    to the success point (on the hole's axis, `success_depth` below its mouth; the true hole, not the estimate)."""
    distance_weight: float = 1.0
    """Shaped reward penalty per m of tip-to-goal distance."""
    num_threads: int = 2
    """CPU threads of the rollout engine (batches under 128 envs per thread step on the calling thread)."""
    cameras: tuple[str, ...] = ()
    """Observation cameras (of `PEG_CAMERAS`): "wrist" on the hand looking along the peg at the hole, "side" fixed,
    looking at the block. Non-empty only for the camera env `robo_rl.sim.mujoco.peg_pixels.PegInsertPixels`
    (task mujoco/peg_insert_pixels); `PegInsert` itself observes the state vector and refuses cameras."""
    image_size: int = 64
    """Height and width in pixels of each camera's square frames (with `cameras`)."""
    observe_hole_estimate: bool = True
    """The observation ends with the peg tip relative to the noisy hole estimate (3, m). False: joint angles and
    velocities only, so that the hole must be found in the cameras' frames (mujoco/peg_insert_pixels; the simulated
    operator still reads the estimate from `PegInsert.hole_estimate`, as a person has their own view of the hole)."""
    privileged_hole: bool = False
    """Give the critic the peg tip relative to the TRUE hole's mouth centre (3, m, world frame) as a privileged
    observation (`privileged_obs`, and the step infos' privileged pair): the simulator knows where the hole is, the
    policy does not. For an asymmetric actor-critic (`sac.encoder.trained_by=actor`) whose critic values the true
    offset (success and reward depend on it alone; the estimate's error is noise to a critic) while the actor reads
    it from the frames."""

    cost_force_limit: float = 0.0
    """A constraint for safe RL (`info["cost"]`, issue 54): a step costs the contact force on the peg above this many
    N (MuJoCo's touch sensor: the normal forces of the hand's contacts around the peg), at its peak over the step's
    physics steps; an episode's cost sums those excesses. The reward does not change. 0: no cost."""

    def __post_init__(self) -> None:
        if self.reward not in PEG_REWARDS:
            raise ValueError(f"PegInsertConfig.reward must be one of {PEG_REWARDS}, got {self.reward!r}")
        positive = ("position_kp", "max_joint_step", "episode_length", "success_depth")
        bad = [name for name in positive if not getattr(self, name) > 0]
        non_negative = ("position_kd", "hole_xy_range", "hole_yaw_range", "hole_estimate_noise", "start_xy_range")
        bad += [name for name in (*non_negative, "distance_weight", "cost_force_limit") if not getattr(self, name) >= 0]
        low, high = self.start_height_range
        if not 0 <= low <= high:
            bad.append("start_height_range")
        if self.success_depth > HOLE_DEPTH:
            bad.append("success_depth")
        if bad:
            raise ValueError(
                f"PegInsertConfig fields out of range (positive / >= 0 as documented, start_height_range as "
                f"0 <= low <= high, success_depth at most the hole depth {HOLE_DEPTH} m): {bad}"
            )
        check_int_fields(self, {"frame_skip": 1, "num_threads": 0, "image_size": 1})
        unknown = [name for name in self.cameras if name not in PEG_CAMERAS]
        if unknown or len(set(self.cameras)) != len(self.cameras):
            raise ValueError(f"PegInsertConfig.cameras must be distinct names of {PEG_CAMERAS}, got {self.cameras!r}")


def contact_force_spec(config: PegInsertConfig) -> CostSpec:
    """The cost `PegInsertConfig.cost_force_limit` declares."""
    about = f"the peak contact force on the peg above {config.cost_force_limit:g} N"
    return CostSpec("contact_force", "N", about)


def peg_down_ik(tip: np.ndarray) -> np.ndarray:
    """Joint angles `(N, 4)` rad that put the peg tip at `tip` `(N, 3)` m (world frame) with the peg straight down.

    Closed form: yaw turns the arm's plane to the tip's azimuth; the wrist axis lies `WRIST_TO_TIP` above the tip; the
    shoulder and elbow reach it elbow-up (two-link law of cosines); the wrist makes the pitches sum to -pi/2.
    Points out of reach get the nearest stretched-out configuration (cosine clipped).
    """
    tip = np.asarray(tip, dtype=np.float64).reshape(-1, 3)
    yaw = np.arctan2(tip[:, 1], tip[:, 0])
    reach = np.hypot(tip[:, 0], tip[:, 1]) - SHOULDER[0]
    rise = tip[:, 2] + WRIST_TO_TIP - SHOULDER[2]
    upper, fore = LINKS
    cos_elbow = np.clip((reach**2 + rise**2 - upper**2 - fore**2) / (2 * upper * fore), -1.0, 1.0)
    elbow = -np.arccos(cos_elbow)
    shoulder = np.arctan2(rise, reach) - np.arctan2(fore * np.sin(elbow), upper + fore * np.cos(elbow))
    wrist = -math.pi / 2 - shoulder - elbow
    return np.stack((yaw, shoulder, elbow, wrist), axis=1)


def peg_tip_fk(qpos: np.ndarray) -> np.ndarray:
    """Peg tip positions `(N, 3)` m (world frame) at joint angles `qpos` `(N, 4)` rad (yaw, shoulder, elbow, wrist).

    The forward kinematics `peg_down_ik` inverts, for any angles (not only peg-down ones), in closed form: the three
    pitches turn about parallel horizontal axes, so in the arm's plane each link adds its length along the sum of the
    pitches up to it (0 horizontal, +pi/2 up; the peg points down when they sum to -pi/2), and the base yaw turns
    that plane about the vertical through the shoulder. What a robot's own kinematics give from its joint_states,
    without the simulator (tests/sim/mujoco/test_peg_fk.py checks it against the model's peg_tip site).
    """
    yaw, shoulder, elbow, wrist = np.asarray(qpos, dtype=np.float64).reshape(-1, 4).T
    upper, fore = LINKS
    arm, forearm, hand = shoulder, shoulder + elbow, shoulder + elbow + wrist
    reach = SHOULDER[0] + upper * np.cos(arm) + fore * np.cos(forearm) + WRIST_TO_TIP * np.cos(hand)
    rise = upper * np.sin(arm) + fore * np.sin(forearm) + WRIST_TO_TIP * np.sin(hand)
    return np.stack((reach * np.cos(yaw), reach * np.sin(yaw), SHOULDER[2] + rise), axis=1)


class PegInsert(MujocoTask):
    """`num_envs` arms inserting a peg into a randomly placed hole, implementing `BatchedEnv` and `RenderableEnv`.

    Observation `(num_envs, 11)`: joint angles (4, rad), joint velocities (4, rad/s), peg tip minus the hole
    estimate (3, m, world frame; the estimate is the centre of the hole's mouth plus the episode's noise). Action
    `(num_envs, 4)` in rad, within ±`max_joint_step`: the servos' targets are the measured angles plus it.

    Reward after the step: 1 where the peg is inserted (`success_depth` below the mouth, within `HOLE_RADIUS` of the
    axis), else 0 ("sparse"; "shaped" subtracts the tip's distance to the success point). Success terminates the
    episode (`info["success"]` True there); otherwise it is truncated after `max_episode_steps`. Finished envs
    reset inside `step` with a new hole pose and estimate.

    With `observe_hole_estimate=False` the observation is the 8 joint numbers alone. With `privileged_hole` the
    privileged observation `(num_envs, 3)` is the peg tip minus the true mouth centre in m (`privileged_obs`, and
    `info["privileged_obs"]` / `info["final_privileged_obs"]` after each step, the latter before auto-reset).

    Beyond the protocols: `model`, `engine`, `hole_pose()`, `peg_tip_position()`, `set_joint_state`, `set_hole`.
    """

    engine: RolloutEngine
    """The rollout engine with a mocap block per env (`mocap_pos`, `mocap_quat`)."""

    def __init__(
        self,
        num_envs: int,
        device: str | torch.device = "cpu",
        config: PegInsertConfig = PegInsertConfig(),
        seed: int | None = None,
    ) -> None:
        """Build the envs and reset them; `seed` None draws a non-deterministic seed."""
        if config.cameras:
            raise ValueError(
                "PegInsert observes the state vector only; cameras need PegInsertPixels (task "
                f"mujoco/peg_insert_pixels), got cameras={config.cameras!r}"
            )
        self.config = config
        model = load_model("peg_insert")
        use_position_servos(model, config.position_kp, config.position_kd)
        self._joint_low, self._joint_high = model.jnt_range.T.copy()
        engine = RolloutEngine(model, num_envs, config.frame_skip, config.num_threads, mocap=True)
        super().__init__(num_envs, device, engine, config.episode_length, seed)
        self._tip = SiteKinematics(self.model, "peg_tip")
        self._hole = np.zeros((num_envs, 4))
        """Per env: x, y, z of the hole's mouth centre in m and its yaw in rad (the truth)."""
        self._estimate_error = np.zeros((num_envs, 3))
        self.obs_spec = self._obs_spec()
        self.action_spec = self._action_spec()
        self.privileged_obs_spec = _privileged_spec() if config.privileged_hole else None
        self.cost_spec = None if config.cost_force_limit <= 0 else contact_force_spec(config)
        self._touch = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SENSOR, "peg_touch")
        self.reset(seed)

    # ----------------------------------------------------------------------------------------------- public API

    def hole_pose(self) -> torch.Tensor:
        """`(num_envs, 4)` float64 CPU copy of the true hole poses: mouth centre x, y, z in m, yaw in rad."""
        return torch.from_numpy(self._hole.copy())

    def hole_estimate(self) -> torch.Tensor:
        """`(num_envs, 3)` float64 CPU copy of the noisy hole-mouth estimates in m the observations use."""
        return torch.from_numpy(self._hole[:, :3] + self._estimate_error)

    def set_hole(self, pose: torch.Tensor, estimate_error: torch.Tensor | None = None) -> None:
        """Move every env's hole to `pose` `(num_envs, 4)` (x, y, z m, yaw rad) with estimate errors `(num_envs, 3)` m
        (default zero); episodes continue."""
        self._hole[:] = pose.detach().cpu().numpy().astype(np.float64).reshape(self.num_envs, 4)
        error = torch.zeros(self.num_envs, 3) if estimate_error is None else estimate_error
        self._estimate_error[:] = error.detach().cpu().numpy().astype(np.float64).reshape(self.num_envs, 3)
        self._place_blocks(np.arange(self.num_envs))

    def peg_tip_position(self) -> torch.Tensor:
        """`(num_envs, 3)` float64 CPU peg tip positions in m (world frame) in the current state."""
        return torch.from_numpy(self._tip(self.engine.qpos))

    @property
    def privileged_obs(self) -> torch.Tensor | None:
        """`(num_envs, 3)` float32 peg tip minus the true hole's mouth centre in m in the current state (with
        `privileged_hole`; None without)."""
        if self.privileged_obs_spec is None:
            return None
        return to_torch(self._tip(self.engine.qpos) - self._hole[:, :3], self.device)

    def step(self, action: torch.Tensor) -> StepResult:
        """Step the servo targets by `action` `(num_envs, 4)` rad from the measured angles for `dt`; auto-resets."""
        step = controls(action, -self._step_limit(), self._step_limit())
        self.engine.step(np.clip(self.engine.qpos + step, self._joint_low, self._joint_high))
        cost = self._contact_cost()
        tip = self._tip(self.engine.qpos)
        final_obs = self._observe(tip)
        final_privileged = tip - self._hole[:, :3]  # before the finished envs draw new holes
        success = self._inserted(tip)
        reward = success.astype(np.float64)
        if self.config.reward == "shaped":
            reward -= self.config.distance_weight * np.linalg.norm(tip - self._goal(), axis=1)
        truncated = self._episodes.tick() & ~success
        result = self._end_step(final_obs, reward, truncated, success, terminated=success)
        if cost is not None:
            result[4][INFO_COST] = to_torch(cost, self.device)
        privileged = self.privileged_obs
        if privileged is not None:
            result[4][INFO_PRIVILEGED_OBS] = privileged
            result[4][INFO_FINAL_PRIVILEGED_OBS] = to_torch(final_privileged, self.device)
        return result

    def render(self, index: int = 0) -> np.ndarray:
        """RGB frame `(480, 640, 3)` uint8 of env `index` (arm, peg and its block) from the MJCF's fixed camera."""
        data = self._renderer.data
        data.mocap_quat[:] = self.engine.mocap_quat[index]
        snapshot(self.engine, index, data, mocap_pos=self.engine.mocap_pos[index])
        return self._renderer.render()

    # ------------------------------------------------------------------------------------------------ internals

    def _task_state(self) -> dict[str, Any]:
        return {
            "hole": torch.from_numpy(self._hole.copy()),
            "estimate_error": torch.from_numpy(self._estimate_error.copy()),
        }

    def _load_task_state(self, state_dict: dict[str, Any]) -> None:
        self._hole = state_dict["hole"].cpu().numpy().astype(np.float64).reshape(self.num_envs, 4)
        self._estimate_error = state_dict["estimate_error"].cpu().numpy().astype(np.float64).reshape(self.num_envs, 3)
        self._place_blocks(np.arange(self.num_envs))

    def contact_force(self) -> np.ndarray:
        """`(num_envs,)` the peak contact force on the peg in N over the last control step (the touch sensor)."""
        return self.engine.sensor_peak(int(self.model.sensor_adr[self._touch]))

    def _contact_cost(self) -> np.ndarray | None:
        if self.cost_spec is None:
            return None
        excess: np.ndarray = np.maximum(self.contact_force() - self.config.cost_force_limit, 0.0)
        return excess

    def _step_limit(self) -> np.ndarray:
        return np.full(len(JOINTS), self.config.max_joint_step)

    def _obs_spec(self) -> SpaceSpec:
        names = [f"{j}_angle" for j in JOINTS] + [f"{j}_velocity" for j in JOINTS]
        units = ["rad"] * 4 + ["rad/s"] * 4
        if self.config.observe_hole_estimate:
            names += [f"peg_tip_to_hole_estimate_{a}" for a in "xyz"]
            units += ["m"] * 3
        # Joint limits are soft in MuJoCo (angles can pass them slightly), so no element is bounded.
        dim = len(names)
        return SpaceSpec(tuple(names), (-math.inf,) * dim, (math.inf,) * dim, tuple(units))

    def _action_spec(self) -> SpaceSpec:
        limit = self.config.max_joint_step
        names = tuple(f"{j}_angle_step" for j in JOINTS)
        return SpaceSpec(names, (-limit,) * 4, (limit,) * 4, ("rad",) * 4)

    def _restart(self, index: np.ndarray) -> None:
        c, episodes, n = self.config, self._episodes, index.size
        nominal = np.array([*c.hole_position, HOLE_HEIGHT, 0.0])
        spread = np.array([c.hole_xy_range, c.hole_xy_range, 0.0, c.hole_yaw_range])
        self._hole[index] = episodes.uniform(n, nominal - spread, nominal + spread)
        self._estimate_error[index] = c.hole_estimate_noise * episodes.rng.standard_normal((n, 3))
        low = np.array([*c.hole_position, HOLE_HEIGHT]) + np.array([-c.start_xy_range] * 2 + [c.start_height_range[0]])
        high = np.array([*c.hole_position, HOLE_HEIGHT]) + np.array([c.start_xy_range] * 2 + [c.start_height_range[1]])
        qpos = np.clip(peg_down_ik(episodes.uniform(n, low, high)), self._joint_low, self._joint_high)
        episodes.restart(index, qpos, np.zeros_like(qpos))
        self._place_blocks(index)

    def _place_blocks(self, index: np.ndarray) -> None:
        """Put the mocap block of envs `index` at their hole poses (its origin is the mouth's centre)."""
        self.engine.mocap_pos[index, 0] = self._hole[index, :3]
        half_yaw = self._hole[index, 3] / 2
        zeros = np.zeros_like(half_yaw)
        self.engine.mocap_quat[index, 0] = np.stack((np.cos(half_yaw), zeros, zeros, np.sin(half_yaw)), axis=1)

    def _current_obs(self) -> np.ndarray:
        return self._observe(self._tip(self.engine.qpos))

    def _observe(self, tip: np.ndarray) -> np.ndarray:
        if not self.config.observe_hole_estimate:
            return np.concatenate((self.engine.qpos, self.engine.qvel), axis=1)
        estimate = self._hole[:, :3] + self._estimate_error
        return np.concatenate((self.engine.qpos, self.engine.qvel, tip - estimate), axis=1)

    def _inserted(self, tip: np.ndarray) -> np.ndarray:
        """`(N,)` bool: the tip is `success_depth` below the mouth and within `HOLE_RADIUS` of the axis."""
        offset = tip - self._hole[:, :3]
        depth = -offset[:, 2]
        return (depth >= self.config.success_depth) & (np.hypot(offset[:, 0], offset[:, 1]) <= HOLE_RADIUS)

    def _goal(self) -> np.ndarray:
        return self._hole[:, :3] - np.array([0.0, 0.0, self.config.success_depth])


def _privileged_spec() -> SpaceSpec:
    """The critic's privileged observation: the peg tip minus the true hole's mouth centre, unbounded, m."""
    names = tuple(f"peg_tip_to_hole_{a}" for a in "xyz")
    return SpaceSpec(names, (-math.inf,) * 3, (math.inf,) * 3, ("m",) * 3)
