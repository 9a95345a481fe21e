"""The engine-lease mode on the pages: a session holder's claim is in its session's state,
with its session's expiry, in the SQL the pages filter and count with and in the views of
a page of rows, exactly as derive_claim_state judges it (docs/design.md §12)."""

from __future__ import annotations

from collections import Counter

import pytest

from claims.models import WorkflowClaim
from claims.protocol.constants import MAX_SAFE_INTEGER
from claims.protocol.states import CLAIM_STATES, derive_claim_state
from claims.selectors import claim_list
from claims.selectors.claims.ownership import claim_snapshot, claim_view
from claims.selectors.claims.state_counts import claims_by_state
from claims.store import OrmClaimStore
from tests.factories import CLAIM_COLUMNS, make_session
from tests.selectors.claims.state_rows import NOW, ROWS, TIMING, create_state_rows

pytestmark = pytest.mark.django_db

# engine: (session epoch, expires, closed at)
SESSIONS = {
    "se-live": (2, NOW + 5_000, None),
    "se-live-edge": (1, NOW, None),
    "se-grace": (1, NOW - 1, None),
    "se-grace-edge": (1, NOW - 10_000, None),
    "se-expired": (3, NOW - 10_001, None),
    "se-closed": (1, NOW + 5_000, NOW - 100),  # closed by its engine: takeable at once
    "se-garbled": (1, MAX_SAFE_INTEGER + 1, None),
}
# workflow id: (engine, the session epoch the claim names, the state it is in)
SESSION_CLAIMS = {
    "s-live": ("se-live", 2, "live"),
    "s-live-edge": ("se-live-edge", 1, "live"),
    "s-grace": ("se-grace", 1, "in-grace"),
    "s-grace-edge": ("se-grace-edge", 1, "in-grace"),
    "s-expired": ("se-expired", 3, "expired"),
    "s-closed": ("se-closed", 1, "expired"),
    "s-old-session": ("se-live", 1, "invalid"),  # the engine's session moved on
    "s-missing": ("se-none", 1, "invalid"),  # no session row at all
    "s-garbled": ("se-garbled", 1, "invalid"),
}


@pytest.fixture(autouse=True)
def claims():
    create_state_rows()  # the workflow-lease mode's rows, side by side
    for engine_id, (epoch, expires, closed) in SESSIONS.items():
        make_session(engine_id, epoch=epoch, expires_at_ms=expires, at_ms=NOW, closed_at_ms=closed)
    WorkflowClaim.objects.bulk_create(
        WorkflowClaim(
            **dict(
                zip(
                    CLAIM_COLUMNS,
                    (workflow_id, 4, engine_id, 4, None, NOW - 30_000, session_epoch),
                    strict=True,
                )
            )
        )
        for workflow_id, (engine_id, session_epoch, _) in SESSION_CLAIMS.items()
    )


def protocol_states() -> dict[str, str]:
    rows = OrmClaimStore().read_claims([*ROWS, *SESSION_CLAIMS])
    return {wf: derive_claim_state(row, NOW, TIMING) for wf, row in rows.items()}


def test_the_protocol_judges_each_session_claim_by_its_session():
    judged = protocol_states()
    assert {wf: judged[wf] for wf in SESSION_CLAIMS} == {
        wf: state for wf, (_, _, state) in SESSION_CLAIMS.items()
    }


@pytest.mark.parametrize("state", CLAIM_STATES)
def test_the_state_filter_in_sql_agrees_with_the_protocol_for_both_kinds_of_holder(state):
    page = claim_list(now_ms=NOW, timing=TIMING, state=state, limit=200)

    listed = {item.workflow_id: item.state for item in page.items}
    judged = protocol_states()
    assert set(listed) == {wf for wf, s in judged.items() if s == state}
    assert set(listed.values()) <= {state}


def _add_live_sessions(n: int) -> None:
    for i in range(n):
        engine_id = f"se-more-{i}"
        make_session(engine_id, epoch=1, expires_at_ms=NOW + 5_000, at_ms=NOW)
        values = (f"s-more-{i}", 4, engine_id, 4, None, NOW - 30_000, 1)
        WorkflowClaim.objects.create(**dict(zip(CLAIM_COLUMNS, values, strict=True)))


@pytest.mark.parametrize("state", CLAIM_STATES)
def test_with_most_sessions_live_the_state_filter_still_agrees_with_the_protocol(state):
    # More live sessions than sessions in any other state: the live filter names the few
    # that are not live instead of the many that are.
    _add_live_sessions(10)
    page = claim_list(now_ms=NOW, timing=TIMING, state=state, limit=200)

    listed = {item.workflow_id for item in page.items}
    rows = OrmClaimStore().read_claims(
        [*ROWS, *SESSION_CLAIMS, *(f"s-more-{i}" for i in range(10))]
    )
    judged = {wf: derive_claim_state(row, NOW, TIMING) for wf, row in rows.items()}
    assert listed == {wf for wf, s in judged.items() if s == state}
    assert state != "live" or {f"s-more-{i}" for i in range(10)} <= listed


def test_the_state_counts_agree_with_the_protocol_in_one_scan_and_one_session_read(
    django_assert_num_queries,
):
    expected = Counter(protocol_states().values())

    # A grouped scan of the claims, then the sessions its groups name, each judged once.
    with django_assert_num_queries(2):
        counts = claims_by_state(WorkflowClaim.objects.all(), NOW, TIMING)

    assert counts == {state: expected.get(state, 0) for state in CLAIM_STATES}


def test_a_page_shows_each_session_claims_expiry_as_its_sessions_in_one_more_query(
    django_assert_num_queries,
):
    # The page, its holders' sessions, and the ownerless row's last holder and workflow.
    with django_assert_num_queries(4):
        page = claim_list(now_ms=NOW, timing=TIMING, state="all", limit=200)

    shown = {item.workflow_id: item for item in page.items}
    assert shown["s-live"].expires_at_ms == NOW + 5_000
    assert shown["s-live"].expires_in_ms == 5_000
    assert shown["s-grace"].expires_at_ms == NOW - 1
    assert shown["s-missing"].expires_at_ms is None
    assert {wf: shown[wf].state for wf in SESSION_CLAIMS} == {
        wf: state for wf, (_, _, state) in SESSION_CLAIMS.items()
    }
    assert shown["a-live"].expires_at_ms == ROWS["a-live"][3]  # its own expiry, as before


def test_one_claims_views_read_its_session():
    detail = claim_view("s-grace", now_ms=NOW, timing=TIMING)
    snapshot = claim_snapshot("s-grace", now_ms=NOW, timing=TIMING)

    assert detail is not None
    assert (detail.state, detail.expires_at_ms) == ("in-grace", NOW - 1)
    assert snapshot.state == "in-grace"
    assert snapshot.expiry is not None
    assert snapshot.expiry.expires_at_ms == NOW - 1
    assert claim_view("s-old-session", now_ms=NOW, timing=TIMING).state == "invalid"
