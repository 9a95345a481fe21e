"""The scan cursor under a pace: an engine that finds the cursor row locked leaves the
page to the engine reading it, instead of queueing behind it (docs/design.md §4)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from claims.models import ReclaimCursor
from claims.protocol.records import ScanPage
from claims.store import OrmClaimStore
from tests import factories

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="row locks are PostgreSQL's; SQLite runs one write transaction at a time",
    ),
]

PACE_MS = 2_500
MOVED_AT_MS = 1_000
LATER_MS = MOVED_AT_MS + 10 * PACE_MS


def _scan(store: OrmClaimStore, *, now_ms: int, paced_ms: int) -> ScanPage:
    return store.scan_unheld_running(
        cursor_name="default", limit=2, scanned_by="b", now_ms=now_ms, paced_ms=paced_ms
    )


def test_a_paced_scan_leaves_the_page_to_the_engine_holding_the_cursor_row():
    for n in range(4):
        factories.make_workflow(f"wf-{n}")
    store = OrmClaimStore()
    assert _scan(store, now_ms=MOVED_AT_MS, paced_ms=0).scanned == 2
    locked, release = threading.Event(), threading.Event()

    def hold_the_cursor() -> None:
        try:
            with transaction.atomic():
                ReclaimCursor.objects.select_for_update().get(name="default")
                locked.set()
                assert release.wait(10)
        finally:
            connection.close()

    holder = threading.Thread(target=hold_the_cursor)
    holder.start()
    try:
        assert locked.wait(10)
        with connection.cursor() as cursor:
            # A scan that queued on the lock fails here instead of hanging the test.
            cursor.execute("SET lock_timeout = '2s'")
        assert _scan(store, now_ms=LATER_MS, paced_ms=PACE_MS) == ScanPage([], 0, False)
    finally:
        release.set()
        holder.join(10)
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")

    row = ReclaimCursor.objects.get(name="default")
    assert (row.last_workflow_id, row.updated_at_ms) == ("wf-1", MOVED_AT_MS)
    page = _scan(store, now_ms=LATER_MS, paced_ms=PACE_MS)
    assert (page.candidates, page.scanned) == (["wf-2", "wf-3"], 2)
