"""The claim state counted in SQL (one CASE) agrees with derive_claim_state row by row."""

from __future__ import annotations

from collections import Counter

import pytest

from claims.models import WorkflowClaim
from claims.protocol import ClaimTiming
from claims.protocol.states import CLAIM_STATES, derive_claim_state
from claims.selectors.derived import claims_by_state, claims_by_state_and_holder
from claims.store.rows import claim_row_from_values

pytestmark = pytest.mark.django_db

NOW = 10_000_000
TIMING = ClaimTiming(ttl_ms=30_000, renew_interval_ms=5_000)  # grace 10 s

ROWS = {
    # workflow id: (epoch, engine, holder epoch, expires, claimed)
    "a-live": (3, "e1", 3, NOW + 5_000, NOW - 25_000),
    "b-live-edge": (1, "e1", 1, NOW, NOW - 30_000),
    "c-grace": (2, "e2", 2, NOW - 1, NOW - 30_001),
    "d-grace-edge": (2, "e2", 2, NOW - 10_000, NOW - 40_000),
    "e-expired": (5, "e2", 5, NOW - 10_001, NOW - 40_001),
    "f-invalid-epoch": (7, "e1", 6, NOW + 5_000, NOW),
    "g-invalid-blank": (1, "", 1, NOW + 5_000, NOW),
    "h-invalid-negative": (1, "e3", 1, -5, NOW),
    "i-ownerless": (9, None, None, None, None),
}


@pytest.fixture(autouse=True)
def claims():
    WorkflowClaim.objects.bulk_create(
        WorkflowClaim(
            workflow_id=wf,
            epoch=epoch,
            holder_engine_id=engine,
            holder_epoch=holder_epoch,
            holder_expires_at_ms=expires,
            holder_claimed_at_ms=claimed,
        )
        for wf, (epoch, engine, holder_epoch, expires, claimed) in ROWS.items()
    )


def test_sql_case_counts_match_the_protocol_rule(django_assert_num_queries):
    """Every state is present and counted as derive_claim_state judges each row, in one query."""
    expected = Counter(
        derive_claim_state(claim_row_from_values(wf, *values), NOW, TIMING)
        for wf, values in ROWS.items()
    )

    with django_assert_num_queries(1):
        counts = claims_by_state(WorkflowClaim.objects.all(), NOW, TIMING)

    assert counts == {state: expected.get(state, 0) for state in CLAIM_STATES}


def test_holder_counts_leave_out_blank_and_missing_holders():
    """Per-engine counts name real engines only: a blank engine id is not an engine."""
    _, by_holder = claims_by_state_and_holder(WorkflowClaim.objects.all(), NOW, TIMING)

    assert by_holder == {"e1": 3, "e2": 3, "e3": 1}
