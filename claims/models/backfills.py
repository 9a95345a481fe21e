"""Visibility-index backfills, resumable and one active per kind."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from .ids import WORKFLOW_ID_MAX_LENGTH


class BackfillStatus(models.TextChoices):
    SCHEDULED = "scheduled"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


ACTIVE_BACKFILL_STATUSES = (BackfillStatus.SCHEDULED, BackfillStatus.RUNNING)


class BackfillJob(models.Model):
    """A visibility-index backfill; resumable from ``cursor`` after a crash."""

    kind = models.CharField(max_length=32, default="visibility", editable=False)
    status = models.CharField(
        max_length=16, choices=BackfillStatus.choices, default=BackfillStatus.SCHEDULED
    )
    requested_by = models.CharField(max_length=150, null=True, blank=True)
    run_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    cursor = models.CharField(max_length=WORKFLOW_ID_MAX_LENGTH, null=True, blank=True)
    processed = models.PositiveBigIntegerField(default=0)
    inserted = models.PositiveBigIntegerField(default=0)
    fixed = models.PositiveBigIntegerField(default=0)
    conflicts = models.PositiveBigIntegerField(default=0)
    total_estimate = models.PositiveBigIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        constraints = [
            # At most one scheduled or running backfill of a kind, enforced by the database.
            models.UniqueConstraint(
                fields=["kind"],
                condition=Q(status__in=ACTIVE_BACKFILL_STATUSES),
                name="backfill_one_active_per_kind",
            ),
        ]
        permissions = [("schedule_backfill", "Can schedule a visibility backfill")]

    def __str__(self) -> str:
        return f"backfill #{self.pk} ({self.status})"
