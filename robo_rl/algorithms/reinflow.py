"""ReinFlow as a `robo-rl train --algo reinflow` algorithm: a flow policy cloned from demonstrations, then fine-tuned
by PPO (`robo_rl.algorithms.ppo`, the `ppo` and `runner` sections) with learned noise in each of its K Euler steps
(`robo_rl.modules.reinflow`). This module holds its config section; the composition root builds the policy
(`robo_rl.build.build_policy`) and clones it on `demos` before training starts."""

from __future__ import annotations

from dataclasses import dataclass

from robo_rl.modules.mlp import Activation
from robo_rl.modules.reinflow import ReinFlowConfig


@dataclass(frozen=True)
class ReinFlowTrainConfig:
    demos: str | None = None
    """Demo file (`robo-rl record-demos`) the flow is cloned on before PPO; None starts from an untrained flow
    (plain RL with a flow policy)."""
    bc_steps: int = 4000
    """Behaviour-cloning (flow-matching) steps on `demos`."""
    bc_batch_size: int = 256
    bc_learning_rate: float = 1e-3
    flow_hidden: tuple[int, ...] = (128, 128)
    """Hidden widths of the flow's velocity network."""
    flow_activation: Activation = "relu"
    normalize_obs: bool = False
    """Normalize the flow's observations with statistics fitted while cloning (then kept fixed)."""
    steps: int = 4
    """Denoising (Euler) steps K, 1-4 in the paper; the exported policy integrates the same K steps."""
    min_noise_std: float = 0.05
    """Bounds and start of the learned step noise, in the flow's standardized action units."""
    max_noise_std: float = 0.3
    init_noise_std: float = 0.1
    noise_hidden: tuple[int, ...] = (64, 64)
    critic_hidden: tuple[int, ...] = (64, 64)
    warmup_iterations: int = 3
    """Iterations with the actor frozen while the critic learns the cloned policy's values."""

    def __post_init__(self) -> None:
        if self.bc_steps < 0 or self.bc_batch_size < 1 or not self.bc_learning_rate > 0:
            raise ValueError("reinflow: bc_steps must be >= 0, bc_batch_size >= 1 and bc_learning_rate > 0")
        self.policy()  # the policy settings' own checks (steps, noise bounds, warm-up)

    def policy(self) -> ReinFlowConfig:
        """The noisy chain's settings (`robo_rl.modules.reinflow.ReinFlowConfig`)."""
        return ReinFlowConfig(
            steps=self.steps,
            min_noise_std=self.min_noise_std,
            max_noise_std=self.max_noise_std,
            init_noise_std=self.init_noise_std,
            noise_hidden=self.noise_hidden,
            critic_hidden=self.critic_hidden,
            warmup_iterations=self.warmup_iterations,
        )
