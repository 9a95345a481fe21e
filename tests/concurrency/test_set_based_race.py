"""Engines taking over the same stale claims set-based, at the same time, on one database."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from claims.models import ClaimEvent, WorkflowClaim
from claims.protocol import ClaimRegistry, ClaimTiming
from claims.protocol.testing import FakeClock
from claims.store import OrmClaimStore
from tests.factories import bulk_held_claims

START_MS = 1_700_000_000_000
ENGINES = 4
CLAIMS = 400


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.django_db(transaction=True)
def test_concurrent_batch_takeovers_grant_each_claim_exactly_once():
    """Four engines batch-take-over 400 dead claims at once: one winner per claim, no deadlock."""
    ids = [f"stale-{n:04d}" for n in range(CLAIMS)]
    bulk_held_claims(ids, engine="dead", expires_at_ms=1, claimed_at_ms=0)
    clock = FakeClock(START_MS)
    timing = ClaimTiming(ttl_ms=3_000, renew_interval_ms=1_000)
    barrier = threading.Barrier(ENGINES)
    won: dict[str, set[str]] = {}
    errors: list[BaseException] = []

    def engine(n: int) -> None:
        engine_id = f"engine-{n}"
        registry = ClaimRegistry(OrmClaimStore(), engine_id=engine_id, clock=clock, timing=timing)
        try:
            barrier.wait()
            # Each engine asks in a different order, as passes on different hosts would.
            order = ids[n::ENGINES] + [wf for i, wf in enumerate(ids) if i % ENGINES != n]
            results = registry.takeover_many(order)
            won[engine_id] = {wf for wf, r in results.items() if r.status == "acquired"}
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=engine, args=(n,)) for n in range(ENGINES)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    winners = [wf for owned in won.values() for wf in owned]
    assert len(winners) == len(set(winners)), "a claim was granted to two engines"
    rows = dict(WorkflowClaim.objects.values_list("workflow_id", "holder_engine_id"))
    for engine_id, owned in won.items():
        assert all(rows[wf] == engine_id for wf in owned)
    assert all(row.epoch == 2 for row in WorkflowClaim.objects.filter(workflow_id__in=winners))
    events = ClaimEvent.objects.filter(kind="takeover")
    assert events.count() == len(winners)
    assert set(events.values_list("workflow_id", flat=True)) == set(winners)
    # Rows skipped while another engine held their lock are the only ones not yet taken.
    untaken = WorkflowClaim.objects.filter(holder_engine_id="dead").count()
    assert len(winners) + untaken == CLAIMS
    assert len(winners) > 0
