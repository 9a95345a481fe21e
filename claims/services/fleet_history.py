"""Beat's fleet snapshot history: one row per renew interval, thinned as it ages.

Kept: every row of the last hour, then the first row of each minute for 24 hours;
older rows are deleted. The cut-off is aligned to a minute so a minute's rows are thinned
all at once, and thinning a minute again keeps the same row. Rows are small (see
claims.selectors.fleet.history.history_row), so a day is about 2,000 of them.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import F, Min

from claims.conf import MINUTE_MS
from claims.models import FleetSnapshotHistory

FULL_RESOLUTION_MS = 3_600_000
RETAINED_MS = 24 * 3_600_000


def fleet_history_record(*, taken_at_ms: int, data: dict[str, Any]) -> None:
    """Add one row; a snapshot taken again at the same millisecond replaces it."""
    FleetSnapshotHistory.objects.update_or_create(taken_at_ms=taken_at_ms, defaults={"data": data})


def thin_before_ms(now_ms: int) -> int:
    """Rows before this are kept one per minute: an hour ago, rounded down to the minute."""
    return (now_ms - FULL_RESOLUTION_MS) // MINUTE_MS * MINUTE_MS


def fleet_history_prune(*, now_ms: int) -> int:
    """Delete rows older than the retention, and all but each minute's first row before
    the full-resolution hour; returns how many rows went. Two statements."""
    with transaction.atomic():
        dropped, _ = FleetSnapshotHistory.objects.filter(
            taken_at_ms__lt=now_ms - RETAINED_MS
        ).delete()
        older = FleetSnapshotHistory.objects.filter(taken_at_ms__lt=thin_before_ms(now_ms))
        firsts = (
            older.annotate(minute=F("taken_at_ms") / MINUTE_MS)
            .values("minute")
            .annotate(first=Min("taken_at_ms"))
            .values("first")
        )
        thinned, _ = older.exclude(taken_at_ms__in=firsts).delete()
    return dropped + thinned
