"""claim_list's sorts, scopes, search and last holders: every sort pages through every row
once in its order, a cursor is bound to its sort, and no query runs per row."""

from __future__ import annotations

import pytest

from claims.models import ClaimEvent, WorkflowStatus
from claims.protocol.errors import InvalidInputError
from claims.protocol.states import derive_claim_state
from claims.selectors import claim_list
from claims.selectors.claims.sorting import SORT_KEYS, STATE_RANK
from claims.store.rows import claim_row_from_values
from tests.factories import make_workflow
from tests.selectors.claims.state_rows import NOW, ROWS, TIMING, create_state_rows

pytestmark = pytest.mark.django_db

# More ownerless rows, to page through the rows without a value: a running one (stranded),
# a finished one with a release in its history, a pending one.
OWNERLESS = {"j-stranded": WorkflowStatus.RUNNING, "k-done": WorkflowStatus.COMPLETED}
UNHELD = (None, None, None, None, None)
ALL_ROWS = {**ROWS, "j-stranded": (4, *UNHELD), "k-done": (2, *UNHELD), "l-never": (1, *UNHELD)}
SORT_COLUMN = {"expires_at": 3, "epoch": 0, "claimed_at": 4, "holder": 1}


@pytest.fixture(autouse=True)
def claims():
    from claims.models import WorkflowClaim

    create_state_rows()
    for workflow_id in ("j-stranded", "k-done", "l-never"):
        epoch = ALL_ROWS[workflow_id][0]
        WorkflowClaim.objects.create(workflow_id=workflow_id, epoch=epoch)
    for workflow_id, status in OWNERLESS.items():
        make_workflow(workflow_id, status=status)
    make_workflow("a-live")  # running and held: not stranded


def state_of(workflow_id):
    return derive_claim_state(
        claim_row_from_values(workflow_id, *ALL_ROWS[workflow_id]), NOW, TIMING
    )


def expected_order(key):
    """The order the sort promises: the column (nulls last either way), ties by id."""
    field, descending = key.lstrip("-"), key.startswith("-")
    ids = sorted(ALL_ROWS, reverse=descending)
    if field == "workflow_id":
        return ids
    if field == "state":
        return sorted(ids, key=lambda wf: STATE_RANK[state_of(wf)], reverse=descending)
    column = SORT_COLUMN[field]
    having = [wf for wf in ids if ALL_ROWS[wf][column] is not None]
    missing = [wf for wf in ids if ALL_ROWS[wf][column] is None]
    return sorted(having, key=lambda wf: ALL_ROWS[wf][column], reverse=descending) + missing


def walk(key, limit, **filters):
    seen, cursor = [], None
    while True:
        page = claim_list(
            now_ms=NOW, timing=TIMING, sort=key, cursor=cursor, limit=limit, **filters
        )
        assert page.sort == key
        seen += [item.workflow_id for item in page.items]
        cursor = page.next_cursor
        if cursor is None:
            return seen


@pytest.mark.parametrize("key", SORT_KEYS)
@pytest.mark.parametrize("limit", [1, 2, 5, 100])
def test_every_sort_pages_through_every_row_once_in_order(key, limit):
    """Following next_cursor in each sort visits every claim once, in that sort's order,
    whatever the page size (pages end inside ties and inside the rows without a value)."""
    assert walk(key, limit) == expected_order(key)


@pytest.mark.parametrize("key", SORT_KEYS)
def test_a_page_costs_a_bounded_number_of_queries(key, django_assert_max_num_queries):
    """The rows with a value and the rows without one (or the sessions the claims name and
    one read per state for the state sort), then the ownerless rows' last holders and
    running workflows: never one per row."""
    with django_assert_max_num_queries(8 if key.lstrip("-") == "state" else 4):
        page = claim_list(now_ms=NOW, timing=TIMING, sort=key, limit=100)
    assert len(page.items) == len(ALL_ROWS)


def test_held_rows_in_the_default_sort_are_one_query_after_the_sessions(
    django_assert_num_queries,
):
    # The walk of the sessions claims name finds none here: no session row is read.
    with django_assert_num_queries(2):
        claim_list(now_ms=NOW, timing=TIMING, state="live")


@pytest.mark.parametrize(
    ("cursor_sort", "sort"),
    [
        ("expires_at", "-expires_at"),
        ("epoch", "workflow_id"),
        ("workflow_id", "epoch"),
        ("state", "holder"),
    ],
)
def test_a_cursor_from_another_sort_is_refused(cursor_sort, sort):
    """A cursor carries its sort; used with another it is bad input, not a wrong page."""
    cursor = claim_list(now_ms=NOW, timing=TIMING, sort=cursor_sort, limit=1).next_cursor
    with pytest.raises(InvalidInputError, match="sort"):
        claim_list(now_ms=NOW, timing=TIMING, sort=sort, cursor=cursor)


@pytest.mark.parametrize("cursor", ["k1.bm90IGpzb24", "k1.WyJlcG9jaCIsInRlbiIsIngiXQ"])
def test_a_damaged_cursor_is_refused(cursor):
    with pytest.raises(InvalidInputError, match="cursor"):
        claim_list(now_ms=NOW, timing=TIMING, sort="epoch", cursor=cursor)


def test_an_unknown_sort_is_refused():
    with pytest.raises(InvalidInputError, match="sort must be one of"):
        claim_list(now_ms=NOW, timing=TIMING, sort="colour")


def test_attention_leaves_out_ownerless_rows_of_workflows_not_running():
    """Held rows in every state and the stranded row; not the finished or unknown ones."""
    page = claim_list(now_ms=NOW, timing=TIMING, state="attention", limit=100)
    assert [item.workflow_id for item in page.items] == sorted(
        wf for wf in ALL_ROWS if ALL_ROWS[wf][1:] != UNHELD or wf == "j-stranded"
    )


def test_stranded_is_ownerless_with_a_running_workflow():
    page = claim_list(now_ms=NOW, timing=TIMING, state="stranded")
    assert [(item.workflow_id, item.state, item.stranded) for item in page.items] == [
        ("j-stranded", "ownerless", True)
    ]
    everything = claim_list(now_ms=NOW, timing=TIMING, state="all", limit=100)
    assert [item.workflow_id for item in everything.items if item.stranded] == ["j-stranded"]


@pytest.mark.parametrize(
    ("search", "expected"),
    [
        ("grace", ["c-grace", "d-grace-edge"]),
        ("GRACE", []),  # ids are case-sensitive, and so is the search
        ("-e", ["b-live-edge", "d-grace-edge", "e-expired", "f-invalid-epoch"]),
        ("zzz", []),
        # LIKE's wildcards are searched for as themselves (the trigram search is a LIKE).
        ("%ra", []),
        ("gr_ce", []),
        ("race", ["c-grace", "d-grace-edge"]),
    ],
)
def test_search_matches_any_part_of_the_id(search, expected):
    page = claim_list(now_ms=NOW, timing=TIMING, search=search, limit=100)
    assert [item.workflow_id for item in page.items] == expected


def test_search_combines_with_a_sort_and_its_pages():
    # Both at epoch 2: descending, the tie-breaker runs backwards too.
    assert walk("-epoch", 1, search="grace") == ["d-grace-edge", "c-grace"]


def test_a_released_claim_shows_its_last_holder_and_when(django_assert_num_queries):
    """The row forgot its holder; the events remember who held it and when it let go."""
    history = [
        ("acquired", "e7", NOW - 9_000),
        ("released", "e7", NOW - 5_000),
        ("rotated", None, NOW - 1_000),
    ]
    for kind, engine, at in history:
        ClaimEvent.objects.create(workflow_id="k-done", kind=kind, engine_id=engine, at_ms=at)
    ClaimEvent.objects.create(workflow_id="a-live", kind="acquired", engine_id="e1", at_ms=NOW)

    with django_assert_num_queries(3):
        page = claim_list(now_ms=NOW, timing=TIMING, state="ownerless")

    by_id = {item.workflow_id: item for item in page.items}
    assert (by_id["k-done"].last_holder_engine_id, by_id["k-done"].last_held_at_ms) == (
        "e7",
        NOW - 1_000,
    )
    assert by_id["l-never"].last_holder_engine_id is None
    assert by_id["l-never"].last_held_at_ms is None
