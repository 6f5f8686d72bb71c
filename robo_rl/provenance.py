"""Where a result came from: git commit of the robo_rl source tree and library versions."""

from __future__ import annotations

import platform
import subprocess
from pathlib import Path

import torch

import robo_rl

_SOURCE_ROOT = Path(__file__).resolve().parent.parent


def git_hash() -> str:
    """Commit of the robo_rl checkout, suffixed `-dirty` with uncommitted changes; `unknown` outside git."""
    try:
        commit = _git("rev-parse", "HEAD")
        dirty = _git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{commit}-dirty" if dirty else commit


def _git(*args: str) -> str:
    out = subprocess.run(
        ["git", "-C", str(_SOURCE_ROOT), *args], capture_output=True, text=True, check=True, timeout=10
    )
    return out.stdout.strip()


def torch_threads() -> int:
    """torch's intra-op CPU threads in this process (`robo-rl ... --threads N` sets them)."""
    return torch.get_num_threads()


def versions() -> dict[str, str]:
    return {
        "robo_rl": robo_rl.__version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
