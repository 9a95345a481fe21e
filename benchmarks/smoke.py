"""Every part at a few hundred rows: that each still runs to its tables, not what it
measures (``scripts/bench --smoke``, and tests/test_benchmarks_smoke.py in the suite on
both databases). The figures of a smoke run mean nothing and are not kept.

The sizes are the parts' own module constants, set for the duration of the run, so the
code that runs is the code a full run runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from importlib import import_module
from typing import Any

from claims.protocol import ClaimTiming

SIZES: dict[str, dict[str, Any]] = {
    "benchmarks.setup": {"COLLECT_GARBAGE": False},
    "benchmarks.parts": {
        "RENEW_SIZES": (300,),
        "LARGE_RENEW_SIZES": (300,),
        "PAGES_PARKED": 300,
        "SESSION_FAILOVER_WORKFLOWS": 200,
    },
    "benchmarks.renew": {"REPS": 2},
    "benchmarks.reclaim": {
        "WORKFLOWS": 600,
        "LIVE_HELD": 100,
        "DEAD_HELD": 20,
        "UNHELD_INDEXED": 15,
        "UNINDEXED": 10,
        "UNINDEXED_FINISHED": 10,
        "STRANDED": 45,
        "DISCOVERY_REPS": 1,
        "PASS_REPS": 1,
    },
    "benchmarks.reclaim_scale": {
        "POINTS": ((200, 20), (600, 20), (600, 60)),
        "LARGE_POINTS": ((200, 20), (600, 20), (600, 60)),
        "REPS": 1,
    },
    # The real clock: a shorter TTL keeps each failover to about two seconds.
    "benchmarks.failover": {
        "WORKFLOWS": 200,
        "TIMING": ClaimTiming(ttl_ms=900, renew_interval_ms=300),
    },
    "benchmarks.micro_sides": {"OPS": 100, "WARMUP": 20},
    "benchmarks.micro": {"BLOCK": 20},
    "benchmarks.session_renew": {
        "SIZES": (100, 300),
        "REPS": {"workflow-lease": 1, "engine-lease": 2},
    },
    "benchmarks.fleet_scale": {
        "TOTAL": 1_000,
        "ENGINES": 4,
        "ONE_ENGINE_SHARE": 250,
        "REPS": 1,
    },
    "benchmarks.fleet_discovery": {
        "TOTAL": 1_000,
        "ENGINE_COUNTS": (2, 3),
        "INTERVAL_MS": 500,
        "WARMUP_TICKS": 1,
        "MEASURED_TICKS": 4,  # a tick slipped under load still leaves each engine a pass
    },
    "benchmarks.mass_failover": {
        "TOTAL": 1_000,
        "LIVE": 3,
        "DEAD": 2,
        "TIMING": ClaimTiming(renew_interval_ms=500),
    },
    "benchmarks.pages_fleet": {
        "CLAIMS": 600,
        "ENGINES": 8,
        "HELD_LIVE": 200,
        "IN_GRACE": 10,
        "EXPIRED": 20,
        "INVALID": 5,
        "OWNERLESS_RUNNING": 5,
        "UNINDEXED": 5,
        "EVENTS_PER_FEATURED": 8,
        "REDRIVES": 4,
    },
    "benchmarks.pages_endpoints": {"UNBOUNDED_REPS": 1},
    "benchmarks.bulk": {
        "RELEASED": 300,
        "ENGINES": 2,
        "ENGINE_CLAIMS": 50,
        "REPS": 1,
        "RENEW_ROUNDS": 2,
        "BASELINE_BATCHES": (50, 300),
        "MILLION": 600,
        "MILLION_ENGINES": 8,
        "PREVIEW_REPS": 1,
    },
    "benchmarks.pages": {"WARMUP": 0, "REPS": 1, "SNAPSHOT_REPS": 1},
}


@contextmanager
def small_sizes() -> Iterator[None]:
    """Set every part's sizes to SIZES for the block, and put them back after."""
    saved: list[tuple[Any, str, Any]] = []
    try:
        for module_name, sizes in SIZES.items():
            module = import_module(module_name)
            for name, value in sizes.items():
                if not hasattr(module, name):
                    raise AttributeError(f"{module_name} has no size {name} to shrink")
                saved.append((module, name, getattr(module, name)))
                setattr(module, name, value)
        yield
    finally:
        for module, name, value in reversed(saved):
            setattr(module, name, value)
