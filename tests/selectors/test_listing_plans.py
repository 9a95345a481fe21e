"""The claim states a listing reads through a partial index: their conditions must repeat
the index predicates term for term, or PostgreSQL cannot use the index and a page of them
walks every held row (hundreds of milliseconds at a million claims). These tests read the
plan with the other ways priced out, so a small table still shows which index is usable."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import connection, transaction

from claims.models import WorkflowClaim
from claims.protocol.timing import ClaimTiming
from claims.selectors.claims.conditions import filter_condition
from tests.factories import make_claim

pytestmark = pytest.mark.django_db

TIMING = ClaimTiming(ttl_ms=30_000, renew_interval_ms=5_000)
NOW = 1_700_000_000_000


@pytest.fixture
def planner() -> Iterator[None]:
    if connection.vendor != "postgresql":
        pytest.skip(f"reads PostgreSQL's plans, not {connection.vendor}'s")
    # Many held rows, few of each state read here: its partial index is the smallest.
    for n in range(60):
        make_claim(f"wf-held-{n:02d}", engine="e-1")
    make_claim("wf-free", engine=None)
    with transaction.atomic(), connection.cursor() as cursor:
        # Price out what would hide the index on a tiny table: a scan of the whole table,
        # a bitmap, and reading another index then sorting (the page is in id order).
        for setting in ("enable_seqscan", "enable_bitmapscan", "enable_sort"):
            cursor.execute(f"SET LOCAL {setting} = off")
        cursor.execute("ANALYZE claims_workflowclaim")
        yield


def plan(state: str, *, descending: bool = False) -> str:
    rows = WorkflowClaim.objects.filter(filter_condition(state, NOW, TIMING, {}))
    order = "-workflow_id" if descending else "workflow_id"
    return rows.order_by(order).values_list("workflow_id")[:51].explain()


@pytest.mark.parametrize(
    ("state", "index"),
    [("invalid", "workflow_claim_garbled_idx"), ("ownerless", "workflow_claim_unheld_idx")],
)
def test_a_state_is_read_from_its_partial_index(planner: None, state: str, index: str) -> None:
    assert index in plan(state)
    assert index in plan(state, descending=True)
