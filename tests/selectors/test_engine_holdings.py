"""The engines list's "holding" column: from beat's fleet snapshot while it is fresh (at
most two renew intervals old, as the overview reads it), counted from the claim rows
otherwise, and the same numbers either way."""

from __future__ import annotations

import pytest

from claims.fleet_clock import fleet_clock
from claims.models import FleetSnapshot
from claims.protocol.timing import ClaimTiming
from claims.selectors.engines.listing import engine_list
from claims.services.engines import fleet_snapshot_take
from tests.factories import make_claim, make_engine

pytestmark = pytest.mark.django_db

TIMING = ClaimTiming(ttl_ms=30_000, renew_interval_ms=5_000)


def holdings(now_ms: int) -> dict[str, int]:
    listing = engine_list(now_ms=now_ms, timing=TIMING)
    return {row.engine.engine_id: row.holding for row in listing.rows}


def test_the_snapshot_and_a_count_agree() -> None:
    make_engine("e-1")
    make_engine("e-2")
    for n in range(3):
        make_claim(f"wf-{n}", engine="e-1")
    make_claim("wf-free", engine=None)
    assert not FleetSnapshot.objects.exists()
    now = fleet_clock()()
    counted = holdings(now)

    fleet_snapshot_take(now_ms=now, timing=TIMING)
    from_snapshot = holdings(now)

    assert counted == from_snapshot == {"e-1": 3, "e-2": 0}


def test_a_fresh_snapshot_is_read_and_a_stale_one_is_not() -> None:
    now = fleet_clock()()
    make_engine("e-1")
    fleet_snapshot_take(now_ms=now, timing=TIMING)  # e-1 holds nothing yet
    make_claim("wf-1", engine="e-1")

    # Within two renew intervals the snapshot's count stands (the page says as of when).
    assert holdings(now + 2 * TIMING.renew_interval_ms) == {"e-1": 0}
    # Older than that, the rows are counted now.
    assert holdings(now + 2 * TIMING.renew_interval_ms + 1) == {"e-1": 1}
