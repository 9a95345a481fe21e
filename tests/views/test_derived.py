"""The claim state counted in SQL (one CASE) agrees with derive_claim_state row by row."""

from __future__ import annotations

from collections import Counter

import pytest

from claims.models import WorkflowClaim
from claims.protocol.states import CLAIM_STATES, derive_claim_state
from claims.selectors.claims.state_counts import claims_by_state, claims_by_state_and_holder
from claims.store.rows import claim_row_from_values
from tests.selectors.claims.state_rows import NOW, ROWS, TIMING, create_state_rows

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def claims():
    create_state_rows()


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
    counted = claims_by_state_and_holder(WorkflowClaim.objects.all(), NOW, TIMING)

    assert counted.by_holder == {"e1": 3, "e2": 3, "e3": 1}
    assert set(counted.by_holder_state) == {"e1", "e2", "e3"}
    assert {e: sum(s.values()) for e, s in counted.by_holder_state.items()} == counted.by_holder
