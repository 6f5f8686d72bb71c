"""FlowPolicy: flow matching recovers both modes of a bimodal toy, Euler sampling matches the ODE, export parity."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest
import torch

from robo_rl.envs import SpaceSpec
from robo_rl.export.onnx import PolicyMetadata, export_onnx, onnx_parity
from robo_rl.modules.flow import FlowPolicy
from robo_rl.modules.flow_losses import euler_sample, flow_matching_loss


def _bimodal_actions(n: int, generator: torch.Generator) -> torch.Tensor:
    """1-D actions at -0.6 or +0.6 (equally likely) with spread 0.05: their mean, 0, is never demonstrated."""
    side = torch.randint(0, 2, (n, 1), generator=generator) * 2.0 - 1.0
    return 0.6 * side + 0.05 * torch.randn(n, 1, generator=generator)


def test_flow_matching_on_a_bimodal_toy_recovers_both_modes() -> None:
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(0)
    policy = FlowPolicy(1, -torch.ones(1), torch.ones(1), hidden=(64, 64), steps=10)
    optimizer = torch.optim.Adam(policy.parameters(), lr=3e-3)
    obs = torch.zeros(256, 1)
    for _ in range(1500):
        loss = policy.bc_loss(obs, _bimodal_actions(256, generator))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        samples = policy.sample(torch.zeros(4000, 1))[:, 0]
    near_left = ((samples + 0.6).abs() < 0.2).float().mean().item()
    near_right = ((samples - 0.6).abs() < 0.2).float().mean().item()
    between = (samples.abs() < 0.3).float().mean().item()
    assert 0.35 < near_left < 0.65 and 0.35 < near_right < 0.65
    assert near_left + near_right > 0.9 and between < 0.05
    # A mean-squared-error fit would answer the mean of the modes, which no demonstration visits.
    assert abs(_bimodal_actions(4000, generator).mean().item()) < 0.05


def test_euler_sampler_is_exact_euler_and_converges_to_the_ode_solution() -> None:
    # dx/dt = a x + t: x(1) = (x0 + (1 + a) / a^2) e^a - (1 + a) / a^2 - ... solved in closed form below.
    a = -0.7
    x0 = torch.tensor([[0.5], [-1.2]], dtype=torch.float64)

    def velocity(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return a * x + t

    exact = (x0 + 1 / a**2) * math.exp(a) - 1 / a - 1 / a**2  # x(t) = C e^{at} - t/a - 1/a^2, at t = 1
    one_step = euler_sample(velocity, x0, 1)
    torch.testing.assert_close(one_step, x0 + a * x0)  # one step: x0 + v(x0, 0)
    errors = [float((euler_sample(velocity, x0, k) - exact).abs().max()) for k in (1, 4, 16, 64)]
    assert all(later < earlier / 3 for earlier, later in itertools.pairwise(errors))  # first order
    assert errors[-1] < 5e-3
    with pytest.raises(ValueError, match="steps must be >= 1"):
        euler_sample(velocity, x0, 0)


def test_flow_matching_loss_is_zero_for_the_true_velocity_of_the_straight_path() -> None:
    x1, x0 = torch.randn(8, 2), torch.randn(8, 2)
    t = torch.rand(8, 1)
    perfect = flow_matching_loss(lambda x, tt: x1 - x0, x1, x0, t)
    assert float(perfect) == 0.0
    wrong = flow_matching_loss(lambda x, tt: torch.zeros_like(x), x1, x0, t)
    torch.testing.assert_close(wrong, (x1 - x0).square().sum(-1).mean())


@pytest.mark.parametrize("steps", [1, 4, 10])
def test_exported_sampler_matches_torch_in_onnxruntime(steps: int, tmp_path: Path) -> None:
    torch.manual_seed(0)
    low, high = torch.tensor([-2.0, 0.0]), torch.tensor([2.0, 1.0])
    policy = FlowPolicy(3, low, high, hidden=(32, 32), steps=steps, normalize_obs=True)
    obs = torch.randn(64, 3)
    with torch.no_grad():
        policy.obs_normalizer.update(obs)  # non-trivial statistics, folded into the exported graph
        policy.fit_action_standardization(0.1 * torch.randn(100, 2) + 0.4)  # folded into the velocity net
        reference = policy.scaler(policy.deterministic(obs))
    actor = policy.deterministic_actor()
    with torch.no_grad():
        torch.testing.assert_close(actor(obs), reference)  # the unrolled sampler is the policy's own
    spec_obs = SpaceSpec(("a", "b", "c"), (-10.0,) * 3, (10.0,) * 3, ("m",) * 3)
    spec_action = SpaceSpec(("u", "v"), (-2.0, 0.0), (2.0, 1.0), ("N", "N"))
    path = export_onnx(actor, PolicyMetadata(spec_obs, spec_action, 0.02, "toy", "c", "g"), tmp_path / "flow.onnx")
    assert onnx_parity(actor, path, obs) < 1e-5


def test_standardized_flow_clones_a_narrow_demonstrator_exactly_enough() -> None:
    """Demonstrations in a narrow band (spread 0.02 around 0.3, as a hover controller's thrusts): cloned in units
    of that spread, the flow's actions land within a fraction of it; in raw units the same flow misses by more."""
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(0)
    obs = torch.randn(2048, 2, generator=generator)
    actions = 0.3 + 0.02 * torch.tanh(obs[:, :1])  # a smooth deterministic demonstrator
    errors = {}
    for standardize in (False, True):
        torch.manual_seed(0)
        policy = FlowPolicy(2, -torch.ones(1), torch.ones(1), hidden=(64, 64), steps=10)
        if standardize:
            policy.fit_action_standardization(actions)
        optimizer = torch.optim.Adam(policy.parameters(), lr=1e-3)
        for _ in range(800):
            index = torch.randint(0, 2048, (256,), generator=generator)
            loss = policy.bc_loss(obs[index], actions[index])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            errors[standardize] = float((policy.deterministic(obs) - actions).abs().mean())
    assert errors[True] < 0.004 and errors[True] < errors[False] / 2, errors
