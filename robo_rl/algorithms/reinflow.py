"""ReinFlow as a `robo-rl train --algo reinflow` algorithm: a flow policy cloned from demonstrations, then fine-tuned
by PPO (`robo_rl.algorithms.ppo`, the `ppo` and `runner` sections) with learned noise in each of its K Euler steps
(`robo_rl.modules.reinflow`). This module holds its config section; the composition root builds the policy
(`robo_rl.build.build_policy`) and clones it on `demos` before training starts."""

from __future__ import annotations

from dataclasses import dataclass, field

from robo_rl.modules.mlp import Activation
from robo_rl.modules.reinflow import ReinFlowConfig


@dataclass(frozen=True)
class ReinFlowTrainConfig:
    demos: str | None = None
    """Demo file (`robo-rl record-demos`) the flow is cloned on before PPO; None starts from an untrained flow
    (plain RL with a flow policy), which needs bc_steps=0."""
    bc_steps: int = 4000
    """Behaviour-cloning (flow-matching) steps on `demos`."""
    bc_batch_size: int = 256
    bc_learning_rate: float = 1e-3
    flow_hidden: tuple[int, ...] = (128, 128)
    """Hidden widths of the flow's velocity network."""
    flow_activation: Activation = "relu"
    normalize_obs: bool = False
    """Normalize the flow's observations with statistics fitted while cloning (then kept fixed)."""
    chain: ReinFlowConfig = field(default_factory=ReinFlowConfig)
    """The noisy chain: K (`chain.steps`), the noise bounds and networks, the critic, the actor's warm-up."""

    def __post_init__(self) -> None:
        if self.bc_steps < 0 or self.bc_batch_size < 1 or not self.bc_learning_rate > 0:
            raise ValueError("reinflow: bc_steps must be >= 0, bc_batch_size >= 1 and bc_learning_rate > 0")
