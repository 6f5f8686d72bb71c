"""Demonstrations as action chunks: each transition's action becomes the next H actions of its episode.

Demo files (`robo_rl.hil.demos`) hold single-step transitions, several envs' episodes interleaved and possibly
filtered. `chunk_demos` finds each transition's successor in its episode (the next transition whose `obs` is
exactly its `next_obs`; an episode's last transition, `terminated | truncated`, has none), then gives every
transition the actions of itself and its H - 1 successors, `(B, H * action_dim)` in the same normalized space.
Near an episode's end, or where the recording stops, the chunk is padded by repeating the last action (as
Diffusion Policy pads: "hold the last command"), and `mask` `(B, H)` says which steps are the episode's own, so a
loss can leave the padding out.

The other fields describe the macro transition `ChunkEnv(execute=...)` would produce from the same steps: rewards
summed over the first `execute` steps, `next_obs` (and critic) and the end flags of the last of them; a chain that
breaks before `execute` steps without an episode end (the recording stopped) counts as `truncated` (bootstrap from
where it stopped). So the result fits both behaviour cloning and an off-policy prior buffer on the chunk env.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
import torch

from robo_rl.chunks.spec import check_horizon
from robo_rl.storage.replay import Transitions


@dataclass(frozen=True)
class ChunkedDemos:
    transitions: Transitions
    """Macro transitions; `actions` `(B, H * action_dim)`, step i's action in `[i * action_dim, (i + 1) * ...)`."""
    mask: torch.Tensor
    """`(B, H)` bool: step i of the chunk is the episode's own action (False: padding, a repeat of the last)."""


def successors(demos: Transitions) -> np.ndarray:
    """`(B,)` index of each transition's next transition in its episode, -1 for none (episode end, or not
    recorded). The successor of i is the first unclaimed j > i whose obs is exactly i's next_obs."""
    obs = np.ascontiguousarray(demos.obs.detach().cpu().numpy())
    next_obs = np.ascontiguousarray(demos.next_obs.detach().cpu().numpy())
    ended = (demos.terminated | demos.truncated).cpu().numpy()
    waiting: dict[bytes, deque[int]] = {}
    for j, row in enumerate(obs):
        waiting.setdefault(row.tobytes(), deque()).append(j)
    found = np.full(len(obs), -1)
    for i, row in enumerate(next_obs):
        if ended[i]:
            continue
        candidates = waiting.get(row.tobytes())
        while candidates and candidates[0] <= i:  # earlier rows cannot follow i, nor any later transition
            candidates.popleft()
        if candidates:
            found[i] = candidates.popleft()
    return found


def chunk_demos(demos: Transitions, horizon: int, execute: int | None = None) -> ChunkedDemos:
    """Chunks of `horizon` actions for every transition of `demos` (see the module docstring); `execute`
    (default H) sets the macro transition's length. ValueError for a bad horizon/execute or no transitions."""
    steps = check_horizon(horizon, execute)
    if len(demos) == 0:
        raise ValueError("chunk_demos: no transitions")
    device = demos.obs.device
    follow = torch.as_tensor(successors(demos), device=device)
    count = len(demos)
    index = torch.empty(count, horizon, dtype=torch.long, device=device)
    mask = torch.empty(count, horizon, dtype=torch.bool, device=device)
    index[:, 0], mask[:, 0] = torch.arange(count, device=device), True
    for k in range(1, horizon):
        nxt = follow[index[:, k - 1]]
        mask[:, k] = mask[:, k - 1] & (nxt >= 0)
        index[:, k] = torch.where(mask[:, k], nxt, index[:, k - 1])
    actions = demos.actions[index].reshape(count, -1)
    return ChunkedDemos(_macro(demos, index[:, :steps], mask[:, :steps], actions), mask)


def _macro(demos: Transitions, index: torch.Tensor, mask: torch.Tensor, actions: torch.Tensor) -> Transitions:
    """The transitions of executing the first `index.shape[1]` steps of each chunk."""
    last = index[:, -1]  # padding repeats the last real step, so this is it
    ended = demos.terminated[last] | demos.truncated[last]
    broken = ~mask[:, -1] & ~ended
    rewards = (demos.rewards[index] * mask).sum(dim=1)
    return Transitions(
        obs=demos.obs,
        critic_obs=demos.critic_obs,
        actions=actions,
        rewards=rewards,
        costs=(demos.costs[index] * mask).sum(dim=1),
        next_obs=demos.next_obs[last],
        next_critic_obs=demos.next_critic_obs[last],
        terminated=demos.terminated[last],
        truncated=demos.truncated[last] | broken,
        intervened=(demos.intervened[index] & mask).any(dim=1),
        is_demo=demos.is_demo,
    )
