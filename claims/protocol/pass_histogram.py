"""A cumulative pass-duration histogram an engine keeps and persists with its heartbeat.

Engines are separate processes from the web; persisting cumulative buckets lets
/metrics sum them over every engine ever seen, so the series never go down.
"""

from __future__ import annotations

import bisect
import threading
from typing import Any

BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def summed_histograms(summaries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The ``histograms`` of several pass summaries added pass by pass. A histogram whose
    buckets do not match BUCKETS_S (written by another version) is left out."""
    size = len(BUCKETS_S) + 1
    summed: dict[str, dict[str, Any]] = {}
    for summary in summaries:
        for name, data in (summary.get("histograms") or {}).items():
            counts = data.get("counts") if isinstance(data, dict) else None
            if not isinstance(counts, list) or len(counts) != size:
                continue
            into = summed.setdefault(name, {"counts": [0] * size, "sum": 0.0})
            into["counts"] = [a + int(b) for a, b in zip(into["counts"], counts, strict=True)]
            into["sum"] = round(into["sum"] + float(data.get("sum", 0.0)), 6)
    return summed


class PassHistogram:
    """Counts of pass durations per bucket of BUCKETS_S (plus +Inf), and their sum."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = [0] * (len(BUCKETS_S) + 1)  # the last bucket is +Inf
        self._sum = 0.0

    def observe(self, seconds: float) -> None:
        with self._lock:
            self._counts[bisect.bisect_left(BUCKETS_S, seconds)] += 1
            self._sum += seconds

    def as_json(self) -> dict[str, Any]:
        with self._lock:
            return {"counts": list(self._counts), "sum": round(self._sum, 6)}
