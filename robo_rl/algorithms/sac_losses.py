"""Soft actor-critic losses as pure functions (Haarnoja et al. 2018, with automatic temperature)."""

from __future__ import annotations

import torch

from robo_rl.algorithms.off_policy_targets import bootstrapped_target


def soft_target(
    rewards: torch.Tensor,
    next_q: torch.Tensor,
    next_log_prob: torch.Tensor,
    terminated: torch.Tensor,
    gamma: float,
    alpha: float | torch.Tensor,
) -> torch.Tensor:
    """Soft Bellman target `r + gamma (1 - terminated) (Q'(s', a') - alpha log pi(a'|s'))`, all `(B,)`.

    `next_q` is already reduced over the (target) ensemble, e.g. by `subset_min`.
    """
    return bootstrapped_target(rewards, next_q - alpha * next_log_prob, terminated, gamma)


def sac_actor_loss(q: torch.Tensor, log_prob: torch.Tensor, alpha: float | torch.Tensor) -> torch.Tensor:
    """`mean(alpha log pi(a|s) - Q(s, a))` for reparameterized actions; `q` `(B,)` already reduced."""
    return (alpha * log_prob - q).mean()


def temperature_loss(log_alpha: torch.Tensor, log_prob: torch.Tensor, target_entropy: float) -> torch.Tensor:
    """Loss whose gradient raises alpha when the policy's entropy `-log_prob` falls below `target_entropy`."""
    return -(log_alpha * (log_prob.detach() + target_entropy)).mean()


def filtered_bc_loss(
    log_prob_demo: torch.Tensor, q_demo: torch.Tensor, q_policy: torch.Tensor, flagged: torch.Tensor
) -> torch.Tensor:
    """Behaviour-cloning term with a Q-filter (Nair et al. 2018): mean of `-log pi(a_demo|s)` over the `flagged`
    transitions (demonstrations, interventions) where the critic rates the demonstrated action above the
    policy's own, `q_demo > q_policy`; all `(B,)`. Zero when no transition qualifies, so the term fades as the
    policy overtakes its teacher."""
    keep = (flagged & (q_demo > q_policy)).to(log_prob_demo.dtype)
    return -(keep * log_prob_demo).sum() / keep.sum().clamp(min=1.0)
