"""Visibility backfills: the queues page's list of jobs, and the single jobs the API and
the backfill services read."""

from __future__ import annotations

from dataclasses import dataclass

from claims.models import ACTIVE_BACKFILL_STATUSES, BackfillJob, VisibilityWatermark

BACKFILL_LIMIT = 50


def active_backfill() -> BackfillJob | None:
    """The job scheduled or running, if any (the database allows one at a time)."""
    return BackfillJob.objects.filter(status__in=ACTIVE_BACKFILL_STATUSES).order_by("pk").first()


def backfill_get(job_id: int) -> BackfillJob:
    """One job; raises BackfillJob.DoesNotExist (the API answers 404)."""
    return BackfillJob.objects.get(pk=job_id)


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
