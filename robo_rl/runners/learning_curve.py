"""Learning-curve figure written into each run directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # headless: runs write PNGs, they never open windows
import matplotlib.pyplot as plt


def plot_learning_curve(rows: list[dict[str, Any]], out: Path, title: str) -> None:
    """Training return (stochastic policy) and evaluation return (deterministic) vs environment steps."""
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    for key, label, style in (("mean_return", "training episodes", ".-"), ("eval_return", "evaluation", "o-")):
        points = [(r["env_steps"], r[key]) for r in rows if r.get(key) is not None]
        if points:
            xs, ys = zip(*points, strict=False)
            ax.plot(xs, ys, style, label=label, markersize=3)
    ax.set_xlabel("environment steps")
    ax.set_ylabel("episode return")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend()
    fig.tight_layout()
    tmp = out.with_suffix(".tmp.png")
    fig.savefig(tmp)
    plt.close(fig)
    tmp.replace(out)


def plot_comparison(runs: dict[str, list[dict[str, Any]]], out: Path, key: str = "eval_return") -> None:
    """Overlay `key` vs environment steps for several runs (label → metrics rows) in one figure."""
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    for label, rows in runs.items():
        points = [(r["env_steps"], r[key]) for r in rows if r.get(key) is not None]
        if points:
            xs, ys = zip(*points, strict=True)
            ax.plot(xs, ys, ".-", label=label, markersize=4)
    ax.set_xlabel("environment steps")
    ax.set_ylabel(key.replace("_", " "))
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    fig.tight_layout()
    tmp = out.with_suffix(".tmp.png")
    fig.savefig(tmp)
    plt.close(fig)
    tmp.replace(out)
