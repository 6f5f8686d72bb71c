"""Description of the machine a benchmark ran on, written into every `bench/results/*.json`."""

from __future__ import annotations

import datetime
import os
import platform
from pathlib import Path

import gymnasium
import torch

CPUINFO = Path("/proc/cpuinfo")


def cpu_model() -> str:
    """The CPU's marketing name from /proc/cpuinfo (Linux), else what `platform` knows."""
    if CPUINFO.exists():
        for line in CPUINFO.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def machine_info() -> dict:
    """Platform, CPU, library versions, torch threads and the UTC date, as JSON-ready values."""
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "gymnasium": gymnasium.__version__,
        "cuda_device": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
