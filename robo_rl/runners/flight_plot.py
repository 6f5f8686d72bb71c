"""3-D plot of evaluation flights: the position error of each episode over time, from the observations."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import torch

from robo_rl.envs import BatchedEnv
from robo_rl.runners.policy_stepper import Actor, PolicyStepper

matplotlib.use("Agg")  # headless
import matplotlib.pyplot as plt

POSITION_NAMES = ("position_error_x", "position_error_y", "position_error_z")
"""Observation names the plot reads (the quadrotor tasks' position error to the reference, in m)."""


@torch.no_grad()
def record_positions(env: BatchedEnv, actor: Actor, seed: int) -> torch.Tensor:
    """`(steps, num_envs, 3)` position errors of one deterministic episode per env; NaN after an env's end (an
    actor with memory has its state carried, as `robo_rl.runners.evaluate.evaluate` carries it)."""
    names = env.obs_spec.names
    missing = [name for name in POSITION_NAMES if name not in names]
    if missing:
        raise ValueError(f"the task's observation has no {missing}; flight plots need a position error")
    columns = [names.index(name) for name in POSITION_NAMES]
    obs = env.reset(seed=seed)
    policy = PolicyStepper(actor, env.num_envs, env.device)
    running = torch.ones(env.num_envs, dtype=torch.bool, device=env.device)
    track = [obs[:, columns].clone()]
    for _ in range(env.max_episode_steps):
        obs, _, terminated, truncated, info = env.step(policy(obs))
        policy.restart(terminated | truncated)
        last = info["final_obs"][:, columns]
        track.append(torch.where(running.unsqueeze(-1), last, torch.full_like(last, float("nan"))))
        running &= ~(terminated | truncated)
        if not bool(running.any()):
            break
    return torch.stack(track).cpu()


def plot_flights(positions: torch.Tensor, out: Path, title: str) -> None:
    """One 3-D line per episode from its start (dot) to its end (cross), around the reference at the origin."""
    fig = plt.figure(figsize=(6, 6), dpi=100)
    ax = fig.add_subplot(projection="3d")
    for episode in range(positions.shape[1]):
        track = positions[:, episode]
        path = track[~torch.isnan(track).any(-1)].numpy()
        ax.plot(path[:, 0], path[:, 1], path[:, 2], lw=0.8)
        ax.scatter(*path[0], marker="o", s=8)
        ax.scatter(*path[-1], marker="x", s=12, color="k")
    ax.scatter(0, 0, 0, marker="*", s=80, color="red", label="reference")
    ax.set(xlabel="x error (m)", ylabel="y error (m)", zlabel="z error (m)", title=title)
    ax.legend(loc="upper left")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)
