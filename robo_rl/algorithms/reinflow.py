"""ReinFlow as a `robo-rl train --algo reinflow` algorithm: a flow policy cloned from demonstrations, then fine-tuned
by PPO (`robo_rl.algorithms.ppo`, the `ppo` and `runner` sections) with learned noise in each of its K Euler steps
(`robo_rl.modules.reinflow`). This module holds its config section and its policy builder; the registry's `prepare`
hook (`robo_rl.hil.reinflow_clone`, a layer that may read demonstrations) clones the flow on `demos` before training
starts."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from robo_rl.modules.flow import FlowPolicy
from robo_rl.modules.mlp import Activation
from robo_rl.modules.reinflow import ReinFlowConfig, ReinFlowPolicy


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


def build_policy(
    obs_dim: int,
    critic_obs_dim: int,
    action_low: torch.Tensor,
    action_high: torch.Tensor,
    cfg: ReinFlowTrainConfig,
    *,
    seed: int = 0,
    nominal_action: torch.Tensor | None = None,
    device: str | torch.device = "cpu",
) -> ReinFlowPolicy:
    """ReinFlow's policy (the registry's `build_policy`): an uncloned flow, its fixed noise drawn from `seed`, with
    the noise and value networks of `cfg.chain` (a flow has no nominal action to start from)."""
    flow = FlowPolicy(
        obs_dim,
        action_low,
        action_high,
        cfg.flow_hidden,
        cfg.flow_activation,
        steps=cfg.chain.steps,
        normalize_obs=cfg.normalize_obs,
        noise_seed=seed,
    )
    return ReinFlowPolicy(flow, critic_obs_dim, cfg.chain).to(device)
