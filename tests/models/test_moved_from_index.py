"""The moves' index (claims.models.claims, migration 0030): its condition names exactly the
protocol's moves, and each engine's read of its own moves goes along it."""

from __future__ import annotations

import pytest
from django.db import connection

from claims.models.claims import MOVED_FROM_INDEX, MOVED_FROM_KINDS
from claims.protocol.records import MOVE_KINDS
from claims.store import OrmClaimStore


def test_the_index_condition_names_the_protocols_moves() -> None:
    assert sorted(MOVE_KINDS) == MOVED_FROM_KINDS


@pytest.mark.django_db
def test_an_engines_read_of_its_own_moves_goes_along_the_index() -> None:
    """On PostgreSQL, the production binding (SQLite, a handful of engines on one host,
    reads the time index, as every engine did before)."""
    from django.test.utils import CaptureQueriesContext

    if connection.vendor != "postgresql":
        pytest.skip("SQLite's planner reads the events' time index")
    with CaptureQueriesContext(connection) as queries:
        OrmClaimStore().read_claim_moves(since_ms=0, moved_from="engine-a")
    [read] = [q["sql"] for q in queries.captured_queries if "claimevent" in q["sql"]]
    with connection.cursor() as cursor:
        # With the table empty the planner would scan it: as on a fleet's table, not.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN {read}")
        plan = " ".join(str(row) for row in cursor.fetchall())
    assert MOVED_FROM_INDEX in plan, plan
