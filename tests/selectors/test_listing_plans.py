"""The claim states a listing reads through a partial index: their conditions must repeat
the index predicates term for term, or PostgreSQL cannot use the index and a page of them
walks every held row (hundreds of milliseconds at a million claims). These tests read the
plan with sequential scans priced out, so a tiny table still shows which index is usable."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import connection, transaction

from claims.models import WorkflowClaim
from claims.protocol.timing import ClaimTiming
from claims.selectors.claims import filter_condition
from tests.factories import make_claim

pytestmark = pytest.mark.django_db

TIMING = ClaimTiming(ttl_ms=30_000, renew_interval_ms=5_000)
NOW = 1_700_000_000_000


@pytest.fixture
def planner() -> Iterator[None]:
    if connection.vendor != "postgresql":
        pytest.skip(f"reads PostgreSQL's plans, not {connection.vendor}'s")
    make_claim("wf-held", engine="e-1")
    make_claim("wf-free", engine=None)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
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
