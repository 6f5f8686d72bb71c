"""A whole on-policy rollout as one captured graph on the env's device.

`OnPolicyRunner.collect` steps the env and the policy from Python: on a GPU every step costs hundreds of kernel
launches and the Python between them. `DeviceRollout` runs the same rollout (`robo_rl.runners.rollout.run_rollout`:
the critic, the policy's forward pass and sampling, the env's transition with its observations, rewards and resets,
the rollout storage and the episode statistics) as one block that `robo_rl.capture.Captured` replays as a CUDA
graph: no host sync inside a rollout. The random numbers of the block (the env's draws, `CapturableEnv.draw`, and
the policy's standard normal noise) are drawn before it, step by step in the order the eager loop draws them, so on
the same seeds the rollout is the eager one, number for number (tests/robo_rl/runners/test_device_rollout.py).
"""

from __future__ import annotations

from typing import Any

import torch

from robo_rl.capture import CaptureBackend, Captured, StaticDraws
from robo_rl.envs import BatchedEnv, StepResult, capturable
from robo_rl.modules.distributions import ActionDistribution
from robo_rl.runners.rollout import Rollout, run_rollout


def rollout_unsupported(env: BatchedEnv, policy: object, world_size: int = 1) -> list[str]:
    """What a captured rollout of `policy` on `env` in `world_size` processes would need and lacks (empty: it
    applies)."""
    needs = (
        ("an env with a split step (robo_rl.envs.CapturableEnv: the torch quadrotor tasks)", not capturable(env)),
        ("a policy that samples from given noise (act_with_noise: ActorCritic)", not hasattr(policy, "act_with_noise")),
        ("a single process (the captured update has no collectives)", world_size != 1),
    )
    return [what for what, missing in needs if missing]


class DeviceRollout:
    """`run_rollout(rollout, ...)` as one captured block (see the module docstring).

    Args:
        rollout: the env, policy, storage, tracker and cursor the rollout uses and updates; the block rebinds the
            tensors of the env, the tracker and the cursor (its owners), and writes the storage in place.
        backend: `robo_rl.capture.CAPTURE_BACKENDS` ("cuda" on a GPU, "eager" on the CPU, "fx" in tests).
    """

    def __init__(self, rollout: Rollout, backend: CaptureBackend) -> None:
        missing = rollout_unsupported(rollout.env, rollout.policy)
        if missing:
            raise ValueError(f"runner.capture needs {'; '.join(missing)}")
        self.rollout = rollout
        steps, env = rollout.storage.num_steps, rollout.env
        self.env_draws = StaticDraws(steps)
        self.noise = torch.zeros(steps, env.num_envs, rollout.policy.action_dim, device=env.device)
        owners = (env, rollout.cursor, rollout.tracker)
        self.captured = Captured(self._block, owners=owners, backend=backend)

    def __call__(self) -> None:
        """Fill the rollout storage with `num_steps` steps of every env."""
        env: Any = self.rollout.env
        for t in range(self.env_draws.steps):
            torch.randn(self.noise.shape[1:], device=self.noise.device, out=self.noise[t])
            self.env_draws.fill(t, env.draw())
        self.captured()
        storage = self.rollout.storage
        storage.step = storage.num_steps  # a replay wrote every step; Python did not count them

    def _block(self) -> None:
        self.rollout.storage.step = 0
        run_rollout(self.rollout, self._act, self._step_env)

    def _act(self, t: int, obs: torch.Tensor) -> tuple[torch.Tensor, ActionDistribution]:
        policy: Any = self.rollout.policy
        return policy.act_with_noise(obs, self.noise[t])

    def _step_env(self, t: int, action: torch.Tensor) -> StepResult:
        env: Any = self.rollout.env
        return env.transition(action, self.env_draws.values[t])
