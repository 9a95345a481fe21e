"""The expiry sort in the engine-lease mode: a session holder stores no expiry of its own
and sorts by its session's, between the rows that carry one; holders of a missing, garbled
or moved-on session sort with the ownerless rows, last. Pages walk every row once in
order, and a page's queries grow with the session groups it reads, never with the claims."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from claims.models import WorkflowClaim
from claims.protocol.constants import MAX_SAFE_INTEGER
from claims.selectors import claim_list
from tests.factories import CLAIM_COLUMNS, make_session
from tests.selectors.claims.state_rows import NOW, TIMING

pytestmark = pytest.mark.django_db

# engine: (session epoch, expires, closed at)
SESSIONS = {
    "eng-a": (2, NOW + 20_000, None),
    "eng-b": (1, NOW + 5_000, None),
    "eng-c": (4, NOW + 5_000, None),  # the same expiry as eng-b: one group of two sessions
    "eng-d": (3, NOW - 3_000, NOW - 2_000),  # closed: its row still says when it expired
    "eng-g": (1, MAX_SAFE_INTEGER + 1, None),  # garbled: no expiry
}
# workflow id: (own expiry, engine, session epoch named) and, last, its effective expiry.
# Ids interleave across kinds, so ties between own rows and session groups are by id.
CLAIMS = {
    "w-01": (NOW + 5_000, "e-own", None, NOW + 5_000),
    "w-02": (None, "eng-b", 1, NOW + 5_000),
    "w-03": (None, "eng-a", 2, NOW + 20_000),
    "w-04": (None, None, None, None),  # ownerless
    "w-05": (None, "eng-c", 4, NOW + 5_000),
    "w-06": (NOW + 20_000, "e-own", None, NOW + 20_000),
    "w-07": (None, "eng-a", 1, None),  # eng-a's session moved on to epoch 2
    "w-08": (None, "eng-d", 3, NOW - 3_000),
    "w-09": (NOW - 1, "e-own", None, NOW - 1),
    "w-10": (None, "eng-b", 1, NOW + 5_000),
    "w-11": (None, "eng-none", 1, None),  # no session row at all
    "w-12": (None, "eng-a", 2, NOW + 20_000),
    "w-13": (None, "eng-g", 1, None),
    "w-14": (NOW + 30_000, "e-own", None, NOW + 30_000),
    "w-15": (NOW + 1_000, "eng-a", 2, NOW + 1_000),  # its own expiry comes first
    "w-16": (None, None, None, None),
    "w-17": (None, "eng-a", 2, NOW + 20_000),
    "w-18": (NOW + 5_000, "e-own", None, NOW + 5_000),
    "w-19": (None, "eng-c", 4, NOW + 5_000),
    "w-20": (NOW - 3_000, "e-own", None, NOW - 3_000),
}
# The session groups the claims name with an expiry: NOW-3000, NOW+5000, NOW+20000.
GROUPS = 3


def claim(workflow_id: str, own: int | None, engine: str | None, session_epoch: int | None):
    held = engine is not None
    values = (
        workflow_id,
        4,
        engine,
        4 if held else None,
        own,
        NOW - 30_000 if held else None,
        session_epoch,
    )
    return WorkflowClaim(**dict(zip(CLAIM_COLUMNS, values, strict=True)))


@pytest.fixture(autouse=True)
def fleet():
    for engine_id, (epoch, expires, closed) in SESSIONS.items():
        make_session(engine_id, epoch=epoch, expires_at_ms=expires, at_ms=NOW, closed_at_ms=closed)
    WorkflowClaim.objects.bulk_create(
        claim(workflow_id, own, engine, session_epoch)
        for workflow_id, (own, engine, session_epoch, _) in CLAIMS.items()
    )


def expected_order(key: str) -> list[str]:
    descending = key.startswith("-")
    ids = sorted(CLAIMS, reverse=descending)
    having = [wf for wf in ids if CLAIMS[wf][3] is not None]
    missing = [wf for wf in ids if CLAIMS[wf][3] is None]
    return sorted(having, key=lambda wf: (CLAIMS[wf][3], wf), reverse=descending) + missing


def walk(key: str, limit: int) -> list[str]:
    seen: list[str] = []
    cursor = None
    while True:
        page = claim_list(now_ms=NOW, timing=TIMING, sort=key, cursor=cursor, limit=limit)
        seen += [item.workflow_id for item in page.items]
        cursor = page.next_cursor
        if cursor is None:
            return seen


@pytest.mark.parametrize("key", ["expires_at", "-expires_at"])
def test_session_holders_sort_by_their_sessions_expiry(key):
    page = claim_list(now_ms=NOW, timing=TIMING, sort=key, limit=100)

    assert [item.workflow_id for item in page.items] == expected_order(key)
    assert page.next_cursor is None


def test_the_full_orders():
    """Spelled out once: ties go by id in the sort's direction; the rows without an
    effective expiry come last either way, in id order."""
    unknown = ["w-04", "w-07", "w-11", "w-13", "w-16"]
    assert expected_order("expires_at") == [
        "w-08", "w-20", "w-09", "w-15",
        "w-01", "w-02", "w-05", "w-10", "w-18", "w-19",
        "w-03", "w-06", "w-12", "w-17",
        "w-14",
        *unknown,
    ]  # fmt: skip
    assert expected_order("-expires_at") == [
        "w-14",
        "w-17", "w-12", "w-06", "w-03",
        "w-19", "w-18", "w-10", "w-05", "w-02", "w-01",
        "w-15", "w-09", "w-20", "w-08",
        *reversed(unknown),
    ]  # fmt: skip


def test_a_session_holder_shows_the_expiry_it_sorts_by():
    page = claim_list(now_ms=NOW, timing=TIMING, sort="expires_at", limit=100)
    shown = {item.workflow_id: item.expires_at_ms for item in page.items}

    for workflow_id, (_, _, session_epoch, effective) in CLAIMS.items():
        # Not w-15, a session holder with an expiry of its own too (no engine writes one):
        # the view shows its session's, the sort goes by its own.
        if (session_epoch is None or effective is not None) and workflow_id != "w-15":
            assert shown[workflow_id] == effective, workflow_id


@pytest.mark.parametrize("key", ["expires_at", "-expires_at"])
@pytest.mark.parametrize("limit", [1, 2, 5, 100])
def test_pages_walk_every_row_once_in_order(key, limit):
    """Pages end inside own rows, inside a session group, on ties between the two, and
    inside the rows without an expiry; the cursor carries the effective expiry."""
    assert walk(key, limit) == expected_order(key)


def page_queries(key: str, limit: int) -> list[int]:
    """The queries each page of a walk costs."""
    counts, cursor = [], None
    while True:
        with CaptureQueriesContext(connection) as queries:
            page = claim_list(now_ms=NOW, timing=TIMING, sort=key, cursor=cursor, limit=limit)
        counts.append(len(queries))
        cursor = page.next_cursor
        if cursor is None:
            return counts


def pair_queries() -> int:
    """Reading the (engine, session) pairs the claims name: one statement on PostgreSQL,
    one step per pair and one that finds the end on SQLite."""
    named = WorkflowClaim.objects.filter(holder_session_epoch__isnull=False)
    pairs = named.values_list("holder_engine_id", "holder_session_epoch").distinct().count()
    return 1 if connection.vendor == "postgresql" else pairs + 1


@pytest.mark.parametrize("key", ["expires_at", "-expires_at"])
@pytest.mark.parametrize("limit", [2, 5, 100])
def test_a_page_costs_a_bounded_number_of_queries(key, limit, django_assert_max_num_queries):
    """The own rows, the rows without an expiry (read twice at most), the pairs and their
    sessions, one read per session group, the ownerless rows' last holders and running
    workflows, and the sessions of the holders shown."""
    bound = 1 + 2 + pair_queries() + 1 + GROUPS + 2 + 1
    cursor = None
    while True:
        with django_assert_max_num_queries(bound):
            page = claim_list(now_ms=NOW, timing=TIMING, sort=key, cursor=cursor, limit=limit)
        cursor = page.next_cursor
        if cursor is None:
            break


@pytest.mark.parametrize("key", ["expires_at", "-expires_at"])
def test_more_claims_cost_no_more_queries(key):
    """Three times the session holders in the same sessions: the same queries per page."""
    before = page_queries(key, 4)
    WorkflowClaim.objects.bulk_create(
        claim(f"x-{engine}-{n:02d}", None, engine, SESSIONS[engine][0])
        for engine in ("eng-a", "eng-b", "eng-c", "eng-d")
        for n in range(10)
    )
    after = page_queries(key, 4)

    # Each page costs no more than the most a page cost before: the extra rows only make
    # more pages of the same reads.
    assert max(after) <= max(before)
    assert sorted(walk(key, 4)) == sorted(WorkflowClaim.objects.values_list("pk", flat=True))


def test_the_workflow_lease_mode_reads_as_before(django_assert_num_queries):
    """No claim names a session (sessions rows may remain from a switch): the own rows in
    one query, the rows without an expiry in a second, the same as any nullable column."""
    WorkflowClaim.objects.filter(pk="w-15").update(holder_session_epoch=None)
    WorkflowClaim.objects.filter(holder_session_epoch__isnull=False).update(
        holder_engine_id=None,
        holder_epoch=None,
        holder_expires_at_ms=None,
        holder_claimed_at_ms=None,
        holder_session_epoch=None,
    )
    own = sorted((CLAIMS[wf][0], wf) for wf in CLAIMS if CLAIMS[wf][0] is not None)

    with django_assert_num_queries(1):
        first = claim_list(now_ms=NOW, timing=TIMING, sort="expires_at", limit=3)
    assert [item.workflow_id for item in first.items] == [wf for _, wf in own[:3]]

    walked = walk("expires_at", 3)
    assert walked == [wf for _, wf in own] + sorted(set(CLAIMS) - {wf for _, wf in own})
    last_own = claim_list(now_ms=NOW, timing=TIMING, sort="expires_at", limit=len(own) - 1)
    # A page that runs past the own rows reads the rest as before: two queries, and two for
    # the ownerless rows' last holders and running workflows.
    with django_assert_num_queries(4):
        claim_list(now_ms=NOW, timing=TIMING, sort="expires_at", cursor=last_own.next_cursor)


@pytest.mark.parametrize("key", ["expires_at", "-expires_at"])
def test_ownerless_rows_sorted_by_expiry_read_no_sessions(key, django_assert_num_queries):
    """No session holder is ownerless: the rows with an expiry (none), the rows without,
    and the ownerless rows' last holders and running workflows."""
    with django_assert_num_queries(4):
        page = claim_list(now_ms=NOW, timing=TIMING, state="ownerless", sort=key)

    assert [item.workflow_id for item in page.items] == sorted(
        ["w-04", "w-16"], reverse=key.startswith("-")
    )
