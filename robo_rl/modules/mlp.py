"""Multilayer perceptrons used by actors and critics."""

from __future__ import annotations

import itertools
from typing import Literal

from torch import nn

Activation = Literal["elu", "relu", "tanh", "leaky_relu"]

ACTIVATIONS: dict[str, type[nn.Module]] = {
    "elu": nn.ELU,
    "relu": nn.ReLU,
    "tanh": nn.Tanh,
    "leaky_relu": nn.LeakyReLU,
}


def mlp(
    in_dim: int, hidden: tuple[int, ...], out_dim: int, activation: Activation, layer_norm: bool = False
) -> nn.Sequential:
    """`in_dim → hidden... → out_dim` with `activation` between layers (after a LayerNorm if asked) and a
    linear output."""
    layers: list[nn.Module] = []
    dims = (in_dim, *hidden)
    for a, b in itertools.pairwise(dims):
        norm = [nn.LayerNorm(b)] if layer_norm else []
        layers += [nn.Linear(a, b), *norm, ACTIVATIONS[activation]()]
    layers.append(nn.Linear(dims[-1], out_dim))
    return nn.Sequential(*layers)


def init_orthogonal(net: nn.Sequential, output_gain: float) -> None:
    """Orthogonal init (gain √2 for hidden layers) with zero biases; a small output gain keeps early actions calm."""
    linears = [m for m in net if isinstance(m, nn.Linear)]
    for i, layer in enumerate(linears):
        gain = output_gain if i == len(linears) - 1 else 2**0.5
        nn.init.orthogonal_(layer.weight, gain)
        nn.init.zeros_(layer.bias)
