"""How long this process has run: what "time to the gate from process start" measures (imports included)."""

from __future__ import annotations

import os
from pathlib import Path


def seconds_since_process_start() -> float | None:
    """Seconds since this process started (interpreter start-up and imports included), from /proc; None where
    /proc is missing."""
    try:
        start_ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, IndexError, ValueError):
        return None
    return uptime - start_ticks / os.sysconf("SC_CLK_TCK")
