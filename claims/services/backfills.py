"""Writes to visibility backfills: schedule one, cancel one (docs/design.md §7, "Admin").

The run itself is claims.backfill.runner's. Both calls obey the read-only switch
(claims.services.rules), raising ReadOnlyError, which the admin and the API map.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from claims.backfill.jobs import ms_to_datetime, now_ms
from claims.models import ACTIVE_BACKFILL_STATUSES, BackfillJob, BackfillStatus, Workflow
from claims.protocol import Clock
from claims.protocol.times import datetime_ms
from claims.selectors.queues.backfills import active_backfill

from .errors import (
    BackfillAlreadyActiveError,
    BackfillInThePastError,
    BackfillNotActiveError,
)
from .rules import refuse_if_read_only

logger = logging.getLogger("weftboard.claims")

# A run further out than this is not sent with a Celery ETA (brokers redeliver long-held
# ETA messages; workers hold them in memory): beat's backfill_run_due starts it when due.
ETA_HORIZON = timedelta(minutes=10)
# A time this close behind now still means "now": a form filled in slowly.
PAST_SLACK = timedelta(minutes=1)
REQUESTED_BY_MAX_LENGTH = 150


def _enqueue(job_id: int, eta: datetime | None) -> None:
    """Send the run task (a seam: tests replace it so nothing reaches a broker)."""
    from claims.tasks import backfill_run as backfill_run_task

    if eta is None:
        backfill_run_task.apply_async((job_id,))
    else:
        backfill_run_task.apply_async((job_id,), eta=eta)


def backfill_schedule(
    *, run_at: datetime | None = None, requested_by: str, clock: Clock | None = None
) -> BackfillJob:
    """Schedule a visibility backfill at ``run_at`` (None: now).

    Raises BackfillAlreadyActiveError when one is scheduled or running (the database's
    partial unique constraint decides, so two racing requests cannot both succeed) and
    ReadOnlyError under the read-only switch, BackfillInThePastError for a time
    more than a minute ago (the admin and the API share the rule), InvalidInputError for one
    outside years 1 to 9999 in UTC (claims.protocol.times). The run task is sent when the
    transaction commits; if that send fails, or the run is far off, beat starts it when due.
    """
    refuse_if_read_only()
    now = ms_to_datetime(now_ms(clock))
    if run_at is None:
        run_at = now
    elif timezone.is_naive(run_at):
        run_at = timezone.make_aware(run_at)
    # Before any comparison: a time past year 9999 in UTC could be stored on PostgreSQL
    # and then never read back (InvalidInputError). Then in UTC, as stored: PostgreSQL
    # refuses an offset beyond 15:59 that Python accepts (up to 23:59).
    datetime_ms(run_at, what="the backfill's run time")
    run_at = run_at.astimezone(UTC)
    if run_at < now - PAST_SLACK:
        raise BackfillInThePastError(run_at.isoformat())
    requested_by = (requested_by or "")[:REQUESTED_BY_MAX_LENGTH]
    try:
        with transaction.atomic():
            job = BackfillJob.objects.create(
                status=BackfillStatus.SCHEDULED,
                requested_by=requested_by or None,
                run_at=run_at,
                total_estimate=Workflow.objects.count(),
            )
            if run_at - now <= ETA_HORIZON:
                job_id, eta = job.pk, (run_at if run_at > now else None)
                transaction.on_commit(lambda: _enqueue(job_id, eta), robust=True)
    except IntegrityError as error:
        active = active_backfill()
        raise BackfillAlreadyActiveError(None if active is None else active.pk) from error
    logger.info(
        "backfill #%s scheduled for %s by %s", job.pk, run_at.isoformat(), requested_by or "-"
    )
    return job


def backfill_cancel(*, job_id: int, actor: str, clock: Clock | None = None) -> BackfillJob:
    """Cancel a scheduled or running backfill; a running one stops before its next batch.

    Raises BackfillJob.DoesNotExist for an unknown id, BackfillNotActiveError when the
    job has already ended and ReadOnlyError under the read-only switch. Waits for
    the batch in flight (it holds the job row), so the cancel never lands mid-batch.
    """
    refuse_if_read_only()
    now = ms_to_datetime(now_ms(clock))
    with transaction.atomic():
        job = BackfillJob.objects.select_for_update().get(pk=job_id)
        if job.status not in ACTIVE_BACKFILL_STATUSES:
            raise BackfillNotActiveError(job.pk, job.status)
        job.status = BackfillStatus.CANCELLED
        job.finished_at = now
        job.error = f"cancelled by {actor}" if actor else "cancelled"
        job.save(update_fields=["status", "finished_at", "error"])
    logger.info("backfill #%s cancelled by %s", job.pk, actor or "-")
    return job
