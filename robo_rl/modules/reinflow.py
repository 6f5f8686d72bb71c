"""ReinFlow: a flow policy made stochastic with learned, bounded noise in each Euler step, so that PPO can fine-tune
it with exact likelihoods (Zhang et al. 2025, "ReinFlow: fine-tuning flow matching policy with online RL").

A flow policy integrates dx/dt = v(x, t | obs) in K Euler steps from a start point x_0 to the action x_K. ReinFlow adds
Gaussian noise of a learned standard deviation σ(obs, x_k, t_k) ∈ [σ_min, σ_max] to every step:

    x_{k+1} = x_k + v(obs, x_k, t_k) / K + σ(obs, x_k, t_k) ε_k,   ε_k ~ N(0, I),   t_k = k / K,

which makes the chain x_0 → … → x_K a Markov process whose every transition is a Gaussian, so the log-probability of
the whole chain is exact: log p(x_0) + Σ_k log N(x_{k+1}; x_k + v / K, σ²). PPO treats the chain as the "action" (the
env gets the chain's last point): the rollout stores the chain, the update re-evaluates every transition at the
stored points. The start point is the flow's fixed noise by default (log p(x_0) = 0), the point the exported policy
starts from; then K = 1 is exactly a Gaussian policy, mean x_0 + v(obs, x_0, 0), std σ(obs, x_0, 0).

`ReinFlowPolicy` is a `StochasticPolicy` (`robo_rl.modules.distributions`: `act`, `distribution`, `value`, `scaler`,
`deterministic_actor`, ...) whose distribution is a `GaussianChain`, so `robo_rl.algorithms.ppo.PPO` and
`OnPolicyRunner` train it unchanged. The noise-free chain from the fixed noise
is the flow's own deterministic sampler with K steps: it exports to ONNX and to C as any flow policy does.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import nn
from torch.distributions import Normal

from robo_rl.distributed import LOCAL, Reducer, update_normalizer
from robo_rl.modules.distributions import gaussian_kl
from robo_rl.modules.flow import FlowPolicy
from robo_rl.modules.mlp import Activation, init_orthogonal, mlp
from robo_rl.modules.normalizer import EmpiricalNormalizer, make_normalizer


@dataclass(frozen=True)
class ReinFlowConfig:
    steps: int = 4
    """Denoising (Euler) steps K of the fine-tuned chain; the paper uses 1-4."""
    min_noise_std: float = 0.05
    """Lower bound of the injected noise's std, in the flow's standardized action units (exploration never stops)."""
    max_noise_std: float = 0.3
    """Upper bound of that std (the chain cannot drift far from the flow)."""
    init_noise_std: float = 0.1
    """The noise net's std at initialization (its output layer starts at zero weights)."""
    noise_hidden: tuple[int, ...] = (64, 64)
    """Hidden widths of the noise network σ(obs, x, t)."""
    critic_hidden: tuple[int, ...] = (64, 64)
    """Hidden widths of the value network."""
    activation: Activation = "elu"
    start: Literal["fixed", "random"] = "fixed"
    """Start point x_0: the flow's fixed noise (what the exported policy uses) or a fresh N(0, I) draw."""
    warmup_iterations: int = 3
    """Training iterations (updates) with the actor frozen, while the critic learns the cloned policy's values: a
    random critic's advantages would otherwise push the clone around first."""

    def __post_init__(self) -> None:
        if self.steps < 1:
            raise ValueError(f"ReinFlowConfig: steps must be >= 1, got {self.steps}")
        if not 0 < self.min_noise_std <= self.init_noise_std <= self.max_noise_std:
            raise ValueError("ReinFlowConfig: need 0 < min_noise_std <= init_noise_std <= max_noise_std")
        if self.start not in ("fixed", "random"):
            raise ValueError(f"ReinFlowConfig: start must be 'fixed' or 'random', got {self.start!r}")
        if self.warmup_iterations < 0:
            raise ValueError(f"ReinFlowConfig: warmup_iterations must be >= 0, got {self.warmup_iterations}")


class NoiseNet(nn.Module):
    """σ(features, x, t) `(B, A)` = σ_min + (σ_max − σ_min) · sigmoid(MLP): bounded whatever its inputs."""

    def __init__(self, feature_dim: int, action_dim: int, cfg: ReinFlowConfig) -> None:
        super().__init__()
        self.low, self.high = cfg.min_noise_std, cfg.max_noise_std
        self.net = mlp(feature_dim + action_dim + 1, cfg.noise_hidden, action_dim, cfg.activation)
        init_orthogonal(self.net, output_gain=0.0)
        last = self.net[-1]
        assert isinstance(last, nn.Linear)
        fraction = (cfg.init_noise_std - self.low) / (self.high - self.low)
        fraction = min(max(fraction, 1e-4), 1 - 1e-4)
        nn.init.constant_(last.bias, math.log(fraction / (1 - fraction)))

    def forward(self, features: torch.Tensor, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        squashed = torch.sigmoid(self.net(torch.cat([features, x, t], dim=-1)))
        return self.low + (self.high - self.low) * squashed


class ChainScaler(nn.Module):
    """Chain `(B, (K+1)·A)` → env action: its last point in standardized units, unstandardized, clipped to [-1, 1]
    and scaled onto the bounds (what `FlowPolicy.sample` does with its end point)."""

    def __init__(self, flow: FlowPolicy) -> None:
        super().__init__()
        self.flow = flow

    def forward(self, chain: torch.Tensor) -> torch.Tensor:
        end = chain[:, -self.flow.action_dim :]
        return self.flow.scaler((end * self.flow.action_scale + self.flow.action_loc).clamp(-1.0, 1.0))


class GaussianChain:
    """The law of a chain x_0 … x_K `(N, (K+1)·A)` along given points: the start's (a fixed point, or N(0, I) with
    `random_start`) times K Gaussian transitions N(x_{k+1}; mean_k, std_k²), whose means and stds `(N, K, A)` were
    computed at the chain's own points x_k. So it evaluates the chain it was built along (the one `act` sampled, or
    the stored one `ReinFlowPolicy.distribution` was given); its entropy and the KL between two of them are summed
    over the transitions at those points, a one-sample estimate of the chains' (the start's law is the same for every
    policy: no KL term, and nothing of it is stored)."""

    def __init__(self, mean: torch.Tensor, std: torch.Tensor, random_start: bool = False) -> None:
        self.mean, self.std, self.random_start = mean, std, random_start

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        n, k, a = self.mean.shape
        points = actions.view(n, k + 1, a)
        # unvalidated Normals: their argument check is a host sync (see DiagonalGaussian.log_prob)
        log_prob = Normal(self.mean, self.std, validate_args=False).log_prob(points[:, 1:]).view(n, k * a).sum(-1)
        if self.random_start:
            start = Normal(torch.zeros_like(points[:, 0]), 1.0, validate_args=False)
            log_prob = log_prob + start.log_prob(points[:, 0]).sum(-1)
        return log_prob

    def entropy(self) -> torch.Tensor:
        n, k, a = self.mean.shape
        return Normal(self.mean, self.std, validate_args=False).entropy().view(n, k * a).sum(-1)

    def kl(self, other: GaussianChain) -> torch.Tensor:
        return gaussian_kl(self.mean, self.std, other.mean, other.std).sum(-1)

    def params(self) -> dict[str, torch.Tensor]:
        return {"mean": self.mean, "std": self.std}

    @classmethod
    def from_params(cls, params: Mapping[str, torch.Tensor]) -> GaussianChain:
        """The stored transitions (for the KL; the start's law is not stored, it never changes)."""
        return cls(params["mean"], params["std"])


class ReinFlowPolicy(nn.Module):
    """A flow policy with learned step noise, and a critic, for PPO (module docstring).

    Args:
        flow: the behaviour-cloned flow; a copy is fine-tuned (its velocity net), with its observation normalizer
            and action standardization kept as cloned.
        critic_obs_dim: critic input size (privileged observations included).
        cfg: steps, noise bounds and networks.
    """

    times: torch.Tensor
    updates: torch.Tensor

    def __init__(self, flow: FlowPolicy, critic_obs_dim: int, cfg: ReinFlowConfig = ReinFlowConfig()) -> None:
        super().__init__()
        self.cfg = cfg
        self.flow = copy.deepcopy(flow)
        self.flow.steps = cfg.steps
        self.steps, self.step_dim = cfg.steps, self.flow.action_dim
        self.action_dim = (cfg.steps + 1) * self.step_dim
        """Width of what the rollout stores per step: the chain x_0 … x_K."""
        first = self.flow.net[0]
        assert isinstance(first, nn.Linear), "the flow's velocity net starts with a Linear layer"
        feature_dim = first.in_features - self.step_dim - 1
        self.noise = NoiseNet(feature_dim, self.step_dim, cfg)
        self.critic_obs_dim = critic_obs_dim
        self.critic_normalizer = make_normalizer(critic_obs_dim, True)
        self.critic = mlp(critic_obs_dim, cfg.critic_hidden, 1, cfg.activation)
        init_orthogonal(self.critic, output_gain=1.0)
        self.scaler = ChainScaler(self.flow)
        self.register_buffer("times", torch.arange(cfg.steps, dtype=torch.float32) / cfg.steps)
        self.register_buffer("updates", torch.zeros((), dtype=torch.long))
        """Updates so far (checkpointed with the weights): the actor thaws after `warmup_iterations` of them."""
        self.apply_warmup()

    def _start(self, batch: int, device: torch.device) -> torch.Tensor:
        if self.cfg.start == "random":
            return torch.randn(batch, self.step_dim, device=device)
        return self.flow.fixed_noise.expand(batch, -1).clone()

    def transition(self, features: torch.Tensor, x: torch.Tensor, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and std `(B, A)` of x_{k+1} given x_k at time t `(B, 1)`, for normalized observation features."""
        inputs = torch.cat([features, x, t], dim=-1)
        return x + self.flow.net(inputs) / self.steps, self.noise(features, x, t)

    def act(self, obs: torch.Tensor) -> tuple[torch.Tensor, GaussianChain]:
        """Sample chains `(N, (K+1)·A)`; returns the chains and their distribution (the transitions along them)."""
        features = self.flow.obs_normalizer(obs)
        x = self._start(obs.shape[0], obs.device)
        points, means, stds = [x], [], []
        for k in range(self.steps):
            mean, std = self.transition(features, x, self.times[k].expand(obs.shape[0], 1))
            x = mean + std * torch.randn_like(mean)
            points.append(x)
            means.append(mean)
            stds.append(std)
        distribution = GaussianChain(torch.stack(means, 1), torch.stack(stds, 1), self.cfg.start == "random")
        return torch.cat(points, -1), distribution

    def distribution(self, obs: torch.Tensor, actions: torch.Tensor) -> GaussianChain:
        """The current transitions along the stored chains `actions` `(N, (K+1)·A)` (every transition at once)."""
        n, k, a = obs.shape[0], self.steps, self.step_dim
        points = actions.view(n, k + 1, a)
        features = self.flow.obs_normalizer(obs).unsqueeze(1).expand(n, k, -1).reshape(n * k, -1)
        times = self.times.view(1, k, 1).expand(n, k, 1).reshape(n * k, 1)
        mean, std = self.transition(features, points[:, :-1].reshape(n * k, a), times)
        return GaussianChain(mean.view(n, k, a), std.view(n, k, a), self.cfg.start == "random")

    def value(self, critic_obs: torch.Tensor) -> torch.Tensor:
        """State value `(N,)` from raw critic observations."""
        return self.critic(self.critic_normalizer(critic_obs)).squeeze(-1)

    def actor_parameters(self) -> list[nn.Parameter]:
        """The velocity net and the noise net (the cloned normalizer and standardization stay fixed)."""
        return [*self.flow.net.parameters(), *self.noise.parameters()]

    def critic_parameters(self) -> list[nn.Parameter]:
        return list(self.critic.parameters())

    def freeze_actor(self, frozen: bool) -> None:
        """Keep the actor as it is (e.g. while the critic warms up on the cloned policy's returns)."""
        for parameter in self.actor_parameters():
            parameter.requires_grad_(not frozen)

    def update_normalizers(self, obs: torch.Tensor, critic_obs: torch.Tensor, reducer: Reducer = LOCAL) -> None:
        """After each update (the runner calls it once per iteration): count it, thaw the actor at the end of the
        warm-up, and fold the batch into the critic's normalizer; the actor keeps the statistics it was cloned
        with (changing them would move every action of the cloned policy)."""
        self.updates += 1
        self.apply_warmup()
        if isinstance(self.critic_normalizer, EmpiricalNormalizer):
            update_normalizer(self.critic_normalizer, critic_obs, reducer)

    def apply_warmup(self) -> None:
        """Freeze the actor while fewer than `warmup_iterations` updates are done, thaw it after."""
        self.freeze_actor(int(self.updates) < self.cfg.warmup_iterations)

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False) -> Any:
        """As nn.Module's, then the warm-up state of the restored update count (a resumed run stays frozen or
        thawed as it was)."""
        result = super().load_state_dict(state_dict, strict, assign)
        self.apply_warmup()
        return result

    def deterministic_actor(self) -> nn.Module:
        """The noise-free chain from the fixed noise: the flow's exportable K-step sampler."""
        return self.flow.deterministic_actor()
