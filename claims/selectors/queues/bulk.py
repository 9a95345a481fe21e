"""Bulk jobs: the list of jobs, one job, and its items by outcome (a page at a time or
every one as CSV rows), for the pages and the API alike."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from django.db.models import QuerySet

from claims.models import RUNNABLE_BULK_STATUSES, BulkJob, BulkJobItem, BulkJobStatus
from claims.utc_text import iso_utc

JOB_LIMIT = 50
ITEM_PAGE_SIZE = 100
ITEM_CSV_COLUMNS = (
    "workflow_id",
    "frozen_epoch",
    "outcome",
    "epoch_after",
    "detail",
    "acted_at_ms",
)
ITEM_CSV_HEADER = (*ITEM_CSV_COLUMNS, "acted_at_utc")


def bulk_job_get(job_id: int) -> BulkJob:
    """One job; raises BulkJob.DoesNotExist (the interfaces answer 404)."""
    return BulkJob.objects.get(pk=job_id)


@dataclass(frozen=True)
class BulkJobList:
    jobs: list[BulkJob]
    any_active: bool  # queued or running: a page polls while this holds
    as_of_ms: int


def bulk_job_list(*, now_ms: int, status: str | None = None, limit: int = JOB_LIMIT) -> BulkJobList:
    """Newest first, at most ``limit``; one query."""
    jobs = BulkJob.objects.order_by("-id")
    if status is not None:
        jobs = jobs.filter(status=status)
    rows = list(jobs[:limit])
    active = any(job.status in RUNNABLE_BULK_STATUSES for job in rows)
    return BulkJobList(rows, active, now_ms)


def bulk_job_active(job: BulkJob) -> bool:
    """Whether the job may still change without an operator: queued or running."""
    return job.status in (BulkJobStatus.QUEUED, BulkJobStatus.RUNNING)


def bulk_job_percent(job: BulkJob) -> float:
    """How much of the frozen items has been acted on, 0-100."""
    if not job.frozen_count:
        return 100.0 if job.status == BulkJobStatus.DONE else 0.0
    return round(min(100.0, 100 * job.acted_count / job.frozen_count), 1)


@dataclass(frozen=True)
class BulkItemPage:
    items: list[BulkJobItem]
    next_cursor: int | None  # the last item id of this page, when there is another
    as_of_ms: int


def _items(job_id: int, outcome: str | None) -> QuerySet[BulkJobItem]:
    # In item id order, the order the runner acts in; (job, outcome, id) serves the filter.
    items = BulkJobItem.objects.filter(job_id=job_id).order_by("id")
    if outcome is not None:
        items = items.filter(outcome=outcome)
    return items


def bulk_item_page(
    job_id: int,
    *,
    now_ms: int,
    outcome: str | None = None,
    cursor: int | None = None,
    limit: int = ITEM_PAGE_SIZE,
) -> BulkItemPage:
    """One page of a job's items after ``cursor`` (an item id); one query."""
    items = _items(job_id, outcome)
    if cursor is not None:
        items = items.filter(id__gt=cursor)
    rows = list(items[: limit + 1])
    next_cursor = rows[limit - 1].id if len(rows) > limit else None
    return BulkItemPage(rows[:limit], next_cursor, now_ms)


def bulk_item_rows(job_id: int, *, outcome: str | None = None) -> Iterator[tuple[object, ...]]:
    """Every item of the job as a CSV row (ITEM_CSV_HEADER), in item order; streamed. A job
    holds at most WEFTBOARD_BULK_MAX_ITEMS items, so the download is bounded by that."""
    rows = _items(job_id, outcome).values_list(*ITEM_CSV_COLUMNS)
    for row in rows.iterator(chunk_size=2_000):
        acted = row[-1]
        yield (*row, iso_utc(acted) if isinstance(acted, int) else "")
