"""MuJoCo backend throughput: env-steps/s of the batched MuJoCo tasks vs the same MJCF in Gymnasium.

Part 1 (tasks): `mujoco/cartpole_swingup` and `mujoco/arm_reach` (torque mode) at 1 ... 1024 envs, stepped by
robo_rl's batched backend (`mujoco.rollout` on `--threads` CPU threads; observations, rewards, auto-resets and
the torch conversion included), against a `gymnasium.envs.mujoco.MujocoEnv` subclass loading the very same XML
file with the same frame_skip and computing the same observation and reward, with as many copies in
Gymnasium's `SyncVectorEnv` (capped at `--gym-max-envs`; the rows above the cap have no Gymnasium number).
The JSON gives the ratio robo_rl / Gymnasium per batch size.

Part 2 (engines, `--engines`): physics only, the cart-pole model with 2 substeps per control step, at
1 ... 4096 envs: `mujoco.rollout` on the threads, `mujoco.rollout` on the calling thread, a Python loop of
`mj_step` over persistent `MjData`, and a Python thread pool over chunks of `MjData` (mj_step releases the
GIL). This is the measurement behind the choice of `mujoco.rollout` in `robo_rl.sim.mujoco.engine`.

Random actions within the action bounds, a warm-up, then `--seconds` of wall time per point.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import gymnasium
import mujoco
import mujoco.rollout
import numpy as np
import torch
from gymnasium.envs.mujoco.mujoco_env import MujocoEnv
from gymnasium.wrappers import TimeLimit
from machine import machine_info, warn_if_busy
from pendulum_steps import time_steps

from robo_rl.sim import make
from robo_rl.sim.mujoco import ArmReachConfig, CartpoleSwingupConfig, asset_path, load_model
from robo_rl.sim.mujoco.model import initial_state

RESULTS = Path(__file__).parent / "results" / "mujoco_steps.json"
BATCHES = (1, 16, 64, 256, 1024)
ENGINE_BATCHES = (1, 16, 64, 256, 1024, 4096)
ACTION_BATCHES = 16
"""Distinct random action batches cycled through while timing."""
CARTPOLE = CartpoleSwingupConfig()
ARM = ArmReachConfig()


class GymCartpole(MujocoEnv):
    """The cart-pole MJCF as a Gymnasium MujocoEnv: same frame_skip, observation and reward as the batched task."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 100}  # noqa: RUF012 (Gymnasium's class attribute)

    def __init__(self, config: CartpoleSwingupConfig = CARTPOLE) -> None:
        space = gymnasium.spaces.Box(-np.inf, np.inf, shape=(5,), dtype=np.float64)
        super().__init__(str(asset_path("cartpole")), config.frame_skip, observation_space=space)
        self.config = config
        self._max_force = float(self.model.actuator_ctrlrange[0, 1])

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self.do_simulation(action, self.frame_skip)
        (x, angle), rate = self.data.qpos, self.data.qvel[1]
        c = self.config
        reward = (
            (1 + np.cos(angle))
            / 2
            * (1 + np.exp(-((x / c.position_scale) ** 2)))
            / 2
            * (1 - c.control_weight * (float(action[0]) / self._max_force) ** 2)
            * (1 + np.exp(-((rate / c.angular_velocity_scale) ** 2)))
            / 2
        )
        return self._obs(), float(reward), False, False, {}

    def reset_model(self) -> np.ndarray:
        c = self.config
        qpos = self.np_random.uniform(-1, 1, 2) * (c.init_position_range, c.init_angle_range) + (0.0, np.pi)
        self.set_state(qpos, self.np_random.uniform(-c.init_velocity_range, c.init_velocity_range, 2))
        return self._obs()

    def _obs(self) -> np.ndarray:
        (x, angle), (velocity, rate) = self.data.qpos, self.data.qvel
        return np.array([x, np.cos(angle), np.sin(angle), velocity, rate])


class GymArmReach(MujocoEnv):
    """The arm MJCF as a Gymnasium MujocoEnv (torque mode): same frame_skip, observation and reward."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 50}  # noqa: RUF012 (Gymnasium's class attribute)

    def __init__(self, config: ArmReachConfig = ARM) -> None:
        space = gymnasium.spaces.Box(-np.inf, np.inf, shape=(14,), dtype=np.float64)
        super().__init__(str(asset_path("arm_reach")), config.frame_skip, observation_space=space)
        self.config = config
        self._site = self.model.site("end_effector").id
        self._torque_limit = self.model.actuator_ctrlrange[:, 1].copy()
        self._target = np.zeros(3)

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self.do_simulation(action, self.frame_skip)
        mujoco.mj_kinematics(self.model, self.data)  # site_xpos of the final state, as the batched task uses
        c = self.config
        distance = float(np.linalg.norm(self._target - self.data.site_xpos[self._site]))
        effort = float(((self.data.sensordata[:4] / self._torque_limit) ** 2).sum())
        bonus = c.success_bonus if distance <= c.success_distance else 0.0
        return self._obs(), -c.distance_weight * distance - c.control_weight * effort + bonus, False, False, {}

    def reset_model(self) -> np.ndarray:
        c = self.config
        home = np.asarray(c.home_pose)
        qpos = home + self.np_random.uniform(-c.init_joint_range, c.init_joint_range, 4)
        self.set_state(np.clip(qpos, *self.model.jnt_range.T), np.zeros(4))
        distance = self.np_random.uniform(*c.target_distance_range)
        elevation = self.np_random.uniform(*c.target_elevation_range)
        azimuth = self.np_random.uniform(-c.target_azimuth_range, c.target_azimuth_range)
        direction = np.array(
            [np.cos(elevation) * np.cos(azimuth), np.cos(elevation) * np.sin(azimuth), np.sin(elevation)]
        )
        self._target = np.array([0.0, 0.0, 0.3]) + distance * direction
        mujoco.mj_kinematics(self.model, self.data)
        return self._obs()

    def _obs(self) -> np.ndarray:
        to_target = self._target - self.data.site_xpos[self._site]
        return np.concatenate((self.data.qpos, self.data.qvel, self._target, to_target))


TASKS: dict[str, tuple[Callable[[], MujocoEnv], int]] = {
    "mujoco/cartpole_swingup": (GymCartpole, CARTPOLE.frame_skip),
    "mujoco/arm_reach": (GymArmReach, ARM.frame_skip),
}
"""Batched task name -> (its Gymnasium twin, frame_skip)."""


def bench_robo_rl(name: str, num_envs: int, threads: int, seconds: float) -> dict:
    env = make(name, num_envs, seed=0, num_threads=threads)
    low, high = env.action_spec.low_tensor(), env.action_spec.high_tensor()
    generator = torch.Generator().manual_seed(1)
    actions = [low + (high - low) * torch.rand(num_envs, low.shape[0], generator=generator) for _ in range(16)]
    count = itertools.count()

    def step() -> None:
        env.step(actions[next(count) % ACTION_BATCHES])

    result = time_steps(step, seconds, num_envs, lambda: None)
    result["engine_threads"] = env.engine.num_threads  # what the engine chose for this batch size
    env.close()
    return result


def bench_gymnasium(name: str, num_envs: int, seconds: float) -> dict:
    factory, _ = TASKS[name]
    limit = make(name, 1, seed=0).max_episode_steps
    envs = gymnasium.vector.SyncVectorEnv([lambda: TimeLimit(factory(), limit)] * num_envs)
    envs.reset(seed=0)
    rng = np.random.default_rng(1)
    space = envs.single_action_space
    actions = [rng.uniform(space.low, space.high, size=(num_envs, *space.shape)) for _ in range(ACTION_BATCHES)]
    count = itertools.count()

    def step() -> None:
        envs.step(actions[next(count) % ACTION_BATCHES])

    result = time_steps(step, seconds, num_envs, lambda: None)
    envs.close()
    return result


def task_rows(batches: list[int], threads: int, seconds: float, gym_max_envs: int) -> list[dict]:
    rows = []
    print(f"{'task':<26}{'envs':>6}{'robo_rl env-steps/s':>22}{'gymnasium env-steps/s':>24}{'ratio':>8}")
    for name in TASKS:
        for n in batches:
            ours = bench_robo_rl(name, n, threads, seconds)
            theirs = bench_gymnasium(name, n, seconds) if n <= gym_max_envs else None
            ratio = ours["env_steps_per_s"] / theirs["env_steps_per_s"] if theirs else None
            rows.append({"task": name, "num_envs": n, "robo_rl": ours, "gymnasium": theirs, "ratio": ratio})
            gym_text = f"{theirs['env_steps_per_s']:>24,.0f}" if theirs else f"{'(over cap)':>24}"
            ratio_text = f"{ratio:>8.1f}" if ratio else f"{'':>8}"
            print(f"{name:<26}{n:>6}{ours['env_steps_per_s']:>22,.0f}{gym_text}{ratio_text}", flush=True)
    return rows


def engine_steppers(num_envs: int, threads: int) -> dict[str, Callable[[], None]]:
    """Physics-only steppers of the cart-pole (2 substeps, random force), one per stepping strategy."""
    model, frame_skip = load_model("cartpole"), 2
    rng = np.random.default_rng(0)
    ctrl = rng.uniform(-10.0, 10.0, size=(num_envs, frame_skip, model.nu))
    start = np.tile(initial_state(model), (num_envs, 1))
    trajectory = np.empty((num_envs, frame_skip, start.shape[1]))
    models = [model] * num_envs

    def rollout_step(pool: mujoco.rollout.Rollout, datas: list[mujoco.MjData], state: np.ndarray) -> None:
        pool.rollout(models, datas, state, ctrl, nstep=frame_skip, state=trajectory, skip_checks=True)
        state[:] = trajectory[:, -1]

    threaded = mujoco.rollout.Rollout(nthread=threads)
    threaded_datas = [mujoco.MjData(model) for _ in range(threads)]
    inline = mujoco.rollout.Rollout(nthread=0)
    inline_datas = [mujoco.MjData(model)]
    states = [start.copy(), start.copy()]
    datas = [mujoco.MjData(model) for _ in range(num_envs)]
    qpos, qvel = np.zeros((num_envs, model.nq)), np.zeros((num_envs, model.nv))

    def loop(lo: int = 0, hi: int = num_envs) -> None:
        for i in range(lo, hi):
            data = datas[i]
            data.ctrl[:] = ctrl[i, 0]
            mujoco.mj_step(model, data, frame_skip)
            qpos[i], qvel[i] = data.qpos, data.qvel

    executor = ThreadPoolExecutor(threads)
    bounds = np.linspace(0, num_envs, threads + 1).astype(int)
    chunks = list(itertools.pairwise(bounds))

    def pooled() -> None:
        list(executor.map(lambda chunk: loop(*chunk), chunks))

    return {
        f"rollout ({threads} threads)": lambda: rollout_step(threaded, threaded_datas, states[0]),
        "rollout (calling thread)": lambda: rollout_step(inline, inline_datas, states[1]),
        "mj_step loop": loop,
        f"thread pool ({threads} threads) of mj_step": pooled,
    }


def engine_rows(batches: list[int], threads: int, seconds: float) -> list[dict]:
    rows = []
    print(f"\n{'engine (cart-pole physics only)':<40}{'envs':>6}{'env-steps/s':>14}")
    for n in batches:
        for name, step in engine_steppers(n, threads).items():
            result = time_steps(step, seconds, n, lambda: None)
            rows.append({"engine": name, **result})
            print(f"{name:<40}{n:>6}{result['env_steps_per_s']:>14,.0f}", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=2.0, help="measured wall time per point (s)")
    parser.add_argument("--threads", type=int, default=2, help="physics threads, and torch threads (default 2)")
    parser.add_argument("--batches", type=int, nargs="+", default=BATCHES, help="numbers of envs (tasks)")
    parser.add_argument("--gym-max-envs", type=int, default=256, help="largest Gymnasium SyncVectorEnv timed")
    parser.add_argument("--engines", action="store_true", help="also time the stepping strategies (part 2)")
    parser.add_argument("--engine-batches", type=int, nargs="+", default=ENGINE_BATCHES, help="envs (engines)")
    parser.add_argument("--output", type=Path, default=RESULTS, help="JSON results path")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    load = warn_if_busy()
    report: dict[str, Any] = {
        "command": " ".join([sys.executable, *sys.argv]),
        "machine": machine_info(),
        "mujoco": mujoco.__version__,
        "load_average_at_start": load,
        "tasks": task_rows(args.batches, args.threads, args.seconds, args.gym_max_envs),
    }
    if args.engines:
        report["engines"] = engine_rows(args.engine_batches, args.threads, args.seconds)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
