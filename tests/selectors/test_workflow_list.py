"""The workflow listing: filters, sorts, keyset pages and counts per status, in two queries."""

from __future__ import annotations

import pytest

from claims.fleet_clock import fleet_clock
from claims.selectors.errors import BadCursorError
from claims.selectors.workflows.listing import (
    WorkflowFilters,
    workflow_list,
    workflow_status_counts_where,
)
from tests.factories import make_workflow

pytestmark = pytest.mark.django_db


def ids(page):
    return [row.workflow_id for row in page.items]


def every_page(filters, *, limit):
    """Walk the keyset pages to the end; the ids in the order they were listed."""
    now = fleet_clock()()
    seen, cursor = [], None
    while True:
        page = workflow_list(filters, now_ms=now, cursor=cursor, limit=limit)
        seen += ids(page)
        if page.next_cursor is None:
            return seen
        cursor = page.next_cursor


@pytest.fixture
def rows():
    # Two rows share an updated time, so the id breaks the tie on the keyset.
    make_workflow("wf-a", status="running", created_ago_ms=9_000, updated_ago_ms=1_000)
    make_workflow("wf-b", status="failed", created_ago_ms=8_000, updated_ago_ms=3_000)
    make_workflow("wf-c", status="failed", created_ago_ms=7_000, updated_ago_ms=3_000)
    make_workflow(
        "wf-d",
        status="completed",
        workflow_type="ledger",
        created_ago_ms=6_000,
        updated_ago_ms=2_000,
    )
    make_workflow("wf-e", status="cancelled", created_ago_ms=5_000, updated_ago_ms=4_000)


@pytest.mark.parametrize(
    ("sort", "order"),
    [
        ("updated", ["wf-a", "wf-d", "wf-c", "wf-b", "wf-e"]),
        ("created", ["wf-e", "wf-d", "wf-c", "wf-b", "wf-a"]),
        ("id", ["wf-a", "wf-b", "wf-c", "wf-d", "wf-e"]),
    ],
)
@pytest.mark.parametrize("limit", [1, 2, 50])
def test_every_sort_pages_through_each_row_once_in_order(rows, sort, order, limit):
    assert every_page(WorkflowFilters(sort=sort), limit=limit) == order


def test_type_status_and_time_filters_combine_and_counts_ignore_only_the_status(rows):
    now = fleet_clock()()
    filters = WorkflowFilters(status="failed", since_ms=now - 3_500, time_field="updated")

    page = workflow_list(filters, now_ms=now)

    assert ids(page) == ["wf-c", "wf-b"]
    assert page.status_counts["failed"] == 2
    assert page.status_counts["running"] == 1
    assert page.status_counts["completed"] == 1
    assert page.status_counts["cancelled"] == 0  # updated before `since`
    assert page.status_counts["suspended"] == 0
    assert page.total == 4

    by_type = workflow_list(WorkflowFilters(workflow_type="ledger"), now_ms=now)
    assert ids(by_type) == ["wf-d"]
    created = WorkflowFilters(time_field="created", until_ms=now - 7_500, sort="id")
    assert ids(workflow_list(created, now_ms=now)) == ["wf-a", "wf-b"]


def test_a_failed_row_carries_its_failure_summary_only(rows):
    make_workflow(
        "wf-x",
        status="failed",
        failure={"type": "KeyError", "message": "'sku'", "step": "price", "traceback": "T" * 9000},
    )

    row = next(
        r for r in workflow_list(WorkflowFilters(), now_ms=0).items if r.workflow_id == "wf-x"
    )

    assert (row.failure_type, row.failure_message, row.failure_step) == (
        "KeyError",
        "'sku'",
        "price",
    )
    assert not hasattr(row, "failure")


@pytest.mark.parametrize("cursor", ["nope", "12:", ":wf-a", "x1:wf-a"])
def test_a_cursor_this_sort_did_not_write_is_refused(cursor):
    with pytest.raises(BadCursorError):
        workflow_list(WorkflowFilters(sort="updated"), now_ms=0, cursor=cursor)


@pytest.mark.parametrize("n", [3, 60])
def test_a_page_and_its_counts_are_two_queries_whatever_the_rows(n, django_assert_num_queries):
    for i in range(n):
        make_workflow(f"wf-{i:03d}", status="failed" if i % 3 else "running", updated_ago_ms=i)

    with django_assert_num_queries(2):
        page = workflow_list(WorkflowFilters(status="failed"), now_ms=0, cursor="1:wf-999")

    assert page.total == n


def test_counts_are_one_grouped_query(rows, django_assert_num_queries):
    with django_assert_num_queries(1):
        counts, capped = workflow_status_counts_where(WorkflowFilters(workflow_type="order"))

    assert counts["failed"] == 2
    assert sum(counts.values()) == 4
    assert capped == ()


@pytest.mark.parametrize("time_field", ["updated", "created"])
def test_capped_counts_are_exact_to_the_cap_then_stop_there_in_one_query(
    time_field, django_assert_num_queries
):
    for i in range(5):
        make_workflow(f"wf-f{i}", status="failed", created_ago_ms=1_000, updated_ago_ms=1_000)
    for i in range(3):
        make_workflow(f"wf-r{i}", status="running", created_ago_ms=1_000, updated_ago_ms=1_000)
    make_workflow("wf-old", status="failed", created_ago_ms=90_000, updated_ago_ms=90_000)
    make_workflow("wf-t", status="failed", workflow_type="ledger", updated_ago_ms=1_000)
    now = fleet_clock()()
    recent = WorkflowFilters(workflow_type="order", time_field=time_field, since_ms=now - 5_000)

    with django_assert_num_queries(1):
        counts, capped = workflow_status_counts_where(recent, cap=3)

    # Three running: exactly the cap, exact. Five failed (the old one and the other
    # type's are outside the filters): stopped at the cap, and named.
    assert counts["running"] == 3
    assert counts["failed"] == 3
    assert capped == ("failed",)
    assert counts["completed"] == 0
    uncapped, none = workflow_status_counts_where(recent)
    assert (uncapped["failed"], uncapped["running"], none) == (5, 3, ())


def test_a_page_under_a_time_range_counts_up_to_the_cap(rows, monkeypatch):
    monkeypatch.setattr("claims.selectors.workflows.listing.COUNT_CAP", 1)
    now = fleet_clock()()

    ranged = workflow_list(WorkflowFilters(since_ms=now - 60_000), now_ms=now)
    whole = workflow_list(WorkflowFilters(), now_ms=now)

    assert ranged.status_counts["failed"] == 1
    assert ranged.capped_statuses == ("failed",)
    assert ranged.total_capped
    assert whole.status_counts["failed"] == 2  # no time range: counted in full
    assert not whole.total_capped
