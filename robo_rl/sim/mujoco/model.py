"""The MJCF models bundled with robo_rl and the layout of MuJoCo's full-physics state vector.

A batched engine keeps one row per env of `mujoco.mj_getState(..., mjSTATE_FULLPHYSICS)`: time, qpos, qvel,
act, then history, plugin and plastic state (empty for the bundled models). `StateLayout` names its columns.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import mujoco
import numpy as np

FULL_PHYSICS = mujoco.mjtState.mjSTATE_FULLPHYSICS
"""State components a batched engine stores and restores per env (what `mj_step` needs to continue exactly)."""

ASSETS = ("arm_reach", "cartpole", "peg_insert")
"""Names of the bundled MJCF files (`assets/<name>.xml`)."""


def asset_path(name: str) -> Path:
    """Path of bundled MJCF file `name` (one of `ASSETS`)."""
    if name not in ASSETS:
        raise ValueError(f"unknown MuJoCo asset {name!r}; bundled assets: {list(ASSETS)}")
    return Path(str(resources.files("robo_rl.sim.mujoco") / "assets" / f"{name}.xml"))


def load_model(name: str) -> mujoco.MjModel:
    """Compile bundled MJCF file `name` into a fresh `MjModel` (callers may modify their copy)."""
    return mujoco.MjModel.from_xml_path(str(asset_path(name)))


@dataclass(frozen=True)
class StateLayout:
    """Column positions in a full-physics state row `(nstate,)`."""

    size: int
    """nstate: length of one row."""
    time: int
    """Column of the simulation time in s."""
    qpos: slice
    """Columns of the generalized positions `(nq,)`."""
    qvel: slice
    """Columns of the generalized velocities `(nv,)`."""
    act: slice
    """Columns of the actuator activations `(na,)`."""

    @classmethod
    def of(cls, model: mujoco.MjModel) -> StateLayout:
        """The layout for `model`; components are stored in the order of their `mjtState` bits."""
        time = mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_TIME)
        qpos_end = time + model.nq
        qvel_end = qpos_end + model.nv
        return cls(
            size=mujoco.mj_stateSize(model, FULL_PHYSICS),
            time=0,
            qpos=slice(time, qpos_end),
            qvel=slice(qpos_end, qvel_end),
            act=slice(qvel_end, qvel_end + model.na),
        )


def initial_state(model: mujoco.MjModel) -> np.ndarray:
    """Full-physics state `(nstate,)` of a freshly made `MjData`: time 0, qpos0, zero velocities and activations."""
    data = mujoco.MjData(model)
    state = np.empty(mujoco.mj_stateSize(model, FULL_PHYSICS))
    mujoco.mj_getState(model, data, state, FULL_PHYSICS)
    return state


def data_at(
    model: mujoco.MjModel, data: mujoco.MjData, state: np.ndarray, mocap_pos: np.ndarray | None = None
) -> mujoco.MjData:
    """Load full-physics `state` `(nstate,)` (and mocap body positions `(nmocap, 3)` in m) into `data`, then compute
    its derived quantities (body and site poses) with `mj_forward`."""
    mujoco.mj_setState(model, data, np.ascontiguousarray(state, dtype=np.float64), FULL_PHYSICS)
    if mocap_pos is not None:
        data.mocap_pos[:] = mocap_pos
    mujoco.mj_forward(model, data)
    return data
