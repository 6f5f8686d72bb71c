"""Episode bookkeeping shared by the MuJoCo tasks: step counters, the time limit, seeded draws, outputs.

The physics state lives in the engine's numpy arrays on the CPU, so the tasks compute observations, rewards and
resets with vectorized numpy (float64) and convert only what they return to float32 torch tensors on their
device. numpy rather than torch on purpose: torch's intra-op threads and the rollout threads would compete for
the same cores, and on a 2-core machine a 1,024-element torch.cos with 2 threads was seen to take milliseconds.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from robo_rl.sim.mujoco.engine import PhysicsEngine


class Episodes:
    """Step counters and the random stream of `engine.num_envs` episodes (one numpy `Generator`).

    The stream depends only on the seed, not on the device: the same seed gives the same episodes everywhere.
    """

    def __init__(self, engine: PhysicsEngine, max_episode_steps: int, seed: int | None) -> None:
        """`seed` None draws a non-deterministic seed; `reseed` may restart the stream later."""
        self.engine = engine
        self.max_episode_steps = max_episode_steps
        self.rng = np.random.default_rng(seed)
        self.steps = np.zeros(engine.num_envs, dtype=np.int64)
        """`(N,)` control steps since each env's episode started."""

    def reseed(self, seed: int | None) -> None:
        """Restart the random stream from `seed`; None continues the current stream."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def uniform(self, count: int, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        """`(count, d)` float64 draws, column j uniform in [low[j], high[j]) (`low`, `high` `(d,)`)."""
        return low + (high - low) * self.rng.random((count, low.shape[0]))

    def tick(self) -> np.ndarray:
        """Count one control step; returns `(N,)` bool, True where the episode reached its time limit."""
        self.steps += 1
        return self.steps >= self.max_episode_steps

    def restart(self, index: np.ndarray, qpos: np.ndarray, qvel: np.ndarray) -> None:
        """Start new episodes for envs `index` `(k,)` at `qpos` `(k, nq)`, `qvel` `(k, nv)`."""
        self.engine.reset(index, qpos, qvel)
        self.steps[index] = 0

    def state_dict(self) -> dict[str, Any]:
        """Physics state `(N, nstate)`, step counters and the generator's state."""
        return {
            "physics": torch.from_numpy(self.engine.full_state()),
            "steps": torch.from_numpy(self.steps.copy()),
            "rng": self.rng.bit_generator.state,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.engine.load_full_state(state_dict["physics"].cpu().numpy())
        self.steps = state_dict["steps"].cpu().numpy().astype(np.int64)
        self.rng = np.random.default_rng()
        self.rng.bit_generator.state = state_dict["rng"]


def controls(action: torch.Tensor, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Actions `(N, nu)` on any device as float64 numpy controls `(N, nu)`, clipped to `[low, high]` `(nu,)`."""
    values = action.detach().cpu().numpy().astype(np.float64).reshape(-1, low.shape[0])
    return np.clip(values, low, high)


def to_torch(array: np.ndarray, device: torch.device) -> torch.Tensor:
    """A numpy result as a tensor on `device`: float arrays become float32, bool arrays stay bool."""
    if array.dtype != np.bool_:
        array = array.astype(np.float32)
    return torch.from_numpy(np.ascontiguousarray(array)).to(device)
