"""A run directory: resolved config, provenance, metrics, TensorBoard scalars, checkpoints, plots.

Layout::

    RUN/config.yaml         resolved configuration (loads back with `robo_rl.config.load_yaml`)
    RUN/meta.json           seed, git hash, versions, command, start time
    RUN/metrics.jsonl       one JSON object per training iteration (appended and flushed as it goes)
    RUN/tb/                 TensorBoard event files
    RUN/checkpoints/        latest.pt and numbered snapshots, each written atomically
    RUN/learning_curve.png  return vs environment steps
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from robo_rl.provenance import git_hash, versions

CONFIG_FILE = "config.yaml"
META_FILE = "meta.json"
METRICS_FILE = "metrics.jsonl"
CURVE_FILE = "learning_curve.png"
LATEST_CHECKPOINT = "latest.pt"


class RunDirectory:
    """Writes a run's artifacts. Use `create` for a new run and `open` to resume an existing one."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.checkpoints = path / "checkpoints"
        self._writer: Any = None

    @classmethod
    def create(cls, root: Path, name: str, seed: int, config_yaml: str, command: str) -> RunDirectory:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = root / name / f"{stamp}-seed{seed}"
        suffix = 1
        while path.exists():
            path = root / name / f"{stamp}-seed{seed}-{suffix}"
            suffix += 1
        path.mkdir(parents=True)
        run = cls(path)
        (path / CONFIG_FILE).write_text(config_yaml)
        meta = {
            "seed": seed,
            "git_hash": git_hash(),
            "versions": versions(),
            "command": command,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        (path / META_FILE).write_text(json.dumps(meta, indent=2) + "\n")
        return run

    @classmethod
    def open(cls, path: Path) -> RunDirectory:
        if not (path / CONFIG_FILE).is_file():
            raise FileNotFoundError(f"{path} is not a run directory (no {CONFIG_FILE})")
        return cls(path)

    @property
    def config_file(self) -> Path:
        return self.path / CONFIG_FILE

    @property
    def latest_checkpoint(self) -> Path:
        return self.checkpoints / LATEST_CHECKPOINT

    def meta(self) -> dict[str, Any]:
        return json.loads((self.path / META_FILE).read_text())

    def log(self, metrics: dict[str, float | int | None]) -> None:
        """Append one iteration's metrics to metrics.jsonl and TensorBoard (keys other than iteration/env_steps)."""
        with open(self.path / METRICS_FILE, "a") as f:
            f.write(json.dumps(metrics) + "\n")
        writer = self._tensorboard()
        step = int(metrics["env_steps"] or 0)
        for key, value in metrics.items():
            if key not in ("iteration", "env_steps") and value is not None and math.isfinite(value):
                writer.add_scalar(key.replace(".", "/"), value, step)

    def metrics(self) -> list[dict[str, Any]]:
        path = self.path / METRICS_FILE
        if not path.exists():
            return []
        # A crash can leave a half-written last line; every complete line is kept.
        rows = []
        for line in path.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return rows

    def truncate_metrics(self, after_iteration: int) -> None:
        """Drop metric rows newer than a checkpoint, so a resumed run does not log those iterations twice."""
        rows = [r for r in self.metrics() if r["iteration"] <= after_iteration]
        (self.path / METRICS_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))

    def plot_learning_curve(self) -> Path:
        from robo_rl.runners.learning_curve import plot_learning_curve

        out = self.path / CURVE_FILE
        plot_learning_curve(self.metrics(), out, title=self.path.name)
        return out

    def finish(self, save_checkpoint: Callable[[Path], None]) -> None:
        """End of training: write latest.pt through `save_checkpoint`, the learning curve, flush TensorBoard."""
        save_checkpoint(self.latest_checkpoint)
        self.plot_learning_curve()
        self.close()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def _tensorboard(self) -> Any:
        if self._writer is None:
            from torch.utils.tensorboard import SummaryWriter

            self._writer = SummaryWriter(log_dir=str(self.path / "tb"))
        return self._writer
