"""The batched critic ensemble: each member is the MLP it stands for, and old per-member checkpoints load."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from robo_rl.modules.mlp import mlp
from robo_rl.modules.q_ensemble import QEnsemble


def _old_layout(ensemble_in: int, hidden: tuple[int, ...], members: int, layer_norm: bool) -> nn.Module:
    """The earlier layout: a ModuleList of nn.Sequential MLPs under `members`."""
    module = nn.Module()
    module.members = nn.ModuleList(mlp(ensemble_in, hidden, 1, "relu", layer_norm) for _ in range(members))
    return module


@pytest.mark.parametrize("layer_norm", [False, True])
def test_members_are_independent_mlps_and_old_checkpoints_load(layer_norm: bool) -> None:
    torch.manual_seed(0)
    old = _old_layout(7, (16, 12), 3, layer_norm)
    for p in old.parameters():  # LayerNorm starts at (1, 0): move it so a wrong mapping shows
        nn.init.normal_(p)
    q = QEnsemble(5, 2, (16, 12), 3, "relu", layer_norm)
    q.load_state_dict(old.state_dict())
    obs, act = torch.randn(9, 5), torch.randn(9, 2)
    expected = torch.stack([m(torch.cat([obs, act], -1)).squeeze(-1) for m in old.members])
    torch.testing.assert_close(q(obs, act), expected)


def test_gradients_stay_within_their_member() -> None:
    torch.manual_seed(0)
    q = QEnsemble(4, 1, (8,), 4)
    q(torch.randn(6, 4), torch.randn(6, 1))[2].sum().backward()
    grads = q.weights[0].grad
    assert grads is not None
    touched = grads.abs().sum(dim=(1, 2)) > 0
    assert touched.tolist() == [False, False, True, False]


def test_members_start_different_with_linear_init_bounds() -> None:
    torch.manual_seed(0)
    q = QEnsemble(30, 2, (64, 64), 2)
    first = q.weights[0]
    assert not torch.equal(first[0], first[1])
    assert first.abs().max() <= 1 / 32**0.5
