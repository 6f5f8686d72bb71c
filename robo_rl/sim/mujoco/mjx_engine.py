"""Optional MJX backend: the same batched engine interface, stepped by MJX (MuJoCo in JAX) with `jax.vmap`.

Needs `jax` and `mujoco-mjx`, which robo_rl does not depend on (install them yourself); without them building
an `MjxEngine` raises ImportError. One jitted function advances every env by `frame_skip` `mjx.step` calls; it
runs on JAX's default device (a GPU when JAX has one). Arrays cross to numpy after every step (the tasks'
observation and reward code is shared with the CPU backend); with JAX on a GPU that copy, not the physics,
bounds the throughput at small batches.

Differences from the "rollout" backend: JAX computes in float32 unless `jax_enable_x64` is set, so trajectories
agree to about 1e-4 after a second of simulation, not bit for bit. And while a position servo's force is clipped at
its force limit (`ArmReach` "position" mode with large angle errors), MuJoCo's implicitfast integrator drops the
servo's damping from its implicit step but MJX keeps it, so saturated motions are slower under MJX.
Checked with jax 0.10.2, mujoco 4.0.0 and mujoco-mjx 3.17.0 on the CPU.
"""

from __future__ import annotations

from typing import Any

import mujoco
import numpy as np

from robo_rl.sim.mujoco.model import StateLayout


def import_mjx() -> tuple[Any, Any, Any]:
    """`(jax, jax.numpy, mujoco.mjx)`, or ImportError saying what to install."""
    try:
        import jax
        import jax.numpy as jnp
        from mujoco import mjx
    except ImportError as err:
        raise ImportError(
            f"the 'mjx' physics backend needs jax and mujoco-mjx (pip install jax mujoco-mjx), which are not "
            f"installed or do not import: {err}"
        ) from err
    return jax, jnp, mjx


class MjxEngine:
    """`num_envs` copies of `model` as one batched `mjx.Data`, stepped by a jitted, vmapped `mjx.step` loop.

    Implements `robo_rl.sim.mujoco.engine.PhysicsEngine`. Full-physics state rows hold time, qpos, qvel and act
    (models with history, plugin or plastic state are refused).
    """

    def __init__(self, model: mujoco.MjModel, num_envs: int, frame_skip: int) -> None:
        jax, jnp, mjx = import_mjx()
        if num_envs < 1 or frame_skip < 1:
            raise ValueError(f"MjxEngine needs num_envs >= 1 and frame_skip >= 1, got {num_envs}, {frame_skip}")
        self.model, self.num_envs, self.frame_skip = model, num_envs, frame_skip
        self.layout = StateLayout.of(model)
        if self.layout.act.stop != self.layout.size:
            raise ValueError("MjxEngine supports models whose full-physics state is time, qpos, qvel and act only")
        self._jnp = jnp
        mjx_model = mjx.put_model(model)
        single = mjx.put_data(model, mujoco.MjData(model))
        self._initial = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (num_envs, *x.shape)), single)
        self._data = self._initial

        def control_step(data: Any, ctrl: Any) -> Any:
            data = data.replace(ctrl=ctrl)
            return jax.lax.fori_loop(0, frame_skip, lambda _, d: mjx.step(mjx_model, d), data)

        def restart(data: Any, mask: Any, qpos: Any, qvel: Any) -> Any:
            def pick(fresh: Any, current: Any) -> Any:
                return jnp.where(mask.reshape(-1, *([1] * (current.ndim - 1))), fresh, current)

            data = jax.tree_util.tree_map(pick, self._initial, data)
            return data.replace(qpos=pick(qpos, data.qpos), qvel=pick(qvel, data.qvel))

        self._step = jax.jit(jax.vmap(control_step))
        self._restart = jax.jit(restart)
        self._cache()

    def _cache(self) -> None:
        # One device-to-host copy per step of what the tasks read.
        self._qpos = np.asarray(self._data.qpos, dtype=np.float64)
        self._qvel = np.asarray(self._data.qvel, dtype=np.float64)
        self._sensordata = np.asarray(self._data.sensordata, dtype=np.float64).reshape(self.num_envs, -1)

    @property
    def qpos(self) -> np.ndarray:
        return self._qpos

    @property
    def qvel(self) -> np.ndarray:
        return self._qvel

    @property
    def sensordata(self) -> np.ndarray:
        return self._sensordata

    def step(self, ctrl: np.ndarray) -> None:
        """Hold controls `(N, nu)` for `frame_skip` physics steps of every env."""
        ctrl = self._jnp.asarray(np.asarray(ctrl, dtype=np.float32).reshape(self.num_envs, self.model.nu))
        self._data = self._step(self._data, ctrl)
        self._cache()

    def reset(self, index: np.ndarray, qpos: np.ndarray, qvel: np.ndarray) -> None:
        mask = np.zeros(self.num_envs, dtype=bool)
        mask[index] = True
        full_qpos, full_qvel = self._qpos.copy(), self._qvel.copy()
        full_qpos[index], full_qvel[index] = qpos, qvel
        jnp = self._jnp
        self._data = self._restart(
            self._data, jnp.asarray(mask), jnp.asarray(full_qpos, jnp.float32), jnp.asarray(full_qvel, jnp.float32)
        )
        self._cache()

    def full_state(self) -> np.ndarray:
        data = self._data
        parts = (data.time.reshape(-1, 1), data.qpos, data.qvel, data.act.reshape(self.num_envs, -1))
        return np.concatenate([np.asarray(p, dtype=np.float64) for p in parts], axis=1)

    def load_full_state(self, state: np.ndarray) -> None:
        state = np.asarray(state, dtype=np.float32).reshape(self.num_envs, self.layout.size)
        lay, jnp = self.layout, self._jnp
        self._data = self._data.replace(
            time=jnp.asarray(state[:, lay.time]),
            qpos=jnp.asarray(state[:, lay.qpos]),
            qvel=jnp.asarray(state[:, lay.qvel]),
            act=jnp.asarray(state[:, lay.act]),
        )
        self._cache()

    def close(self) -> None:
        """Nothing to release (JAX owns the buffers)."""
