"""Engines sweeping the same dead session at once, on one database: each claim is taken
exactly once, at the next epoch, with one event, and every one is taken."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from django.db import connection

from claims.models import ClaimEvent, Workflow, WorkflowClaim
from claims.protocol import ClaimRegistry, ClaimTiming, SessionLeases
from claims.protocol.session_lease import EngineSessionLease
from claims.protocol.testing import FakeClock
from claims.store import OrmClaimStore
from tests.factories import make_session

from ._race_engine import race_in_threads

START_MS = 1_700_000_000_000
ENGINES = 4
CLAIMS = 600
CHUNK = 50


def _strand(ids: list[str]) -> None:
    """Running workflows whose claims name the session 1 of "dead", closed long ago."""
    make_session("dead", epoch=1, expires_at_ms=1, at_ms=1, closed_at_ms=2)
    Workflow.objects.bulk_create(
        Workflow(
            workflow_id=wf,
            workflow_type="order",
            status="running",
            state={"input": None, "steps": {}},
            created_at_ms=0,
            updated_at_ms=0,
        )
        for wf in ids
    )
    WorkflowClaim.objects.bulk_create(
        WorkflowClaim(
            workflow_id=wf,
            epoch=1,
            holder_engine_id="dead",
            holder_epoch=1,
            holder_claimed_at_ms=0,
            holder_session_epoch=1,
        )
        for wf in ids
    )


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.django_db(transaction=True)
def test_engines_sweeping_one_dead_session_take_each_claim_exactly_once():
    ids = [f"swept-{n:04d}" for n in range(CLAIMS)]
    _strand(ids)
    clock = FakeClock(START_MS)
    timing = ClaimTiming(ttl_ms=30_000, renew_interval_ms=5_000)

    def engine(engine_id: str) -> ClaimRegistry:
        store = OrmClaimStore()
        session = EngineSessionLease(store, engine_id=engine_id, clock=clock, timing=timing)
        registry = ClaimRegistry(
            store, engine_id=engine_id, clock=clock, timing=timing, liveness=SessionLeases(session)
        )
        registry.session_epoch()  # open it before the race
        return registry

    def sweep(registry: ClaimRegistry) -> dict[str, Any]:
        taken: dict[str, int] = {}
        while True:
            chunk = registry.take_over_session(("dead", 1), limit=CHUNK, workflow_types=["order"])
            for workflow_id, (result, status) in chunk.items():
                assert (result.status, status) == ("acquired", "running")
                assert result.epoch is not None
                taken[workflow_id] = result.epoch
            if len(chunk) < CHUNK:
                return {"engine": registry.engine_id, "taken": taken}

    registries = [engine(f"engine-{n}") for n in range(ENGINES)]
    reports = race_in_threads(
        {r.engine_id: functools.partial(sweep, r) for r in registries},
        lambda ms: None,  # the clock stands still: every session stays open
        timeout_s=60,
    )
    won = {report["engine"]: report["taken"] for report in reports}

    winners = [wf for taken in won.values() for wf in taken]
    assert len(winners) == len(set(winners)), "a claim was taken by two engines"
    # SKIP LOCKED leaves a row another engine is taking to it, and each engine sweeps
    # until it finds no more: between them, every claim is taken.
    assert sorted(winners) == ids
    rows = {
        wf: (engine, epoch, holder_epoch)
        for wf, engine, epoch, holder_epoch in WorkflowClaim.objects.values_list(
            "workflow_id", "holder_engine_id", "epoch", "holder_epoch"
        )
    }
    for engine_id, taken in won.items():
        assert all(rows[wf] == (engine_id, 2, 2) and taken[wf] == 2 for wf in taken)
    events = list(
        ClaimEvent.objects.values_list("workflow_id", "kind", "epoch_before", "epoch_after")
    )
    assert sorted(events) == [(wf, "takeover", 1, 2) for wf in ids]
    if connection.vendor == "postgresql":
        assert sum(1 for taken in won.values() if taken) > 1, "the failure was not split"
