"""Running latency statistics: count, mean and max over all samples, percentiles over a recent window."""

from __future__ import annotations

import math
from collections import deque

import numpy as np

LATENCY_WINDOW = 10_000


class LatencyStats:
    """Latencies in seconds; `percentile(q)` covers the last `window` samples (nan before the first)."""

    def __init__(self, window: int = LATENCY_WINDOW) -> None:
        self.count = 0
        self.total = 0.0
        self.max = -math.inf
        self.recent: deque[float] = deque(maxlen=window)

    def record(self, latency: float) -> None:
        self.count += 1
        self.total += latency
        self.max = max(self.max, latency)
        self.recent.append(latency)

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else math.nan

    def percentile(self, q: float) -> float:
        return float(np.percentile(self.recent, q)) if self.recent else math.nan

    def maximum(self) -> float:
        return self.max if self.count else math.nan
