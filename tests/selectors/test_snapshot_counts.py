"""The workflows list's counts per status and the reclaim page's totals: from beat's fleet
snapshot while it is fresh (at most two renew intervals old), counted from the rows
otherwise, and the same numbers either way; of one type too. A time filter is always
counted."""

from __future__ import annotations

import pytest

from claims.fleet_clock import fleet_clock
from claims.models import ReclaimCursor, Workflow
from claims.protocol.reclaim import CURSOR_NAME
from claims.protocol.timing import ClaimTiming
from claims.selectors.engines.listing import engine_detail
from claims.selectors.fleet.reclaim import reclaim_progress
from claims.selectors.workflows.listing import WorkflowFilters, workflow_list
from claims.services.engines import fleet_snapshot_take
from tests.factories import make_claim, make_engine, make_workflow

pytestmark = pytest.mark.django_db

TIMING = ClaimTiming(ttl_ms=30_000, renew_interval_ms=5_000)
FRESH_FOR = 2 * TIMING.renew_interval_ms


def counts(now_ms: int, filters: WorkflowFilters | None = None) -> dict[str, int]:
    page = workflow_list(filters or WorkflowFilters(), now_ms=now_ms, timing=TIMING)
    return {status: n for status, n in page.status_counts.items() if n}


def progress(now_ms: int) -> tuple[int, int, int]:
    found = reclaim_progress(now_ms=now_ms, timing=TIMING)
    return found.total, found.running, found.position


@pytest.fixture
def fleet() -> int:
    for n in range(3):
        make_workflow(f"wf-r{n}", status="running")
    make_workflow("wf-f", status="failed", workflow_type="ledger")
    ReclaimCursor.objects.create(
        name=CURSOR_NAME, last_workflow_id="wf-r0", updated_at_ms=0, updated_by="e-1"
    )
    return fleet_clock()()


def test_the_snapshot_and_a_count_agree(fleet: int) -> None:
    counted, counted_progress = counts(fleet), progress(fleet)

    fleet_snapshot_take(now_ms=fleet, timing=TIMING)

    assert counts(fleet) == counted == {"running": 3, "failed": 1}
    assert progress(fleet) == counted_progress == (4, 3, 2)  # wf-f and wf-r0 at the cursor


def test_a_fresh_snapshot_is_read_and_a_stale_one_is_not(fleet: int) -> None:
    fleet_snapshot_take(now_ms=fleet, timing=TIMING)
    make_workflow("wf-x", status="running")  # after the cursor

    # Within two renew intervals the snapshot's counts stand; the position is counted now.
    assert counts(fleet + FRESH_FOR) == {"running": 3, "failed": 1}
    assert progress(fleet + FRESH_FOR) == (4, 3, 2)
    # Older than that, the rows are counted now.
    assert counts(fleet + FRESH_FOR + 1) == {"running": 4, "failed": 1}
    assert progress(fleet + FRESH_FOR + 1) == (5, 4, 2)


def test_a_type_is_counted_by_the_snapshot_and_a_time_range_now(fleet: int) -> None:
    ledger, order = WorkflowFilters(workflow_type="ledger"), WorkflowFilters(workflow_type="order")
    counted = counts(fleet, ledger), counts(fleet, order)
    fleet_snapshot_take(now_ms=fleet, timing=TIMING)
    make_workflow("wf-new", status="failed", workflow_type="ledger")

    assert (counts(fleet, ledger), counts(fleet, order)) == counted
    assert counted == ({"failed": 1}, {"running": 3})
    assert counts(fleet, WorkflowFilters(workflow_type="invoice")) == {}  # none seen
    assert counts(fleet, WorkflowFilters(since_ms=0)) == {"running": 3, "failed": 2}
    # Stale: counted now.
    assert counts(fleet + FRESH_FOR + 1, ledger) == {"failed": 2}


def test_a_position_past_a_snapshot_behind_the_table_stays_within_it(fleet: int) -> None:
    fleet_snapshot_take(now_ms=fleet, timing=TIMING)
    for n in range(3):
        make_workflow(f"wf-a{n}", status="completed")  # before the cursor, after the snapshot
    ReclaimCursor.objects.filter(name=CURSOR_NAME).update(last_workflow_id="wf-zz")

    total, _, position = progress(fleet)

    assert Workflow.objects.count() == 7
    assert (total, position) == (4, 4)


def test_an_engines_claims_by_state_come_from_the_snapshot_while_it_is_fresh() -> None:
    make_engine("e-1")
    now = fleet_clock()()
    make_claim("wf-1", engine="e-1")
    make_claim("wf-2", engine="e-1", expires_in_ms=-120_000)  # expired

    def states(at: int) -> dict[str, int]:
        detail = engine_detail("e-1", now_ms=at, timing=TIMING)
        assert detail is not None
        return {state: n for state, n in detail.claims_by_state.items() if n}

    counted = states(now)
    fleet_snapshot_take(now_ms=now, timing=TIMING)
    make_claim("wf-3", engine="e-1")

    assert states(now) == counted == {"live": 1, "expired": 1}
    assert states(now + FRESH_FOR + 1) != counted  # stale: counted now, wf-3 too
