"""The insert-only table of claimed ids behind the claims list's substring search on
PostgreSQL (claims.models.id_search): every claim row's id reaches it, however the row
was written, and a rare search reads it through the trigram index."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from claims.models import ClaimIdSearch, WorkflowClaim
from claims.protocol import ClaimMetrics, ClaimRegistry, ClaimTiming
from claims.protocol.testing import FakeClock
from claims.selectors import claim_list
from claims.selectors.claims.search import with_substring
from claims.store import OrmClaimStore
from tests.factories import make_claim

pytestmark = pytest.mark.django_db

TIMING = ClaimTiming(ttl_ms=30_000, renew_interval_ms=5_000)
NOW = 1_700_000_000_000


@pytest.fixture(autouse=True)
def postgresql() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the id table and its trigram index are PostgreSQL's")


def registry(engine_id: str) -> ClaimRegistry:
    return ClaimRegistry(
        OrmClaimStore(),
        engine_id=engine_id,
        clock=FakeClock(NOW),
        timing=TIMING,
        metrics=ClaimMetrics(),
    )


def found(search: str) -> list[str]:
    page = claim_list(now_ms=NOW, timing=TIMING, state="all", search=search, limit=100)
    return [item.workflow_id for item in page.items]


def test_every_claim_row_written_reaches_the_id_table_once() -> None:
    # The id table is insert-only and unmanaged: a flush between transactional tests on
    # this worker leaves their ids in it. This test counts every row, so it starts empty.
    ClaimIdSearch.objects.all().delete()
    engine = registry("e-1")
    assert engine.acquire("order-one").status == "acquired"  # one row: a CAS insert
    many = engine.acquire_many(["order-two", "order-three"])  # a set-based insert
    assert {r.status for r in many.values()} == {"acquired"}
    make_claim("order-four", engine=None)  # through the ORM
    engine.release("order-one")
    assert engine.acquire("order-one").status == "acquired"  # written again, not added again
    ids = sorted(ClaimIdSearch.objects.values_list("workflow_id", flat=True))
    assert ids == ["order-four", "order-one", "order-three", "order-two"]
    assert found("der-t") == ["order-three", "order-two"]
    assert found("four") == ["order-four"]


def test_an_id_in_the_table_without_its_claim_row_is_not_listed() -> None:
    # The table may only ever hold more ids than the claims (never fewer): the listing
    # reads the claim rows it names.
    ClaimIdSearch.objects.create(workflow_id="order-ghost")
    make_claim("order-real")
    assert found("order") == ["order-real"]


def test_emptying_the_claims_table_empties_the_id_table() -> None:
    make_claim("order-one")
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE claims_workflowclaim CASCADE")
    assert not ClaimIdSearch.objects.exists()
    make_claim("order-two")
    assert list(ClaimIdSearch.objects.values_list("workflow_id", flat=True)) == ["order-two"]


def test_a_search_of_three_characters_finds_its_ids_through_the_trigram_index() -> None:
    for n in range(30):
        make_claim(f"wf-{n:03d}")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE claims_claimidsearch")
        # Price out reading every id, from the table or its primary key: a small table.
        for setting in ("enable_seqscan", "enable_indexscan", "enable_indexonlyscan"):
            cursor.execute(f"SET LOCAL {setting} = off")
        with CaptureQueriesContext(connection) as queries:
            rows = with_substring(WorkflowClaim.objects.all(), "017")
        (lookup,) = queries.captured_queries
        cursor.execute(f"EXPLAIN {lookup['sql']}")
        plan = "\n".join(line for (line,) in cursor.fetchall())
    assert "claims_claimidsearch_trgm" in plan
    # The claim rows are then read by primary key, from a list of the ids found.
    assert "Index Cond: ((workflow_id)::text = " in rows.explain()
    assert found("017") == ["wf-017"]


def test_a_fragment_matching_more_ids_than_the_candidates_reads_the_claim_rows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("claims.selectors.claims.search.SEARCH_CANDIDATES", 5)
    for n in range(12):
        make_claim(f"wf-{n:03d}")
    make_claim("other-1")
    plan = with_substring(WorkflowClaim.objects.all(), "wf-").explain()
    assert "strpos" in plan
    assert found("wf-") == [f"wf-{n:03d}" for n in range(12)]
    assert found("wf-01") == ["wf-010", "wf-011"]  # five or fewer: by primary key


def test_a_shorter_search_reads_the_claim_rows() -> None:
    for n in range(30):
        make_claim(f"wf-{n:03d}")
    with CaptureQueriesContext(connection) as queries:
        plan = with_substring(WorkflowClaim.objects.all(), "17").explain()
    assert "claims_claimidsearch" not in queries.captured_queries[0]["sql"]
    assert "strpos" in plan
    assert found("17") == ["wf-017"]
