"""Bulk operations: a job acts on every workflow a query selected, each item fenced on the
epoch it had when the job was frozen (docs/design.md §7, "Bulk operations")."""

from __future__ import annotations

from django.db import models

from .ids import ENGINE_ID_MAX_LENGTH, WORKFLOW_ID_MAX_LENGTH


class BulkAction(models.TextChoices):
    RELEASE = "release"
    TAKEOVER = "takeover"
    CANCEL = "cancel"
    SUSPEND = "suspend"
    RESUME = "resume"


class BulkList(models.TextChoices):
    """Which listing the job's query reads: the claim rows or the workflows."""

    CLAIMS = "claims"
    WORKFLOWS = "workflows"


class BulkJobStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    PAUSED = "paused"
    ABORTED = "aborted"
    DONE = "done"
    FAILED = "failed"


# A runner works on these; paused waits for an operator, the rest are over.
RUNNABLE_BULK_STATUSES = (BulkJobStatus.QUEUED, BulkJobStatus.RUNNING)
FINISHED_BULK_STATUSES = (BulkJobStatus.ABORTED, BulkJobStatus.DONE, BulkJobStatus.FAILED)


class BulkItemOutcome(models.TextChoices):
    PENDING = "pending"
    DONE = "done"  # acted on: the claim moved from its frozen epoch to epoch_after
    MOVED = "moved"  # the claim had left its frozen epoch: left alone
    REFUSED = "refused"  # at its frozen epoch, but the action's rules refuse it (detail)


class BulkJob(models.Model):
    """One bulk operation: what it acts on (a query, frozen into its items), what it does,
    who asked and why, and how far it has got (``cursor``: the last item id acted on)."""

    list_name = models.CharField(max_length=16, choices=BulkList.choices)
    query = models.TextField()
    action = models.CharField(max_length=16, choices=BulkAction.choices)
    # Takeover only: the engine to hand every claim to; None spreads them over the live
    # engines that are not draining.
    target_engine_id = models.CharField(max_length=ENGINE_ID_MAX_LENGTH, null=True, blank=True)
    reason = models.TextField()
    requested_by = models.CharField(max_length=150, null=True, blank=True)
    # The caller's own name for this request: the same key from the same requester again
    # (a retry after a lost answer) returns this job instead of freezing another.
    request_key = models.CharField(max_length=64, null=True, blank=True)
    created_at_ms = models.BigIntegerField()
    status = models.CharField(
        max_length=16, choices=BulkJobStatus.choices, default=BulkJobStatus.QUEUED
    )
    previewed_count = models.PositiveBigIntegerField(null=True, blank=True)
    frozen_count = models.PositiveBigIntegerField(default=0)
    done_count = models.PositiveBigIntegerField(default=0)
    moved_count = models.PositiveBigIntegerField(default=0)
    refused_count = models.PositiveBigIntegerField(default=0)
    cursor = models.BigIntegerField(default=0)
    # Items per second at most; None: as fast as the chunks go.
    rate_per_s = models.PositiveIntegerField(null=True, blank=True)
    started_at_ms = models.BigIntegerField(null=True, blank=True)
    finished_at_ms = models.BigIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        indexes = [models.Index(fields=["status", "id"], name="bulk_job_status_idx")]
        constraints = [
            models.UniqueConstraint(
                fields=["requested_by", "request_key"],
                condition=models.Q(request_key__isnull=False),
                name="bulk_job_request_once",
            )
        ]
        permissions = [("bulk_operate", "Can run bulk operations on claims and workflows")]

    def __str__(self) -> str:
        return f"bulk job #{self.pk} {self.action} ({self.status})"

    @property
    def acted_count(self) -> int:
        return self.done_count + self.moved_count + self.refused_count

    @property
    def pending_count(self) -> int:
        """The items not yet acted on (none once the counts catch up with the freeze)."""
        return max(0, self.frozen_count - self.acted_count)


class BulkJobItem(models.Model):
    """One workflow of a job, with the claim epoch it had at the freeze."""

    id = models.BigAutoField(primary_key=True)
    # No index of its own: the unique (job, workflow) and the (job, outcome, id) indexes
    # lead with the job, and a fourth index would cost every frozen and every acted item.
    job = models.ForeignKey(BulkJob, on_delete=models.CASCADE, related_name="items", db_index=False)
    workflow_id = models.CharField(max_length=WORKFLOW_ID_MAX_LENGTH)
    # 0: the workflow had no claim row yet.
    frozen_epoch = models.BigIntegerField()
    outcome = models.CharField(
        max_length=8, choices=BulkItemOutcome.choices, default=BulkItemOutcome.PENDING
    )
    epoch_after = models.BigIntegerField(null=True, blank=True)
    detail = models.CharField(max_length=200, blank=True)
    acted_at_ms = models.BigIntegerField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["job", "workflow_id"], name="bulk_item_once_per_job")
        ]
        indexes = [
            # The runner's walk (pending items after the cursor) and the items list by outcome.
            models.Index(fields=["job", "outcome", "id"], name="bulk_item_outcome_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.workflow_id} @ {self.frozen_epoch}: {self.outcome}"
