"""Beat's fleet snapshot history: the last hour whole, one row a minute for a day, no more."""

from __future__ import annotations

import pytest

from claims.conf import MINUTE_MS
from claims.models import ClaimCounter, Engine, FleetSnapshotHistory, WorkflowClaim
from claims.protocol import ClaimTiming
from claims.services.engines import fleet_snapshot_take
from claims.services.fleet_history import (
    FULL_RESOLUTION_MS,
    RETAINED_MS,
    fleet_history_prune,
    fleet_history_record,
    thin_before_ms,
)

pytestmark = pytest.mark.django_db

HOUR_MS = 3_600_000
# A minute boundary, so "an hour ago" is one too and the cases below read plainly.
NOW = 1_800_000_000_000 - 1_800_000_000_000 % MINUTE_MS
TIMING = ClaimTiming(ttl_ms=30_000, renew_interval_ms=5_000)


def kept() -> list[int]:
    return list(
        FleetSnapshotHistory.objects.order_by("taken_at_ms").values_list("taken_at_ms", flat=True)
    )


def record(*times: int) -> None:
    for at in times:
        fleet_history_record(taken_at_ms=at, data={"counters": {"acquired": at % 97}})


def test_the_last_hour_is_kept_whole():
    """Every snapshot of the last hour stays, five seconds apart, up to the boundary itself."""
    times = [NOW - HOUR_MS + n * 5_000 for n in range(720)]
    record(*times)

    assert fleet_history_prune(now_ms=NOW) == 0

    assert kept() == times


def test_older_rows_are_thinned_to_the_first_of_each_minute():
    """Before the hour, of each minute's rows only the earliest stays."""
    minute = NOW - HOUR_MS - 10 * MINUTE_MS
    record(minute + 0, minute + 5_000, minute + 55_000)
    record(minute + MINUTE_MS + 20_000, minute + MINUTE_MS + 40_000)
    record(NOW - HOUR_MS - 5_000)  # alone in the minute before the cut-off

    assert fleet_history_prune(now_ms=NOW) == 3

    assert kept() == [minute, minute + MINUTE_MS + 20_000, NOW - HOUR_MS - 5_000]


def test_thinning_is_stable_as_time_moves_on():
    """Pruning again a minute later keeps the same rows: the cut-off is minute-aligned."""
    minute = NOW - HOUR_MS - 2 * MINUTE_MS
    record(*(minute + n * 5_000 for n in range(36)))  # three minutes of five-second rows
    fleet_history_prune(now_ms=NOW)
    first = kept()

    fleet_history_prune(now_ms=NOW + MINUTE_MS)
    fleet_history_prune(now_ms=NOW + MINUTE_MS + 30_000)

    # The third minute is inside the hour at first, so whole; a minute later, thinned.
    whole_third = list(range(minute + 2 * MINUTE_MS, minute + 3 * MINUTE_MS, 5_000))
    assert first == [minute, minute + MINUTE_MS, *whole_third]
    assert kept() == [minute, minute + MINUTE_MS, minute + 2 * MINUTE_MS]


def test_the_cut_off_rounds_down_to_a_minute():
    """Rows within the minute that holds "an hour ago" stay whole until that minute ends."""
    now = NOW + 30_000
    assert thin_before_ms(now) == NOW - FULL_RESOLUTION_MS
    record(NOW - HOUR_MS + 1_000, NOW - HOUR_MS + 6_000)

    fleet_history_prune(now_ms=now)

    assert kept() == [NOW - HOUR_MS + 1_000, NOW - HOUR_MS + 6_000]


def test_rows_older_than_a_day_are_deleted():
    record(NOW - RETAINED_MS - 1, NOW - RETAINED_MS, NOW - RETAINED_MS + MINUTE_MS)

    assert fleet_history_prune(now_ms=NOW) == 1

    assert kept() == [NOW - RETAINED_MS, NOW - RETAINED_MS + MINUTE_MS]


def test_a_day_of_snapshots_prunes_to_the_hour_plus_a_minute_each():
    """A day and a bit of five-second snapshots leaves 24 hours' worth, as the docs say."""
    FleetSnapshotHistory.objects.bulk_create(
        FleetSnapshotHistory(taken_at_ms=at, data={})
        for at in range(NOW - RETAINED_MS - HOUR_MS, NOW + 1, 5_000)
    )

    fleet_history_prune(now_ms=NOW)

    rows = kept()
    recent = [t for t in rows if t >= NOW - HOUR_MS]
    older = [t for t in rows if t < NOW - HOUR_MS]
    assert len(recent) == HOUR_MS // 5_000 + 1
    assert len(older) == (RETAINED_MS - HOUR_MS) // MINUTE_MS
    assert all(t % MINUTE_MS == 0 for t in older)
    assert rows[0] == NOW - RETAINED_MS


def test_recording_the_same_moment_twice_replaces_the_row():
    fleet_history_record(taken_at_ms=NOW, data={"counters": {"acquired": 1}})
    fleet_history_record(taken_at_ms=NOW, data={"counters": {"acquired": 2}})

    assert FleetSnapshotHistory.objects.get().data == {"counters": {"acquired": 2}}


def test_the_beat_snapshot_adds_a_small_row_and_prunes():
    """The row holds what the charts draw, for live engines only, and nothing else."""
    Engine.objects.create(
        engine_id="e-1", hostname="h", pid=1, started_at_ms=NOW, heartbeat_at_ms=NOW,
        pass_summary={"renew": {"at_ms": NOW, "duration_ms": 12.5, "renewed": 3}},
    )  # fmt: skip
    Engine.objects.create(
        engine_id="e-gone", hostname="h", pid=2, started_at_ms=0, heartbeat_at_ms=0, status="dead"
    )
    WorkflowClaim.objects.create(
        workflow_id="wf-1", epoch=1, holder_engine_id="e-1", holder_epoch=1,
        holder_expires_at_ms=NOW + 30_000, holder_claimed_at_ms=NOW,
    )  # fmt: skip
    ClaimCounter.objects.create(engine_id="e-1", name="acquired", value=4)
    ClaimCounter.objects.create(engine_id="e-gone", name="acquired", value=6)
    record(NOW - RETAINED_MS - 1)

    fleet_snapshot_take(now_ms=NOW, timing=TIMING)

    (row,) = FleetSnapshotHistory.objects.all()
    assert row.taken_at_ms == NOW
    assert set(row.data) == {"counters", "by_state", "held", "passes", "slowest", "engine_counters"}
    assert row.data["counters"]["acquired"] == 10
    assert row.data["by_state"]["live"] == 1
    assert row.data["held"] == {"e-1": 1}
    assert row.data["passes"] == {"e-1": {"renew": 12.5}}
    assert row.data["slowest"] == {"renew": 12.5}
    assert row.data["engine_counters"] == {"e-1": {"acquired": 4}}
