"""claim_list: the SQL filter for each derived state agrees with derive_claim_state."""

from __future__ import annotations

import pytest

from claims.protocol.states import CLAIM_STATES, derive_claim_state
from claims.selectors import claim_list
from claims.store.rows import claim_row_from_values
from tests.selectors.claims.state_rows import NOW, ROWS, TIMING, create_state_rows

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def claims():
    create_state_rows()


def expected_state(wf):
    return derive_claim_state(claim_row_from_values(wf, *ROWS[wf]), NOW, TIMING)


def test_derived_states_follow_the_expiry_rule():
    """live up to expires_at, in grace up to expires + 2 x renew interval, then expired."""
    assert {wf: expected_state(wf) for wf in ROWS} == {
        "a-live": "live",
        "b-live-edge": "live",
        "c-grace": "in-grace",
        "d-grace-edge": "in-grace",
        "e-expired": "expired",
        "f-invalid-epoch": "invalid",
        "g-invalid-blank": "invalid",
        "h-invalid-negative": "invalid",
        "i-ownerless": "ownerless",
    }


@pytest.mark.parametrize("state", CLAIM_STATES)
def test_state_filter_in_sql_matches_the_derived_state(state, django_assert_num_queries):
    """Filtering by a state returns exactly the rows whose derived state it is, in one query
    after the sessions the claims name (none here: the pairs' walk finds none) (and for
    ownerless rows, which judge no session, two more: their last holders, which run)."""
    with django_assert_num_queries(3 if state == "ownerless" else 2):
        page = claim_list(now_ms=NOW, timing=TIMING, state=state, limit=100)
    assert [item.workflow_id for item in page.items] == sorted(
        wf for wf in ROWS if expected_state(wf) == state
    )
    assert all(item.state == state for item in page.items)


def test_keyset_pages_cover_every_claim_once_in_order():
    """Following next_cursor visits every claim once, in workflow-id order."""
    seen, cursor = [], None
    while True:
        page = claim_list(now_ms=NOW, timing=TIMING, cursor=cursor, limit=4)
        seen += [item.workflow_id for item in page.items]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == sorted(ROWS)


def test_engine_and_prefix_filters_combine():
    """Engine and id prefix narrow the listing together."""
    page = claim_list(now_ms=NOW, timing=TIMING, engine="e2", prefix="d-")
    assert [item.workflow_id for item in page.items] == ["d-grace-edge"]
    assert page.items[0].expires_in_ms == -10_000
