"""Engines and what they persist for the dashboard: heartbeats, re-drives, counters, the
reclaim cursor, and the fleet snapshot beat takes."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from .ids import ENGINE_ID_MAX_LENGTH, WORKFLOW_ID_MAX_LENGTH
from .singletons import only_row_one, singleton_id


class EngineStatus(models.TextChoices):
    ACTIVE = "active"
    DISPOSING = "disposing"
    STOPPED = "stopped"
    DEAD = "dead"


class Engine(models.Model):
    engine_id = models.CharField(primary_key=True, max_length=ENGINE_ID_MAX_LENGTH)
    hostname = models.CharField(max_length=255)
    # The Celery worker's node name (``engine1@host``): what operators call the engine,
    # stable across restarts while the id is new at every start.
    name = models.CharField(max_length=255, blank=True, default="", db_index=True)
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
    # Set by an operator's drain (None: not draining). The engine reads it at every tick,
    # so a lost claims.drain message is healed by the next one (docs/design.md §7).
    drain_requested_at_ms = models.BigIntegerField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["status", "heartbeat_at_ms"], name="engine_status_idx")]
        permissions = [("drain_engine", "Can drain and undrain an engine")]

    def __str__(self) -> str:
        return f"{self.engine_id} ({self.status})"

    @property
    def draining(self) -> bool:
        return self.drain_requested_at_ms is not None


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
    # The engine-lease mode's session renewals by outcome, and the expired sessions this
    # engine closed to take their claims over (claims.protocol.metrics.SESSION_COUNTS).
    SESSION_RENEWED = "session_renewed"
    SESSION_LOST = "session_lost"
    SESSION_FAILED = "session_failed"
    SESSION_CLOSED_EXPIRED = "session_closed_expired"


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


class RetiredPassHistograms(models.Model):
    """The pass-duration histograms of engines pruned from the history, summed into one
    row before their rows go: /metrics adds them to the kept engines', so
    weftboard_pass_duration_seconds never goes down (ClaimCounter rows do the same for the
    counters by outliving their engine)."""

    id = singleton_id()
    # As Engine.pass_summary keeps them: {"histograms": {pass: {"counts": [...], "sum": s}}}.
    summary = models.JSONField(default=dict)
    engines = models.PositiveIntegerField(default=0)  # how many pruned engines it sums

    class Meta:
        constraints = [only_row_one("retired_pass_histograms_singleton")]

    def __str__(self) -> str:
        return f"pass histograms of {self.engines} pruned engines"


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


class FleetSnapshot(models.Model):
    """The whole-fleet aggregates the overview shows, taken once per renew interval by beat,
    so every operator's poll reads one row instead of scanning every claim and workflow."""

    id = singleton_id()
    taken_at_ms = models.BigIntegerField()
    data = models.JSONField(default=dict)

    class Meta:
        constraints = [only_row_one("fleet_snapshot_singleton")]

    def __str__(self) -> str:
        return f"fleet snapshot at {self.taken_at_ms}"


class EngineEventKind(models.TextChoices):
    DRAIN = "drain"
    UNDRAIN = "undrain"


class EngineEvent(models.Model):
    """An operator's action on a whole engine (drain, undrain); claim events stay per
    workflow in ClaimEvent. Not a foreign key: the audit outlives the engine row."""

    engine_id = models.CharField(max_length=ENGINE_ID_MAX_LENGTH)
    kind = models.CharField(max_length=16, choices=EngineEventKind.choices)
    actor = models.CharField(max_length=150)
    reason = models.TextField()
    at_ms = models.BigIntegerField()

    class Meta:
        indexes = [
            models.Index(fields=["engine_id", "id"], name="engine_event_engine_idx"),
            models.Index(fields=["at_ms"], name="engine_event_at_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.engine_id} {self.kind} by {self.actor}"
