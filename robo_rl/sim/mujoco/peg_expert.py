"""A simulated operator for peg insertion: it sees what the policy sees and searches for the hole as a person would.

`PegSearchExpert` is the `Expert` (robo_rl.hil.simulated) of `mujoco/peg_insert`. Its actions use only what the
policy observes: the measured joint angles (through the arm's kinematics, as the robot's own forward kinematics
would) and the noisy hole estimate. So its demonstrations show a strategy a policy can learn from the same
observation, not a path to a hole it cannot see. The strategy is what a person does with a peg and a hole they
only roughly know: bring the peg over the estimate, put it down on the surface, then press lightly while sliding
it along an outward spiral about the estimate until it drops in, then push it home. The spiral is a vector field of
the position relative to the estimate (tangential speed plus a slow outward drift, Archimedean: one pitch per
turn), so it needs no memory and a policy can represent it.

When it steps in is another matter: a person watching the arm sees where the hole really is, so `unsafe` (take
over) and `recovered` (hand back) read the true hole. The policy is heading wrong when the peg is low and scraping
the block away from the mouth, has not got in `patience` steps into the episode, or leaves (rises high or strays
sideways); it is back on track once the peg is in the hole.

Measured (64 envs, seed 0, the task's defaults: ±2 cm / ±10° holes, 2 mm estimate noise, 15 s): the expert alone
inserts 49 of 64 (77 %), a median 4.7 s into the episode; the scripted straight-down inserter aimed at the same
estimate inserts 12 of 64 (tests/sim/mujoco/test_peg_insert.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch

from robo_rl.sim.mujoco.peg_insert import HOLE_RADIUS, LINKS, WRIST_TO_TIP, peg_down_ik


@dataclass(frozen=True)
class PegSearchConfig:
    """The search's moves and spiral, and when the operator takes over and hands back (all in m)."""

    approach_height: float = 0.004
    """The peg first goes to this height above the estimated mouth, over the estimate..."""
    approach_speed: float = 0.01
    """...moving its tip at most this far per control step."""
    over_estimate: float = 0.0015
    """Within this of that point the approach ends and the peg goes straight down to find the surface..."""
    descend_step: float = 0.001
    """...this far per step; the surface is where the tip stops going down (under a third of a step since the last
    one; the servos lag a commanded step, so "short of the target" would find surfaces in mid-air)."""
    press_step: float = 0.05
    """The search alternates a press (the joint step press_step * the tip's vertical Jacobian row: a vertical force
    at the tip of about position_kp * press_step N, 1.5 N with the task's servos; over the hole the peg drops in)..."""
    lift: float = 0.0003
    """...with a sideways move this far above the surface (a pressed peg sticks)."""
    search_step: float = 0.0012
    """Sideways move per search move along the spiral (the tip's catch area is the 1 mm radial clearance)."""
    spiral_pitch: float = 0.0009
    """Radial growth of the spiral per turn."""
    search_radius: float = 0.006
    """Beyond this distance from the estimate the search turns back inward (3 sigma of a 2 mm estimate error)."""
    inserted_depth: float = 0.0008
    """Below the surface by more than this, the peg is in the hole: straight down only..."""
    insert_step: float = 0.003
    """...this far per step."""
    lost: float = 0.005
    """A tip farther than this from the last commanded point (a new episode, or the policy drove) starts over."""
    low: float = 0.01
    """The operator judges the policy where the tip is lower than this above the true mouth (about to touch)..."""
    unsafe_distance: float = 0.008
    """...taking over when it is farther than this from the true axis there (scraping the block off the mouth)..."""
    patience: int = 60
    """...or the peg has not got into the hole for this many steps of the episode (6 s: getting nowhere)..."""
    unsafe_height: float = 0.1
    """...or anywhere when it rises above this over the mouth or strays `unsafe_lateral` sideways (leaving)."""
    unsafe_lateral: float = 0.06
    recovered_depth: float = 0.012
    """Hand back once the tip is this far down in the hole (of the 20 mm that succeed): handed back over the mouth
    or 3 mm in, the untrained policy pulled the peg out again and no training episode succeeded."""


class _Joints(Protocol):
    @property
    def qpos(self) -> np.ndarray: ...


class _StepBound(Protocol):
    @property
    def max_joint_step(self) -> float: ...


class PegScene(Protocol):
    """What `PegSearchExpert` reads: a `PegInsert`, or the arm's topics through robo_rl.sim.mujoco.peg_view."""

    @property
    def engine(self) -> _Joints: ...
    @property
    def config(self) -> _StepBound: ...
    @property
    def num_envs(self) -> int: ...
    @property
    def device(self) -> torch.device | str: ...
    def peg_tip_position(self) -> torch.Tensor: ...
    def hole_estimate(self) -> torch.Tensor: ...
    def hole_pose(self) -> torch.Tensor: ...


APPROACH, DESCEND, PRESS, MOVE, INSERT = range(5)
"""The expert's phases per env."""


class PegSearchExpert:
    """`Expert` for PegInsert: approach, find the surface, spiral search by pecking, insert.

    Moves are tip targets turned into joint steps by the closed-form peg-down inverse kinematics (`peg_down_ik`).
    A press is a joint step along the transpose of the tip's vertical Jacobian row: with the same stiffness on every
    joint's servo that is a purely vertical force at the tip. (A press toward a point below the surface instead
    pushes the peg sideways too, and it slides off over the block.) What it remembers per env is what a person
    would: the phase, the height where the peg met the surface, and the point it commanded last (to tell whether the
    peg followed).
    """

    def __init__(self, env: PegScene, config: PegSearchConfig = PegSearchConfig()) -> None:
        self.env, self.config = env, config
        n = env.num_envs
        self._phase = np.full(n, APPROACH)
        self._surface = np.zeros(n)
        self._target = np.full((n, 3), np.nan)
        self._last_tip = np.full((n, 3), np.nan)
        self._out_for = np.zeros(n, dtype=np.int64)

    def action(self) -> torch.Tensor:
        """`(N, 4)` joint steps in rad for this step, within the task's action bounds."""
        qpos = self.env.engine.qpos
        tip = self.env.peg_tip_position().numpy()
        relative = tip - self.env.hole_estimate().numpy()
        self._advance(tip, relative)
        target = self._targets(tip, relative)
        step = peg_down_ik(target) - qpos
        pressing = self._phase == PRESS
        step[pressing] = -self.config.press_step * vertical_jacobian(qpos[pressing])
        self._target = np.where(pressing[:, None], tip, target)
        self._last_tip = tip
        limit = self.env.config.max_joint_step
        return torch.from_numpy(np.clip(step, -limit, limit)).to(self.env.device, torch.float32)

    def unsafe(self) -> torch.Tensor:
        """`(N,)` bool: the policy is heading wrong, as a person watching the arm and the real hole would judge.
        Call it once per step (robo_rl.hil.simulated does): it counts the steps each peg has been out of the hole."""
        off_axis, height = self._true_offsets()
        c = self.config
        low = height < c.low
        inside = (off_axis < HOLE_RADIUS) & (height < 0)
        self._out_for = np.where(inside, 0, self._out_for + 1)
        scraping = low & ~inside & (off_axis > c.unsafe_distance)
        leaving = (height > c.unsafe_height) | (off_axis > c.unsafe_lateral)
        return torch.from_numpy(scraping | leaving | (self._out_for > c.patience)).to(self.env.device)

    def episode_reset(self, done: torch.Tensor) -> None:
        """Envs `done` start new episodes (robo_rl.hil.simulated calls this): their patience starts over."""
        self._out_for[done.cpu().numpy()] = 0

    def recovered(self) -> torch.Tensor:
        """`(N,)` bool: the peg is in the hole (`recovered_depth` down); the operator may hand back."""
        off_axis, height = self._true_offsets()
        inside = (off_axis < HOLE_RADIUS) & (height < -self.config.recovered_depth)
        return torch.from_numpy(inside).to(self.env.device)

    def _true_offsets(self) -> tuple[np.ndarray, np.ndarray]:
        """The tip's distance from the true hole axis and its height above the true mouth, `(N,)` m each."""
        offset = self.env.peg_tip_position().numpy() - self.env.hole_pose().numpy()[:, :3]
        return np.hypot(offset[:, 0], offset[:, 1]), offset[:, 2]

    def _advance(self, tip: np.ndarray, relative: np.ndarray) -> None:
        """Move each env's phase on from what the last step did."""
        c, phase = self.config, self._phase
        lost = ~(np.linalg.norm(tip - self._target, axis=1) <= c.lost)  # NaN: nothing commanded yet
        was = phase.copy()
        aligned = np.linalg.norm(relative - (0.0, 0.0, c.approach_height), axis=1) <= c.over_estimate
        phase[(was == APPROACH) & aligned] = DESCEND
        stopped = (was == DESCEND) & (self._last_tip[:, 2] - tip[:, 2] < c.descend_step / 3)
        pressed = was == PRESS
        dropped = pressed & (tip[:, 2] < self._surface - c.inserted_depth)
        self._surface = np.where(stopped | (pressed & ~dropped), tip[:, 2], self._surface)
        phase[stopped] = PRESS
        phase[pressed] = np.where(dropped[pressed], INSERT, MOVE)
        phase[was == MOVE] = PRESS
        far = np.linalg.norm(relative[:, :2], axis=1) > c.search_radius + c.unsafe_distance
        phase[lost | (far & (phase != INSERT))] = APPROACH

    def _targets(self, tip: np.ndarray, relative: np.ndarray) -> np.ndarray:
        """The tip's target `(N, 3)` m (world) of the phases that move to a point."""
        c, phase = self.config, self._phase
        target = tip.copy()
        approach = phase == APPROACH
        target[approach] += _limited((0.0, 0.0, c.approach_height) - relative[approach], c.approach_speed)
        descend = phase == DESCEND
        target[descend, :2] -= relative[descend, :2]  # centred over the estimate on the way down
        target[descend, 2] -= c.descend_step
        move = phase == MOVE
        target[move, :2] += _spiral(relative[move, :2], c)
        target[move, 2] = self._surface[move] + c.lift
        target[phase == INSERT, 2] -= c.insert_step
        return target


def vertical_jacobian(qpos: np.ndarray) -> np.ndarray:
    """`(N, 4)` d(tip height)/d(joint angles) of the peg-down arm at `qpos` `(N, 4)` rad: yaw does not lift the tip;
    a pitch joint lifts it by the horizontal distance from its axis to the tip (pitches about parallel axes)."""
    _, shoulder, elbow, wrist = qpos.T
    upper, fore = LINKS
    from_wrist = WRIST_TO_TIP * np.cos(shoulder + elbow + wrist)
    from_elbow = fore * np.cos(shoulder + elbow) + from_wrist
    from_shoulder = upper * np.cos(shoulder) + from_elbow
    return np.stack((np.zeros_like(shoulder), from_shoulder, from_elbow, from_wrist), axis=1)


def _spiral(xy: np.ndarray, c: PegSearchConfig) -> np.ndarray:
    """Archimedean spiral field about the estimate `(N, 2)` → `(N, 2)` m: `search_step` along the tangent
    (counter-clockwise) with an outward drift of one `spiral_pitch` per turn; past `search_radius` it drifts in."""
    distance = np.linalg.norm(xy, axis=1)
    radius = np.maximum(distance, 0.25 * c.spiral_pitch)
    radial = xy / radius[:, None]
    radial[distance == 0] = (1.0, 0.0)
    tangent = np.stack((-radial[:, 1], radial[:, 0]), axis=1)
    drift = np.minimum(c.spiral_pitch * c.search_step / (2 * math.pi * radius), c.search_step)
    drift = np.where(distance > c.search_radius, -c.search_step, drift)
    return c.search_step * tangent + drift[:, None] * radial


def _limited(move: np.ndarray, largest: float) -> np.ndarray:
    norm = np.linalg.norm(move, axis=1, keepdims=True)
    return move * np.minimum(1.0, largest / np.maximum(norm, 1e-12))
