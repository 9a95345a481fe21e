"""Beat folding the kept fleet counts while engines sweep a dead session at once: every
delta is counted once, so the kept counts equal a scan of the rows when the race ends."""

from __future__ import annotations

import functools
import time
from typing import Any

import pytest
from django.db import OperationalError

from claims.models import FleetCountDelta
from claims.protocol import ClaimRegistry, ClaimTiming, SessionLeases
from claims.protocol.session_lease import EngineSessionLease
from claims.protocol.testing import FakeClock
from claims.selectors.fleet.snapshot import fleet_scan
from claims.services.fleet_counts import kept_fleet_scan
from claims.store import OrmClaimStore

from ._race_engine import race_in_threads
from .test_session_sweep_race import _strand

START_MS = 1_700_000_000_000
ENGINES = 3
CLAIMS = 600
CHUNK = 20
TAKE: dict[str, Any] = {"limit": CHUNK, "workflow_types": ["order"]}
TIMING = ClaimTiming(ttl_ms=30_000, renew_interval_ms=5_000)


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.django_db(transaction=True)
def test_folds_racing_the_writes_count_every_change_once():
    _strand([f"swept-{n:04d}" for n in range(CLAIMS)])
    kept_fleet_scan(now_ms=START_MS, timing=TIMING)  # the kept counts, before the race
    clock = FakeClock(START_MS)
    finished: list[str] = []  # the engines done sweeping (list.append is atomic)

    def engine(engine_id: str) -> ClaimRegistry:
        store = OrmClaimStore()
        session = EngineSessionLease(store, engine_id=engine_id, clock=clock, timing=TIMING)
        registry = ClaimRegistry(
            store, engine_id=engine_id, clock=clock, timing=TIMING, liveness=SessionLeases(session)
        )
        registry.session_epoch()
        return registry

    def sweep(registry: ClaimRegistry) -> dict[str, Any]:
        try:
            while len(_take(registry)) == CHUNK:
                time.sleep(0.002)  # beat's turn at the write lock, on SQLite
        finally:
            finished.append(registry.engine_id)
        return {}

    def fold() -> dict[str, Any]:
        folds = 0
        while len(finished) < ENGINES:
            kept_fleet_scan(now_ms=START_MS, timing=TIMING)
            folds += 1
        return {"folds": folds}

    registries = [engine(f"engine-{n}") for n in range(ENGINES)]
    reports = race_in_threads(
        {**{r.engine_id: functools.partial(sweep, r) for r in registries}, "beat": fold},
        lambda ms: None,
        timeout_s=60,
    )

    assert reports[-1]["folds"] >= 1, "no fold raced the sweep"
    kept = kept_fleet_scan(now_ms=START_MS, timing=TIMING)
    assert not FleetCountDelta.objects.exists()
    assert kept.as_json() == fleet_scan(now_ms=START_MS, timing=TIMING).as_json()
    assert sum(kept.by_holder.get(f"engine-{n}", 0) for n in range(ENGINES)) == CLAIMS


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.django_db(transaction=True)
def test_two_beats_folding_at_once_both_answer_and_count_once():
    """Two beats (a task overlapping the next) wait for each other rather than fail, each
    from a snapshot taken after the other's fold."""
    _strand([f"swept-{n:04d}" for n in range(200)])
    clock = FakeClock(START_MS)
    finished: list[str] = []

    def sweep() -> dict[str, Any]:
        store = OrmClaimStore()
        session = EngineSessionLease(store, engine_id="taker", clock=clock, timing=TIMING)
        registry = ClaimRegistry(
            store, engine_id="taker", clock=clock, timing=TIMING, liveness=SessionLeases(session)
        )
        try:
            while len(registry.take_over_session(("dead", 1), **TAKE)) == CHUNK:
                time.sleep(0.002)
        finally:
            finished.append("taker")
        return {}

    def beat() -> dict[str, Any]:
        folds = 0
        while not finished or folds < 5:
            kept_fleet_scan(now_ms=START_MS, timing=TIMING)
            folds += 1
        return {"folds": folds}

    race_in_threads({"taker": sweep, "beat-1": beat, "beat-2": beat}, lambda ms: None, timeout_s=60)

    kept = kept_fleet_scan(now_ms=START_MS, timing=TIMING)
    assert kept.as_json() == fleet_scan(now_ms=START_MS, timing=TIMING).as_json()
    assert kept.by_holder == {"taker": 200}


def _take(registry: ClaimRegistry) -> dict[str, Any]:
    """One chunk, as a pass takes it; on SQLite a chunk that waited out the busy timeout
    behind the others began no transaction and wrote nothing, and is sent again, as the
    next pass would send it."""
    for _ in range(20):
        try:
            return registry.take_over_session(("dead", 1), **TAKE)
        except OperationalError as error:
            if "locked" not in str(error):
                raise
            time.sleep(0.05)
    return registry.take_over_session(("dead", 1), **TAKE)
