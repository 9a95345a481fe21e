"""The overview reads the fleet snapshot beat takes, and scans live without a fresh one."""

from __future__ import annotations

import pytest

from claims.models import FleetSnapshot, WorkflowClaim
from claims.protocol import ClaimTiming
from claims.selectors.fleet.overview import overview
from claims.selectors.fleet.snapshot import latest_fleet_scan
from claims.services.engines import fleet_snapshot_take

pytestmark = pytest.mark.django_db

NOW = 50_000_000
TIMING = ClaimTiming(ttl_ms=30_000, renew_interval_ms=5_000)


def claim(workflow_id, engine=None):
    return WorkflowClaim.objects.create(
        workflow_id=workflow_id,
        epoch=1,
        holder_engine_id=engine,
        holder_epoch=1 if engine else None,
        holder_expires_at_ms=NOW + 10_000 if engine else None,
        holder_claimed_at_ms=NOW if engine else None,
    )


def test_a_fresh_snapshot_is_read_in_one_query(django_assert_num_queries):
    """With a snapshot younger than two intervals, the aggregates cost a single query."""
    claim("a", engine="e1")
    fleet_snapshot_take(now_ms=NOW, timing=TIMING)

    with django_assert_num_queries(1):
        scan = latest_fleet_scan(now_ms=NOW + 9_000, timing=TIMING)

    assert scan.taken_at_ms == NOW
    assert scan.by_state["live"] == 1
    assert scan.by_holder == {"e1": 1}


def test_a_stale_snapshot_is_ignored_and_the_fleet_scanned_now():
    """A snapshot older than two renew intervals gives way to a scan at the current time."""
    fleet_snapshot_take(now_ms=NOW, timing=TIMING)
    claim("b", engine="e2")

    scan = latest_fleet_scan(now_ms=NOW + 10_001, timing=TIMING)

    assert scan.taken_at_ms == NOW + 10_001
    assert scan.by_holder == {"e2": 1}


def test_overview_shows_the_snapshot_figures_and_when_they_were_taken():
    """The overview reports the snapshot's counts and its time beside the current time."""
    claim("c", engine="e1")
    claim("d")
    fleet_snapshot_take(now_ms=NOW, timing=TIMING)
    WorkflowClaim.objects.filter(workflow_id="d").update(holder_engine_id="late")

    page = overview(now_ms=NOW + 3_000, timing=TIMING)

    assert page.scanned_at_ms == NOW
    assert page.as_of_ms == NOW + 3_000
    assert page.claims_by_state["ownerless"] == 1
    assert FleetSnapshot.objects.count() == 1
