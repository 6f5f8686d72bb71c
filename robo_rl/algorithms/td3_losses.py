"""TD3 pieces as pure functions (Fujimoto et al. 2018): target policy smoothing and the clipped double-Q target."""

from __future__ import annotations

import torch

from robo_rl.algorithms.off_policy_targets import bootstrapped_target


def smoothed_action(
    target_action: torch.Tensor,
    noise_std: float,
    noise_clip: float,
    generator: torch.Generator | None = None,
    normal: torch.Tensor | None = None,
) -> torch.Tensor:
    """Target policy smoothing in normalized action space: `clip(a' + clip(N(0, std), ±c), -1, 1)`.

    `normal`: standard normal draws shaped like `target_action`, drawn before (a captured update has no random
    call); None draws them here."""
    if normal is None:
        normal = torch.randn(target_action.shape, generator=generator, device=target_action.device)
    noise = normal * noise_std
    return (target_action + noise.clamp(-noise_clip, noise_clip)).clamp(-1.0, 1.0)


def td3_target(rewards: torch.Tensor, next_q: torch.Tensor, terminated: torch.Tensor, gamma: float) -> torch.Tensor:
    """`r + gamma (1 - terminated) min_i Q_i'(s', a'~)`; `next_q` `(E, B)` from the target critics."""
    return bootstrapped_target(rewards, next_q.min(dim=0).values, terminated, gamma)


def td3_actor_loss(q_first: torch.Tensor) -> torch.Tensor:
    """Deterministic policy gradient through the first critic only: `-mean(Q_1(s, pi(s)))`."""
    return -q_first.mean()
