"""Contact checks of mujoco/peg_insert's model, with MuJoCo's native convex collider and with the older MPR one.

For each collider, on one MjData at the task's servos (kp 30, kd 3), each control step 0.1 s:
- on the axis: the peg lowered 40 mm by servo targets (1 mm steps): how deep it goes, the deepest contact penetration;
- 3 mm off the axis: the same descent; where it rests, the largest normal force, the deepest penetration;
- the search move: 4.6 mm off the axis, pressed by a vertical force at the tip (the expert's press, about 1.5 N),
  then four moves of 1.2 mm sideways 0.3 mm above the surface, each followed by a press: how far the peg moved.
  With the native collider the peg pressed at the mouth's plane, partly over the hole, gets contacts with opposite
  normals (some pulling it down), and it cannot move; with MPR it slides as asked.
- speed: env-steps/s of PegInsert with 64 envs, one thread, every peg pressed on the block.

Usage: `python bench/peg_contacts.py`; results in bench/results/peg_contacts.json.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import torch
from machine import machine_info

from robo_rl.sim.mujoco.arm_reach import use_position_servos
from robo_rl.sim.mujoco.model import load_model
from robo_rl.sim.mujoco.peg_expert import vertical_jacobian
from robo_rl.sim.mujoco.peg_insert import PegInsert, PegInsertConfig, peg_down_ik

RESULTS = Path(__file__).parent / "results" / "peg_contacts.json"
HOLE = np.array([0.40, 0.0, 0.10])


class Arm:
    """One MjData of the peg model with the hole at HOLE; control steps of 0.1 s toward joint targets."""

    def __init__(self, native: bool, start: np.ndarray) -> None:
        self.model = load_model("peg_insert")
        use_position_servos(self.model, 30.0, 3.0)
        flag = int(mujoco.mjtDisableBit.mjDSBL_NATIVECCD)
        self.model.opt.disableflags = (self.model.opt.disableflags & ~flag) | (0 if native else flag)
        self.data = mujoco.MjData(self.model)
        self.data.mocap_pos[0] = HOLE
        self.data.qpos[:4] = self.data.ctrl[:] = peg_down_ik((HOLE + start)[None])[0]
        mujoco.mj_forward(self.model, self.data)
        self.tip_id = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_SITE, "peg_tip")
        self.deepest = 0.0
        self.largest_force = 0.0

    def tip(self) -> np.ndarray:
        """Tip position relative to the mouth's centre in m."""
        return self.data.site_xpos[self.tip_id] - HOLE

    def step(self, joint_step: np.ndarray) -> None:
        self.data.ctrl[:] = self.data.qpos[:4] + np.clip(joint_step, -0.05, 0.05)
        force = np.zeros(6)
        for _ in range(50):
            mujoco.mj_step(self.model, self.data)
            for i in range(self.data.ncon):
                self.deepest = max(self.deepest, -float(self.data.contact[i].dist))
                mujoco.mj_contactForce(self.model, self.data, i, force)
                self.largest_force = max(self.largest_force, float(force[0]))

    def go(self, relative: np.ndarray) -> None:
        self.step(peg_down_ik((HOLE + relative)[None])[0] - self.data.qpos[:4])

    def press(self) -> None:
        self.step(-0.05 * vertical_jacobian(self.data.qpos[None, :4])[0])


def descent(native: bool, off_axis: float) -> dict[str, float]:
    arm = Arm(native, np.array([off_axis, 0.0, 0.01]))
    for k in range(40):
        arm.go(np.array([off_axis, 0.0, 0.01 - 0.001 * (k + 1)]))
    tip = arm.tip()
    return {
        "tip_height_mm": round(1000 * tip[2], 3),
        "slid_mm": round(1000 * float(np.hypot(tip[0] - off_axis, tip[1])), 3),
        "deepest_penetration_mm": round(1000 * arm.deepest, 4),
        "largest_normal_force_n": round(arm.largest_force, 2),
    }


def search_moves(native: bool) -> dict[str, float]:
    arm = Arm(native, np.array([0.0046, 0.0, 0.003]))
    for k in range(3):
        arm.go(np.array([0.0046, 0.0, 0.003 - 0.0012 * (k + 1)]))
    arm.press()
    start = arm.tip().copy()
    for _ in range(4):
        tip = arm.tip()
        arm.go(np.array([tip[0], tip[1] + 0.0012, 0.0003]))
        arm.press()
    return {"asked_mm": 4.8, "moved_mm": round(1000 * float(np.linalg.norm(arm.tip()[:2] - start[:2])), 3)}


def speed(native: bool, steps: int = 100) -> float:
    """Env-steps/s of 64 envs pressing their pegs on the block (one thread)."""
    env = PegInsert(64, config=PegInsertConfig(num_threads=1, start_height_range=(0.0, 0.0)), seed=0)
    flag = int(mujoco.mjtDisableBit.mjDSBL_NATIVECCD)
    env.model.opt.disableflags = (env.model.opt.disableflags & ~flag) | (0 if native else flag)
    press = torch.zeros(64, 4)
    for _ in range(5):
        press[:] = torch.from_numpy(-0.05 * vertical_jacobian(env.engine.qpos)).float()
        env.step(press)
    start = time.perf_counter()
    for _ in range(steps):
        press[:] = torch.from_numpy(-0.05 * vertical_jacobian(env.engine.qpos)).float()
        env.step(press)
    rate = 64 * steps / (time.perf_counter() - start)
    env.close()
    return round(rate)


def main() -> None:
    results: dict[str, Any] = {"machine": machine_info()}
    for name, native in (("native", True), ("mpr", False)):
        results[name] = {
            "on_axis": descent(native, 0.0),
            "off_axis_3mm": descent(native, 0.003),
            "search_moves": search_moves(native),
            "env_steps_per_s_pressed_64": speed(native),
        }
        print(name, json.dumps(results[name]))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
