"""The claim control plane's tables (docs/design.md §2). Times are integer milliseconds
(``*_ms``)."""

from __future__ import annotations

from typing import Any, NoReturn

from django.conf import settings
from django.db import models
from django.db.models import Q


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

WORKFLOW_ID_MAX_LENGTH = 255
ENGINE_ID_MAX_LENGTH = 255


class Workflow(models.Model):
    """The authoritative record of one workflow run."""

    workflow_id = models.CharField(primary_key=True, max_length=WORKFLOW_ID_MAX_LENGTH)
    workflow_type = models.CharField(max_length=100)
    status = models.CharField(max_length=16, choices=WorkflowStatus.choices)
    state = models.JSONField(default=dict, blank=True)
    created_at_ms = models.BigIntegerField()
    updated_at_ms = models.BigIntegerField()

    class Meta:
        permissions = [("cancel_workflow", "Can cancel a running workflow")]
        indexes = [
            # The reclaim scans and the dashboard only ever look for running workflows.
            models.Index(
                fields=["workflow_id"],
                condition=Q(status="running"),
                name="workflow_running_idx",
            ),
            models.Index(fields=["status", "workflow_type"], name="workflow_status_type_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.workflow_id} ({self.workflow_type}, {self.status})"


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

    id = models.PositiveSmallIntegerField(primary_key=True, default=1, editable=False)
    version = models.PositiveIntegerField()
    built_at_ms = models.BigIntegerField()

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(id=1), name="visibility_watermark_singleton"),
        ]

    def __str__(self) -> str:
        return f"visibility index v{self.version}"


class ClaimRowsAreKeptError(RuntimeError):
    """A claim row carries the fencing epoch for the id's whole life; deleting it would
    let a reused id mint an epoch that a stale engine still holds."""


class WorkflowClaimQuerySet(models.QuerySet["WorkflowClaim"]):
    def delete(self) -> NoReturn:
        raise ClaimRowsAreKeptError("workflow claim rows are never deleted")


class WorkflowClaim(models.Model):
    """One row per workflow id ever claimed. "No holder" means all four holder columns null."""

    workflow_id = models.CharField(primary_key=True, max_length=WORKFLOW_ID_MAX_LENGTH)
    epoch = models.BigIntegerField()
    holder_engine_id = models.CharField(max_length=ENGINE_ID_MAX_LENGTH, null=True, blank=True)
    holder_epoch = models.BigIntegerField(null=True, blank=True)
    holder_expires_at_ms = models.BigIntegerField(null=True, blank=True)
    holder_claimed_at_ms = models.BigIntegerField(null=True, blank=True)

    objects = WorkflowClaimQuerySet.as_manager()

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(epoch__gte=1), name="workflow_claim_epoch_positive"),
        ]
        indexes = [
            # Migration 0006 adds a partial index over held rows (its condition names every
            # holder column, so renewals are no longer HOT updates): the reclaim pass then
            # reads only the held rows, not the whole table. Measured on 1,000,000 claims,
            # renew passes took the same time with and without it.
            models.Index(fields=["holder_engine_id"], name="workflow_claim_holder_idx"),
        ]
        permissions = [
            ("force_claim", "Can force the release or takeover of a workflow claim"),
        ]

    def __str__(self) -> str:
        return f"{self.workflow_id} @ epoch {self.epoch}"

    def delete(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise ClaimRowsAreKeptError("workflow claim rows are never deleted")


class OwnershipMode(models.TextChoices):
    LEASE = "lease"
    WORKFLOW_LEASE = "workflow-lease"


class OwnershipModeMarker(models.Model):
    """Written once by the first engine; every later engine must run the same mode."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1, editable=False)
    # No choices: an unknown stored value must be read back and refused, not coerced.
    mode = models.CharField(max_length=32)
    established_at_ms = models.BigIntegerField(null=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(id=1), name="ownership_mode_marker_singleton"),
        ]

    def __str__(self) -> str:
        return self.mode


class EngineStatus(models.TextChoices):
    ACTIVE = "active"
    DISPOSING = "disposing"
    STOPPED = "stopped"
    DEAD = "dead"


class Engine(models.Model):
    engine_id = models.CharField(primary_key=True, max_length=ENGINE_ID_MAX_LENGTH)
    hostname = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    queue = models.CharField(max_length=255, blank=True)
    started_at_ms = models.BigIntegerField()
    heartbeat_at_ms = models.BigIntegerField()
    clock_skew_ms = models.BigIntegerField(null=True, blank=True)
    clock_error_ms = models.BigIntegerField(null=True, blank=True)
    status = models.CharField(
        max_length=16, choices=EngineStatus.choices, default=EngineStatus.ACTIVE
    )
    held_count = models.PositiveIntegerField(default=0)
    version = models.CharField(max_length=32, blank=True)
    pass_summary = models.JSONField(default=dict, blank=True)

    class Meta:
        indexes = [models.Index(fields=["status", "heartbeat_at_ms"], name="engine_status_idx")]

    def __str__(self) -> str:
        return f"{self.engine_id} ({self.status})"


class PendingRedrive(models.Model):
    """Mirror of an engine's in-memory re-drives: claims it holds but failed to drive."""

    engine_id = models.CharField(max_length=ENGINE_ID_MAX_LENGTH)
    workflow_id = models.CharField(max_length=WORKFLOW_ID_MAX_LENGTH)
    epoch = models.BigIntegerField()
    attempts = models.PositiveIntegerField(default=1)
    last_error = models.TextField(blank=True)
    first_failed_at_ms = models.BigIntegerField()
    last_failed_at_ms = models.BigIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["engine_id", "workflow_id"], name="pending_redrive_unique"
            ),
        ]
        indexes = [models.Index(fields=["workflow_id"], name="pending_redrive_workflow_idx")]

    def __str__(self) -> str:
        return f"{self.workflow_id} @ {self.epoch} on {self.engine_id}"


class CounterName(models.TextChoices):
    ACQUIRED = "acquired"
    TAKEOVER = "takeover"
    LOST_RACE = "lost_race"
    DEPOSED = "deposed"
    BACKOFF_SKIPPED = "backoff_skipped"
    RENEWAL_FAILURES = "renewal_failures"
    # Broker messages this engine could not decode, logged and set aside (weftboard.broker).
    BROKER_REJECTED = "broker_rejected"


class ClaimCounter(models.Model):
    """Per-engine counters; rows outlive their engine so fleet sums never go down."""

    engine_id = models.CharField(max_length=ENGINE_ID_MAX_LENGTH)
    name = models.CharField(max_length=32, choices=CounterName.choices)
    value = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["engine_id", "name"], name="claim_counter_unique"),
            models.CheckConstraint(condition=Q(value__gte=0), name="claim_counter_non_negative"),
        ]

    def __str__(self) -> str:
        return f"{self.engine_id} {self.name}={self.value}"


class ReclaimCursor(models.Model):
    """Where the fleet's bounded scan of the Workflow table resumes."""

    name = models.CharField(primary_key=True, max_length=64)
    last_workflow_id = models.CharField(max_length=WORKFLOW_ID_MAX_LENGTH, null=True, blank=True)
    wraps = models.PositiveBigIntegerField(default=0)
    scanned_total = models.PositiveBigIntegerField(default=0)
    updated_at_ms = models.BigIntegerField(default=0)
    updated_by = models.CharField(max_length=ENGINE_ID_MAX_LENGTH, blank=True)

    def __str__(self) -> str:
        return f"{self.name} at {self.last_workflow_id or 'start'}"


class ClaimEventKind(models.TextChoices):
    ACQUIRED = "acquired"
    TAKEOVER = "takeover"
    RELEASED = "released"
    DEPOSED = "deposed"
    ROTATED = "rotated"
    FORCED_RELEASE = "forced_release"
    FORCED_TAKEOVER = "forced_takeover"
    ADOPTED = "adopted"


class ClaimEvent(models.Model):
    """A claim transition or operator action. Renewals are not logged one by one."""

    # Not a foreign key: events outlive a purged workflow, as its claim row does.
    workflow_id = models.CharField(max_length=WORKFLOW_ID_MAX_LENGTH)
    kind = models.CharField(max_length=16, choices=ClaimEventKind.choices)
    epoch_before = models.BigIntegerField(null=True, blank=True)
    epoch_after = models.BigIntegerField(null=True, blank=True)
    engine_id = models.CharField(max_length=ENGINE_ID_MAX_LENGTH, null=True, blank=True)
    actor = models.CharField(max_length=150, null=True, blank=True)
    reason = models.TextField(blank=True)
    at_ms = models.BigIntegerField()

    class Meta:
        indexes = [
            models.Index(fields=["workflow_id", "id"], name="claim_event_workflow_idx"),
            models.Index(fields=["at_ms"], name="claim_event_at_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.workflow_id} {self.kind} {self.epoch_before}->{self.epoch_after}"


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


class ApiTokenScope(models.TextChoices):
    READ = "read"
    WRITE = "write"


class ApiToken(models.Model):
    """A bearer token for the JSON API. Only the SHA-256 of the secret is stored; the
    secret is shown once, when the token is created in the admin."""

    name = models.CharField(max_length=100)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    # The first characters of the secret, so an operator can tell tokens apart.
    prefix = models.CharField(max_length=8, editable=False)
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    scope = models.CharField(
        max_length=8, choices=ApiTokenScope.choices, default=ApiTokenScope.READ
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # None: until revoked. Past it the token is refused (401) and shown as expired.
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…, {self.scope})"


class FleetSnapshot(models.Model):
    """The whole-fleet aggregates the overview shows, taken once per renew interval by beat,
    so every operator's poll reads one row instead of scanning every claim and workflow."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1, editable=False)
    taken_at_ms = models.BigIntegerField()
    data = models.JSONField(default=dict)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(id=1), name="fleet_snapshot_singleton"),
        ]

    def __str__(self) -> str:
        return f"fleet snapshot at {self.taken_at_ms}"
