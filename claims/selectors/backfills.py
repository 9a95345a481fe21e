"""Reads of single backfill jobs, for the API and the backfill services."""

from __future__ import annotations

from claims.models import ACTIVE_BACKFILL_STATUSES, BackfillJob


def active_backfill() -> BackfillJob | None:
    """The job scheduled or running, if any (the database allows one at a time)."""
    return BackfillJob.objects.filter(status__in=ACTIVE_BACKFILL_STATUSES).order_by("pk").first()


def backfill_get(job_id: int) -> BackfillJob:
    """One job; raises BackfillJob.DoesNotExist (the API answers 404)."""
    return BackfillJob.objects.get(pk=job_id)
