"""Description of the machine a benchmark ran on, written into every `bench/results/*.json`."""

from __future__ import annotations

import datetime
import math
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


BUSY_LOAD = 0.5
"""1-minute load average above which a benchmark warns that other processes are distorting the timings."""


def warn_if_busy() -> float:
    """The 1-minute load average, with a warning when other processes are likely competing for the CPU."""
    load = os.getloadavg()[0]
    if load > BUSY_LOAD:
        print(f"warning: load average {load:.2f} at start; other processes will inflate the timings", flush=True)
    return load


def warm_up_torch() -> None:
    """Pay torch's one-time costs (kernel selection, allocator, autograd set-up) before any clock starts, so
    that the first method timed is not charged for them. The same small MLP update serves every method."""
    net = torch.nn.Sequential(torch.nn.Linear(3, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1))
    optimizer = torch.optim.Adam(net.parameters())
    for batch in (1, 64, 256, 1024):
        loss = net(torch.randn(batch, 3)).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None
