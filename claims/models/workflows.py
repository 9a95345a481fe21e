"""Workflows: the authoritative record, its listing index, and the demo ledger's rows."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.models import Q

from .ids import ENGINE_ID_MAX_LENGTH, WORKFLOW_ID_MAX_LENGTH
from .parks import DUE_NOW, due_at_of
from .singletons import only_row_one, singleton_id


class WorkflowStatus(models.TextChoices):
    PENDING = "pending"
    RUNNING = "running"
    SUSPENDED = "suspended"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    TIMED_OUT = "timed_out"


TERMINAL_STATUSES = frozenset(
    {
        WorkflowStatus.COMPLETED,
        WorkflowStatus.FAILED,
        WorkflowStatus.CANCELLED,
        WorkflowStatus.TIMED_OUT,
    }
)


class Workflow(models.Model):
    """The authoritative record of one workflow run."""

    workflow_id = models.CharField(primary_key=True, max_length=WORKFLOW_ID_MAX_LENGTH)
    workflow_type = models.CharField(max_length=100)
    status = models.CharField(max_length=16, choices=WorkflowStatus.choices)
    state = models.JSONField(default=dict, blank=True)
    created_at_ms = models.BigIntegerField()
    updated_at_ms = models.BigIntegerField()
    # Why a failed workflow failed, recorded by the runtime at its terminal write
    # (claims.runtime.failures): exception type, message, step, traceback, when, epoch
    # and engine. Null for every other status.
    failure = models.JSONField(null=True, blank=True)
    # When the next drive is due (ms): the park's wake time, else 0 (claims.models.parks).
    # Kept by every write of ``state``; the wake passes find what is due by it.
    due_at_ms = models.BigIntegerField(default=DUE_NOW, db_default=DUE_NOW)

    class Meta:
        permissions = [
            ("cancel_workflow", "Can cancel a running workflow"),
            ("suspend_workflow", "Can suspend and resume a workflow"),
        ]
        indexes = [
            # The reclaim scans and the dashboard only ever look for running workflows.
            models.Index(
                fields=["workflow_id"],
                condition=Q(status="running"),
                name="workflow_running_idx",
            ),
            models.Index(fields=["status", "workflow_type"], name="workflow_status_type_idx"),
            # The workflows page's sorts, newest first (claims.selectors.workflows.listing).
            models.Index(fields=["updated_at_ms", "workflow_id"], name="workflow_updated_idx"),
            models.Index(fields=["created_at_ms", "workflow_id"], name="workflow_created_idx"),
            # One status by last change, the page's default sort ("what failed lately"):
            # through the time index alone a rare status is found behind every running
            # workflow's recent checkpoint (~120 ms at a million workflows; 0.1 ms here).
            models.Index(
                fields=["status", "updated_at_ms", "workflow_id"],
                name="workflow_status_updated_idx",
            ),
            # The wake passes: running workflows whose next drive is due by now, the
            # soonest first (claims.runtime.driver.WorkflowDriver.due_now).
            models.Index(
                fields=["due_at_ms", "workflow_id"],
                condition=Q(status="running"),
                name="workflow_due_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.workflow_id} ({self.workflow_type}, {self.status})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.due_at_ms = due_at_of(self.state, written_at_ms=self.updated_at_ms or 0)
        update_fields = kwargs.get("update_fields")
        if update_fields is not None and "state" in update_fields:
            kwargs["update_fields"] = {*update_fields, "due_at_ms"}
        super().save(*args, **kwargs)


class WorkflowVisibility(models.Model):
    """Listing index over workflows; maintained with every write, rebuilt by a backfill."""

    workflow_id = models.CharField(unique=True, max_length=WORKFLOW_ID_MAX_LENGTH)
    status = models.CharField(max_length=16, choices=WorkflowStatus.choices)
    workflow_type = models.CharField(max_length=100)
    updated_at_ms = models.BigIntegerField()

    class Meta:
        verbose_name_plural = "workflow visibility"
        indexes = [
            models.Index(fields=["status", "workflow_id"], name="visibility_status_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.workflow_id} ({self.status})"


class VisibilityWatermark(models.Model):
    """Written by a backfill that finished clean: the index may then be trusted."""

    id = singleton_id()
    version = models.PositiveIntegerField()
    built_at_ms = models.BigIntegerField()

    class Meta:
        constraints = [only_row_one("visibility_watermark_singleton")]

    def __str__(self) -> str:
        return f"visibility index v{self.version}"


class StepLedger(models.Model):
    """One row per execution of a demo "ledger" step, committed before its checkpoint.

    A step whose checkpoint failed still leaves its row, so the ledger counts every
    run of a side effect: tests prove with it that a checkpointed step never reruns.
    """

    workflow_id = models.CharField(max_length=WORKFLOW_ID_MAX_LENGTH, db_index=True)
    step = models.CharField(max_length=100)
    epoch = models.BigIntegerField()
    engine_id = models.CharField(max_length=ENGINE_ID_MAX_LENGTH)
    at_ms = models.BigIntegerField()

    def __str__(self) -> str:
        return f"{self.workflow_id} {self.step} @ epoch {self.epoch} on {self.engine_id}"
