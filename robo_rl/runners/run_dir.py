"""A run directory: resolved config, provenance, metrics, TensorBoard scalars, checkpoints, plots.

Layout::

    RUN/config.yaml         resolved configuration (loads back with `robo_rl.config.load_yaml`)
    RUN/meta.json           seed, git hash, versions, command, torch threads, start time
    RUN/metrics.jsonl       one JSON object per training iteration (appended and flushed as it goes)
    RUN/tb/                 TensorBoard event files
    RUN/checkpoints/        latest.pt, the previous.pt it replaced (the fallback when latest.pt is damaged),
                            replay/ (off-policy: the replay buffer's chunk files) and numbered snapshots,
                            each written atomically
    RUN/learning_curve.png  evaluation return and success, training reward per step, vs environment steps
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from robo_rl.provenance import git_hash, torch_threads, versions

CONFIG_FILE = "config.yaml"
META_FILE = "meta.json"
METRICS_FILE = "metrics.jsonl"
CURVE_FILE = "learning_curve.png"
LATEST_CHECKPOINT = "latest.pt"


class RunLog(Protocol):
    """Where the training loop logs and checkpoints: a run directory, or another rank's share of one (its own
    checkpoint, no logs: `robo_rl.cli.distributed.RankRun`)."""

    path: Path
    checkpoints: Path

    @property
    def latest_checkpoint(self) -> Path: ...

    def log(self, metrics: dict[str, float | int | None]) -> None: ...

    def finish(self, save_checkpoint: Callable[[Path], None]) -> None: ...


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
            "torch_threads": torch_threads(),
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
        """meta.json; ValueError naming the file when it is missing, not JSON or not an object."""
        path = self.path / META_FILE
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
        except OSError as err:
            raise ValueError(f"{path}: cannot read ({err.strerror})") from None
        except ValueError as err:  # JSONDecodeError, UnicodeDecodeError
            raise ValueError(f"{path}: not JSON ({' '.join(str(err).split())[:120]})") from None
        if not isinstance(meta, dict):
            raise ValueError(f"{path}: expected a JSON object, got {type(meta).__name__}")
        return meta

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
        # A crash can leave a half-written last line; every complete row is kept, and lines that are no
        # metrics row (undecodable, not JSON, no integer iteration) are skipped.
        lines = path.read_bytes().decode("utf-8", errors="replace").splitlines()
        return [row for row in map(_metrics_row, lines) if row is not None]

    def truncate_metrics(self, after_iteration: int) -> None:
        """Drop metric rows newer than a checkpoint, so a resumed run does not log those iterations twice.

        The file is replaced atomically: a crash while truncating leaves the old rows, never half of them.
        """
        rows = [r for r in self.metrics() if r["iteration"] <= after_iteration]
        path = self.path / METRICS_FILE
        tmp = path.with_name(f".{METRICS_FILE}.tmp")
        with open(tmp, "w") as f:
            f.write("".join(json.dumps(r) + "\n" for r in rows))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

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


def _metrics_row(line: str) -> dict[str, Any] | None:
    """One metrics.jsonl line as a row: a JSON object with an integer `iteration`; None for anything else."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError:
        return None
    if not isinstance(row, dict) or not isinstance(row.get("iteration"), int):
        return None
    return row
