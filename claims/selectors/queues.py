"""Work waiting on the fleet: pending re-drives and visibility backfills."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Min, Q

from claims.models import (
    ACTIVE_BACKFILL_STATUSES,
    BackfillJob,
    PendingRedrive,
    VisibilityWatermark,
)
from claims.protocol.timing import ClaimTiming

REDRIVE_LIMIT = 200
BACKFILL_LIMIT = 50


@dataclass(frozen=True)
class RedriveList:
    rows: list[PendingRedrive]
    total: int
    ageing: int
    oldest_ms: int | None
    ageing_before_ms: int
    as_of_ms: int


def redrive_list(*, now_ms: int, timing: ClaimTiming, engine: str | None = None) -> RedriveList:
    """Oldest first; a re-drive pending for longer than the TTL is ageing. Two queries."""
    rows = PendingRedrive.objects.all()
    if engine:
        rows = rows.filter(engine_id=engine)
    ageing_before = now_ms - timing.ttl_ms
    totals = rows.aggregate(
        total=Count("pk"),
        ageing=Count("pk", filter=Q(first_failed_at_ms__lt=ageing_before)),
        oldest=Min("first_failed_at_ms"),
    )
    return RedriveList(
        rows=list(rows.order_by("first_failed_at_ms", "id")[:REDRIVE_LIMIT]),
        total=totals["total"],
        ageing=totals["ageing"],
        oldest_ms=totals["oldest"],
        ageing_before_ms=ageing_before,
        as_of_ms=now_ms,
    )


@dataclass(frozen=True)
class BackfillView:
    job: BackfillJob

    @property
    def active(self) -> bool:
        return self.job.status in ACTIVE_BACKFILL_STATUSES

    @property
    def percent(self) -> float | None:
        total = self.job.total_estimate
        if not total:
            return None if self.job.status != "succeeded" else 100.0
        return round(min(100.0, 100 * self.job.processed / total), 1)


@dataclass(frozen=True)
class BackfillList:
    rows: list[BackfillView]
    any_active: bool
    watermark: VisibilityWatermark | None
    as_of_ms: int


def backfill_list(*, now_ms: int) -> BackfillList:
    """Newest first; two queries."""
    rows = [BackfillView(job) for job in BackfillJob.objects.order_by("-id")[:BACKFILL_LIMIT]]
    return BackfillList(
        rows=rows,
        any_active=any(row.active for row in rows),
        watermark=VisibilityWatermark.objects.first(),
        as_of_ms=now_ms,
    )
