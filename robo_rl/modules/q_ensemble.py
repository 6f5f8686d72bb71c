"""An ensemble of Q-functions Q_i(s, a) as one batched module, optionally with LayerNorm after each hidden layer
(RLPD).

The E members are independent MLPs, but their weights live stacked, `(E, in, out)` per layer, so a forward pass
is one batched matrix product per layer (`torch.baddbmm`) for the whole ensemble instead of one small product per
member and layer: ten critics cost about what one costs in calls. Each member is initialised as `nn.Linear` would
initialise it. Checkpoints written by the earlier per-member layout (`members.<i>.<layer>.weight`) still load.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from robo_rl.modules.mlp import Activation
from robo_rl.modules.normalizer import make_normalizer

_ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "elu": F.elu,
    "relu": F.relu,
    "tanh": torch.tanh,
    "leaky_relu": F.leaky_relu,
}
_OLD_KEY = re.compile(r"members\.(\d+)\.(\d+)\.(weight|bias)$")


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
        normalize_obs: bool = False,
    ) -> None:
        """`normalize_obs`: an `EmpiricalNormalizer` of the critic observations (`obs_normalizer`) before the
        first layer, whose statistics only explicit `update` calls change (SAC fits them once); off: the identity,
        and the state dict is the one without it."""
        super().__init__()
        self.obs_normalizer: nn.Module = make_normalizer(critic_obs_dim, normalize_obs)
        self.in_features = critic_obs_dim + action_dim
        self.num_critics = num_critics
        self.layer_norm = layer_norm
        self._activation = _ACTIVATIONS[activation]
        dims = (self.in_features, *hidden, 1)
        self.weights = nn.ParameterList(
            nn.Parameter(torch.empty(num_critics, a, b)) for a, b in itertools.pairwise(dims)
        )
        self.biases = nn.ParameterList(nn.Parameter(torch.empty(num_critics, 1, b)) for b in dims[1:])
        self.norm_weights = nn.ParameterList(
            nn.Parameter(torch.ones(num_critics, 1, b)) for b in (hidden if layer_norm else ())
        )
        self.norm_biases = nn.ParameterList(
            nn.Parameter(torch.zeros(num_critics, 1, b)) for b in (hidden if layer_norm else ())
        )
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """Every member as `nn.Linear` initialises itself: weights and biases uniform in ±1/sqrt(fan_in)."""
        for weight, bias in zip(self.weights, self.biases, strict=True):
            bound = 1.0 / math.sqrt(weight.shape[1])
            weight.uniform_(-bound, bound)
            bias.uniform_(-bound, bound)

    def forward(self, critic_obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        x = torch.cat([self.obs_normalizer(critic_obs), action], dim=-1)
        h = x.unsqueeze(0).expand(self.num_critics, *x.shape)
        last = len(self.weights) - 1
        for i, (weight, bias) in enumerate(zip(self.weights, self.biases, strict=True)):
            h = torch.baddbmm(bias, h, weight)
            if i < last:
                if self.layer_norm:
                    h = F.layer_norm(h, h.shape[-1:]) * self.norm_weights[i] + self.norm_biases[i]
                h = self._activation(h)
        return h.squeeze(-1)

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, *args: Any) -> None:
        _stack_old_members(state_dict, prefix, self.layer_norm)
        super()._load_from_state_dict(state_dict, prefix, *args)


def _stack_old_members(state_dict: dict[str, Any], prefix: str, layer_norm: bool) -> None:
    """Rewrite, in place, the per-member keys of the earlier layout (`members.<i>.<module index>.weight`, from
    `nn.Sequential` MLPs: Linear[, LayerNorm], activation, ...) into the stacked parameters."""
    found: dict[tuple[int, str], dict[int, torch.Tensor]] = {}
    for key in [k for k in state_dict if k.startswith(prefix + "members.")]:
        match = _OLD_KEY.match(key[len(prefix) :])
        if match is None:
            continue
        member, module, kind = int(match[1]), int(match[2]), match[3]
        found.setdefault((module, kind), {})[member] = state_dict.pop(key)
    if not found:
        return
    per_layer = 3 if layer_norm else 2  # Linear, [LayerNorm,] activation
    for (module, kind), members in found.items():
        stacked = torch.stack([members[i] for i in sorted(members)])
        layer, offset = divmod(module, per_layer)
        if offset == 1 and layer_norm:  # a LayerNorm's (E, out) scale or shift
            name = "norm_weights" if kind == "weight" else "norm_biases"
            state_dict[f"{prefix}{name}.{layer}"] = stacked.unsqueeze(1)
        elif kind == "weight":  # nn.Linear keeps (out, in)
            state_dict[f"{prefix}weights.{layer}"] = stacked.transpose(1, 2)
        else:
            state_dict[f"{prefix}biases.{layer}"] = stacked.unsqueeze(1)
