"""Learning-curve figures: the one written into each run directory, and `robo-rl compare`'s overlay of runs.

The return of the training episodes that finished in an iteration misleads on its own: the episodes that end
first are the crashes, and as the policy learns to fly longer the few that still end are long crashes with a
large negative return, so that curve falls while the policy gets better. The figures therefore lead with the
evaluation (deterministic policy, fixed initial states) and the mean reward per training step (every step of
every env counts), and show the completed-episode return only on its own labelled panel, next to the number
of episodes it averages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # headless: runs write PNGs, they never open windows
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import EngFormatter, MaxNLocator

FIGURE_WIDTH = 8.0
"""Inches; at `DPI` the PNGs are 800 pixels wide."""
PANEL_HEIGHT = 2.2
"""Inches per panel."""
HEADER_HEIGHT = 0.6
"""Inches for the figure's title and the shared x label."""
DPI = 100
EPISODE_COUNT_KEY = "episodes"
"""Metrics key of the number of training episodes that ended since the previous row."""


@dataclass(frozen=True)
class Series:
    """One metric against environment steps; rows without the metric (or with null) are left out."""

    env_steps: tuple[int, ...]
    values: tuple[float, ...]

    def __len__(self) -> int:
        return len(self.values)


@dataclass(frozen=True)
class Panel:
    """What one panel plots and how it is labelled."""

    key: str
    """metrics.jsonl key on the y axis."""
    title: str
    ylabel: str
    style: str
    """matplotlib format: markers alone for sparse evaluations, a line for per-iteration values."""
    percent: bool = False
    """Values are fractions, drawn as 0-100 %."""
    legend: str | None = None
    """Legend entry of the curve in the run's own learning curve (None: no legend)."""


EVAL_RETURN = Panel("eval_return", "evaluation: mean episode return (deterministic policy)", "return", "o")
EVAL_SUCCESS = Panel("eval_success_rate", "evaluation: success rate", "success", "o", percent=True)
TRAIN_REWARD = Panel(
    "train_reward_per_step",
    "training: mean reward per env step (every step of every env since the previous point)",
    "reward / step",
    ".-",
)
TRAIN_EPISODE_RETURN = Panel(
    "mean_return",
    "training: mean return of only the episodes that ended since the previous point (crashes end first)",
    "return",
    ".-",
    legend="mean return (left axis)",
)
LEARNING_CURVE_PANELS = (EVAL_RETURN, EVAL_SUCCESS, TRAIN_REWARD, TRAIN_EPISODE_RETURN)
"""The run directory's learning curve, top to bottom; panels without data are left out."""
COMPARISON_PANELS = (EVAL_RETURN, EVAL_SUCCESS, TRAIN_REWARD)
"""`robo-rl compare`'s default panels."""


def series(rows: Sequence[dict[str, Any]], key: str) -> Series:
    """`key` against `env_steps` over the metrics rows that have a value for it."""
    points = [(int(row["env_steps"]), float(row[key])) for row in rows if row.get(key) is not None]
    return Series(tuple(x for x, _ in points), tuple(y for _, y in points))


def panel_for(key: str) -> Panel:
    """The known panel of `key`, or a plain line labelled with the key itself."""
    known = {panel.key: panel for panel in LEARNING_CURVE_PANELS}
    return known.get(key, Panel(key, key.replace("_", " "), key.replace("_", " "), ".-"))


def learning_curve_series(rows: Sequence[dict[str, Any]]) -> dict[str, Series]:
    """The learning curve's non-empty series by metrics key, in panel order, plus the episode counts when the
    completed-episode return is drawn. Old metrics files without `train_reward_per_step`, runs without
    evaluation and tasks without success simply lack those keys."""
    found = {panel.key: series(rows, panel.key) for panel in LEARNING_CURVE_PANELS}
    found = {key: values for key, values in found.items() if len(values)}
    if TRAIN_EPISODE_RETURN.key in found:
        found[EPISODE_COUNT_KEY] = series(rows, EPISODE_COUNT_KEY)
    return found


def plot_learning_curve(rows: list[dict[str, Any]], out: Path, title: str) -> None:
    """One panel per series of `learning_curve_series` against environment steps, written to `out` (PNG)."""
    found = learning_curve_series(rows)
    panels = [panel for panel in LEARNING_CURVE_PANELS if panel.key in found]
    fig, axes = _figure(len(panels), title)
    for ax, panel in zip(axes, panels, strict=False):
        _draw(ax, panel, found[panel.key])
        if panel is TRAIN_EPISODE_RETURN:
            _draw_episode_counts(ax, found[EPISODE_COUNT_KEY])
    if not panels:
        _no_data(axes[0], "no training iteration logged yet")
    _save(fig, out)


def plot_comparison(runs: dict[str, list[dict[str, Any]]], out: Path, keys: Sequence[str]) -> None:
    """Overlay several runs (label → metrics rows), one panel per key that any run has, one colour per run."""
    panels = [panel_for(key) for key in keys if any(len(series(rows, key)) for rows in runs.values())]
    fig, axes = _figure(len(panels), "")
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    run_colours = {label: colours[i % len(colours)] for i, label in enumerate(runs)}
    for ax, panel in zip(axes, panels, strict=False):
        for label, rows in runs.items():
            _draw(ax, panel, series(rows, panel.key), colour=run_colours[label], annotate=False)
    if panels:
        handles = [Line2D([], [], color=colour, marker=".", label=label) for label, colour in run_colours.items()]
        fig.legend(handles=handles, loc="lower center", fontsize=8, frameon=False)
    else:
        _no_data(axes[0], f"no run has any of {', '.join(keys)}")
    _save(fig, out, legend_rows=len(runs) if panels else 0)


def _figure(panels: int, title: str) -> tuple[Figure, list[Axes]]:
    height = HEADER_HEIGHT + PANEL_HEIGHT * max(panels, 1)
    fig, axes = plt.subplots(max(panels, 1), 1, figsize=(FIGURE_WIDTH, height), dpi=DPI, sharex=True, squeeze=False)
    if title:
        fig.suptitle(title)
    column = list(axes[:, 0])
    column[-1].set_xlabel("environment steps")
    column[-1].xaxis.set_major_formatter(EngFormatter(sep=""))  # 500k, 1.2M
    return fig, column


def _draw(ax: Axes, panel: Panel, values: Series, colour: str | None = None, annotate: bool = True) -> None:
    scale = 100.0 if panel.percent else 1.0
    ys = [y * scale for y in values.values]
    ax.plot(values.env_steps, ys, panel.style, label=panel.legend, color=colour, markersize=4)
    if annotate and panel.style == "o" and ys:  # sparse evaluations: the latest value next to its marker
        text = f"{ys[-1]:.1f} %" if panel.percent else f"{ys[-1]:.4g}"
        ax.annotate(
            text, (values.env_steps[-1], ys[-1]), textcoords="offset points", xytext=(-8, 0), ha="right", va="center"
        )
    if panel.percent:
        ax.set_ylim(-5, 105)
    ax.set_title(panel.title, fontsize=9, loc="left")
    ax.set_ylabel(panel.ylabel + (" (%)" if panel.percent else ""))
    ax.grid(alpha=0.3)


def _draw_episode_counts(ax: Axes, counts: Series) -> None:
    """Bars of the number of finished episodes behind each point of the completed-episode return."""
    twin = ax.twinx()
    width = _bar_width(counts.env_steps)
    twin.bar(counts.env_steps, counts.values, width=width, color="grey", alpha=0.3, label="episodes that ended")
    twin.set_ylabel("episodes that ended", color="dimgrey")
    twin.yaxis.set_major_locator(MaxNLocator(nbins=4, integer=True))
    twin.tick_params(axis="y", colors="dimgrey")
    ax.set_zorder(twin.get_zorder() + 1)  # the return line above the bars
    ax.patch.set_visible(False)
    lines, labels = ax.get_legend_handles_labels()
    bars, bar_labels = twin.get_legend_handles_labels()
    ax.legend([*lines, *bars], [*labels, f"{bar_labels[0]} (right axis)"], fontsize=8, loc="upper right")


def _bar_width(env_steps: tuple[int, ...]) -> float:
    """80 % of the smallest step between points (of the one point's x when there is one)."""
    gaps = [b - a for a, b in pairwise(env_steps) if b > a]
    return 0.8 * min(gaps, default=max(env_steps, default=1))


def _no_data(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)
    ax.set_yticks([])


def _save(fig: Figure, out: Path, legend_rows: int = 0) -> None:
    """Write atomically (temp file, rename): a reader never sees half a PNG."""
    legend_inches = 0.2 * legend_rows
    if legend_rows:
        fig.set_figheight(fig.get_figheight() + legend_inches)
    fig.tight_layout(rect=(0, legend_inches / fig.get_figheight(), 1, 1))
    tmp = out.with_suffix(".tmp.png")
    fig.savefig(tmp)
    plt.close(fig)
    tmp.replace(out)
