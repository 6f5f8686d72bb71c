"""Batched MuJoCo stepping: `num_envs` copies of one `MjModel`, advanced together by `mujoco.rollout`.

The state of every env is one row of a `(num_envs, nstate)` float64 array (MuJoCo's full-physics state, see
`robo_rl.sim.mujoco.model.StateLayout`). One control step hands all rows to `mujoco.rollout.Rollout`, which runs
`frame_skip` calls of `mj_step` per env in C++ on a persistent thread pool with the GIL released, so there is no
Python loop over envs. Each control step starts from the stored state, exactly as a persistent `MjData` would
continue (the solver's warm start is the only thing not carried over; it changes results by rounding only).

Measured here (2-core CPU, cart-pole physics with 2 substeps per control step, `bench/mujoco_steps.py
--engines`): at 256-4096 envs `mujoco.rollout` on the calling thread stepped 1.2-2.4x as many envs per second as
a Python loop of `mj_step` over persistent `MjData` (about 230-290k vs 110-220k env-steps/s), a second rollout
thread added up to 1.6-1.9x more while the other core was free (330-550k), and a Python thread pool over chunks of
`MjData` was the slowest (its per-env Python work holds the GIL). Below `MIN_ENVS_PER_THREAD` envs per thread
the pool's hand-off costs more than it saves, so small batches step on the calling thread.
"""

from __future__ import annotations

import weakref
from typing import Literal, Protocol

import mujoco
import mujoco.rollout
import numpy as np

from robo_rl.sim.mujoco.model import StateLayout, data_at, initial_state

Backend = Literal["rollout", "mjx"]
BACKENDS: tuple[Backend, ...] = ("rollout", "mjx")
"""Physics backends: "rollout" (MuJoCo C on CPU threads, the default) or "mjx" (MJX on JAX, optional)."""

MIN_ENVS_PER_THREAD = 128
"""Batches smaller than this many envs per thread step on the calling thread."""


class PhysicsEngine(Protocol):
    """What a task needs from a batched physics backend; arrays are numpy, rows are envs.

    Attributes:
        model: the compiled model every env shares.
        num_envs: number of copies N.
        frame_skip: `mj_step` calls per control step.
        layout: columns of a full-physics state row.
    """

    model: mujoco.MjModel
    num_envs: int
    frame_skip: int
    layout: StateLayout

    @property
    def qpos(self) -> np.ndarray:
        """`(N, nq)` generalized positions after the last step (read-only use)."""
        ...

    @property
    def qvel(self) -> np.ndarray:
        """`(N, nv)` generalized velocities after the last step (read-only use)."""
        ...

    @property
    def sensordata(self) -> np.ndarray:
        """`(N, nsensordata)` sensor values computed during the last `mj_step` of the last control step."""
        ...

    def step(self, ctrl: np.ndarray) -> None:
        """Hold controls `(N, nu)` for `frame_skip` physics steps of every env."""
        ...

    def reset(self, index: np.ndarray, qpos: np.ndarray, qvel: np.ndarray) -> None:
        """Restart envs `index` `(k,)` from the model's initial state with `qpos` `(k, nq)`, `qvel` `(k, nv)`."""
        ...

    def full_state(self) -> np.ndarray:
        """`(N, nstate)` copy of the full-physics state of every env."""
        ...

    def load_full_state(self, state: np.ndarray) -> None:
        """Overwrite every env's full-physics state with `state` `(N, nstate)`."""
        ...

    def close(self) -> None:
        """Release threads or devices; the engine cannot step afterwards."""
        ...


_CONTROL_AND_MOCAP = int(
    mujoco.mjtState.mjSTATE_CTRL | mujoco.mjtState.mjSTATE_MOCAP_POS | mujoco.mjtState.mjSTATE_MOCAP_QUAT
)
"""Per-step inputs of an engine with per-env mocap poses: controls, then mocap positions, then quaternions."""


class RolloutEngine:
    """`num_envs` copies of `model` stepped together on CPU threads by `mujoco.rollout` (see the module doc)."""

    def __init__(
        self, model: mujoco.MjModel, num_envs: int, frame_skip: int, num_threads: int = 2, mocap: bool = False
    ) -> None:
        """`num_threads` worker threads (0 or 1: the calling thread; also used below `MIN_ENVS_PER_THREAD`).

        `mocap` True: every env has its own mocap body poses, `mocap_pos` `(N, nmocap, 3)` m and `mocap_quat`
        `(N, nmocap, 4)` (initially the model's), which the task writes and `step` hands to `mujoco.rollout` with the
        controls (mocap poses are not part of the full-physics state, so the task keeps them for its checkpoints).
        """
        if num_envs < 1 or frame_skip < 1 or num_threads < 0:
            raise ValueError(
                f"RolloutEngine needs num_envs >= 1, frame_skip >= 1, num_threads >= 0; "
                f"got {num_envs}, {frame_skip}, {num_threads}"
            )
        self.model, self.num_envs, self.frame_skip = model, num_envs, frame_skip
        self.layout = StateLayout.of(model)
        self.num_threads = num_threads if num_threads > 1 and num_envs >= MIN_ENVS_PER_THREAD * num_threads else 0
        self._rollout = mujoco.rollout.Rollout(nthread=self.num_threads)
        self._close = weakref.finalize(self, self._rollout.close)
        self._scratch = [mujoco.MjData(model) for _ in range(max(1, self.num_threads))]
        self._models = [model] * num_envs
        self._initial = initial_state(model)
        self._state = np.tile(self._initial, (num_envs, 1))
        # Preallocated rollout buffers: controls held over the substeps, and the states/sensors they produce.
        self.mocap_pos = np.tile(model.body_pos[model.body_mocapid >= 0], (num_envs, 1, 1))
        self.mocap_quat = np.tile(model.body_quat[model.body_mocapid >= 0], (num_envs, 1, 1))
        self._mocap = mocap and model.nmocap > 0
        self._control_spec = _CONTROL_AND_MOCAP if self._mocap else int(mujoco.mjtState.mjSTATE_CTRL)
        self._control = np.zeros((num_envs, frame_skip, model.nu + (7 * model.nmocap if self._mocap else 0)))
        self._trajectory = np.empty((num_envs, frame_skip, self.layout.size))
        self._sensor_trajectory = np.empty((num_envs, frame_skip, model.nsensordata)) if model.nsensordata else None
        self._sensordata = np.zeros((num_envs, model.nsensordata))

    @property
    def qpos(self) -> np.ndarray:
        return self._state[:, self.layout.qpos]

    @property
    def qvel(self) -> np.ndarray:
        return self._state[:, self.layout.qvel]

    @property
    def sensordata(self) -> np.ndarray:
        return self._sensordata

    def step(self, ctrl: np.ndarray) -> None:
        """Hold controls `(N, nu)` (in the actuators' units) for `frame_skip` physics steps of every env."""
        nu = self.model.nu
        self._control[:, :, :nu] = np.asarray(ctrl, dtype=np.float64).reshape(self.num_envs, 1, nu)
        if self._mocap:
            pos_end = nu + 3 * self.model.nmocap
            self._control[:, :, nu:pos_end] = self.mocap_pos.reshape(self.num_envs, 1, -1)
            self._control[:, :, pos_end:] = self.mocap_quat.reshape(self.num_envs, 1, -1)
        # skip_checks: the buffers above have the shapes rollout expects; its per-call checks cost ~10 us.
        self._rollout.rollout(
            self._models,
            self._scratch,
            self._state,
            self._control,
            control_spec=self._control_spec,
            nstep=self.frame_skip,
            state=self._trajectory,
            sensordata=self._sensor_trajectory,
            skip_checks=True,
        )
        self._state[:] = self._trajectory[:, -1]
        if self._sensor_trajectory is not None:
            self._sensordata[:] = self._sensor_trajectory[:, -1]

    def sensor_peak(self, column: int) -> np.ndarray:
        """`(N,)` the largest value of sensor data column `column` over the physics steps of the last control step (a
        contact force's peak, which the last step's value alone can miss)."""
        if self._sensor_trajectory is None:
            raise ValueError("the model has no sensors")
        peak: np.ndarray = self._sensor_trajectory[:, :, column].max(axis=1)
        return peak

    def reset(self, index: np.ndarray, qpos: np.ndarray, qvel: np.ndarray) -> None:
        self._state[index] = self._initial
        self._state[index, self.layout.qpos] = qpos
        self._state[index, self.layout.qvel] = qvel
        self._sensordata[index] = 0.0

    def full_state(self) -> np.ndarray:
        return self._state.copy()

    def load_full_state(self, state: np.ndarray) -> None:
        self._state[:] = np.asarray(state, dtype=np.float64).reshape(self._state.shape)

    def close(self) -> None:
        self._close()  # shuts the thread pool down once, here or when the engine is garbage-collected


def make_engine(
    model: mujoco.MjModel, num_envs: int, frame_skip: int, backend: Backend = "rollout", num_threads: int = 2
) -> PhysicsEngine:
    """The batched engine for `backend`; "mjx" raises ImportError naming the packages when JAX/MJX are missing."""
    if backend == "rollout":
        return RolloutEngine(model, num_envs, frame_skip, num_threads)
    if backend == "mjx":
        from robo_rl.sim.mujoco.mjx_engine import MjxEngine

        return MjxEngine(model, num_envs, frame_skip)
    raise ValueError(f"unknown physics backend {backend!r}; choose one of {BACKENDS}")


def snapshot(engine: PhysicsEngine, index: int, data: mujoco.MjData, mocap_pos: np.ndarray | None = None) -> None:
    """Load env `index` of `engine` into `data` (with mocap positions `(nmocap, 3)` m) and run `mj_forward`."""
    data_at(engine.model, data, engine.full_state()[index], mocap_pos)
