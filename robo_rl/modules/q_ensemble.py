"""An ensemble of Q-functions Q_i(s, a), optionally with LayerNorm after each hidden layer (RLPD)."""

from __future__ import annotations

import torch
from torch import nn

from robo_rl.modules.mlp import Activation, mlp


class QEnsemble(nn.Module):
    """`num_critics` independent MLPs on `[critic_obs, normalized action]`; forward gives `(E, B)` Q-values."""

    def __init__(
        self,
        critic_obs_dim: int,
        action_dim: int,
        hidden: tuple[int, ...] = (256, 256),
        num_critics: int = 2,
        activation: Activation = "relu",
        layer_norm: bool = False,
    ) -> None:
        super().__init__()
        self.members = nn.ModuleList(
            mlp(critic_obs_dim + action_dim, hidden, 1, activation, layer_norm) for _ in range(num_critics)
        )

    def forward(self, critic_obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        x = torch.cat([critic_obs, action], dim=-1)
        return torch.stack([member(x).squeeze(-1) for member in self.members])
