"""Claims: the per-workflow ownership row with its fencing epoch, its event log, and the
fleet's ownership mode."""

from __future__ import annotations

from typing import Any, NoReturn

from django.db import models
from django.db.models import F, Q

from claims.protocol.constants import MAX_SAFE_INTEGER

from .errors import ClaimRowsAreKeptError
from .ids import ENGINE_ID_MAX_LENGTH, WORKFLOW_ID_MAX_LENGTH
from .singletons import only_row_one, singleton_id

# The predicate of the partial index workflow_claim_held_idx, term for term: PostgreSQL
# and SQLite use a partial index only for a query that repeats its predicate, and
# through it the reclaim queries read the held rows instead of every claim row.
HOLDER_PRESENT = (
    Q(holder_engine_id__isnull=False)
    | Q(holder_epoch__isnull=False)
    | Q(holder_expires_at_ms__isnull=False)
    | Q(holder_claimed_at_ms__isnull=False)
)

# The same validity rule as ClaimRow.holder_is_valid, as SQL, but for the session a session
# holder names (a missing expiry is that holder's rule, not garbage): the session side is
# judged on the session rows (``ClaimSetQueries.list_stale_holders``).
HOLDER_INVALID = (
    Q(holder_engine_id__isnull=True)
    | Q(holder_engine_id="")
    | Q(holder_epoch__isnull=True)
    | ~Q(holder_epoch=F("epoch"))
    | Q(holder_expires_at_ms__isnull=True, holder_session_epoch__isnull=True)
    | Q(holder_claimed_at_ms__isnull=True)
    | Q(holder_expires_at_ms__lt=0)
    | Q(holder_claimed_at_ms__lt=0)
    | Q(holder_expires_at_ms__gt=MAX_SAFE_INTEGER)
    | Q(holder_claimed_at_ms__gt=MAX_SAFE_INTEGER)
)
# Held rows that are garbage in their own columns: rare, so their partial index is small,
# and the invalid state is read from it instead of judging every held row.
HOLDER_GARBLED = HOLDER_PRESENT & HOLDER_INVALID


class WorkflowClaimQuerySet(models.QuerySet["WorkflowClaim"]):
    def delete(self) -> NoReturn:
        raise ClaimRowsAreKeptError("workflow claim rows are never deleted")


class WorkflowClaim(models.Model):
    """One row per workflow id ever claimed. "No holder" means all holder columns null."""

    workflow_id = models.CharField(primary_key=True, max_length=WORKFLOW_ID_MAX_LENGTH)
    epoch = models.BigIntegerField()
    holder_engine_id = models.CharField(max_length=ENGINE_ID_MAX_LENGTH, null=True, blank=True)
    holder_epoch = models.BigIntegerField(null=True, blank=True)
    holder_expires_at_ms = models.BigIntegerField(null=True, blank=True)
    holder_claimed_at_ms = models.BigIntegerField(null=True, blank=True)
    # The engine-lease mode: the holder's session epoch; the claim lives while that session
    # of holder_engine_id does, and holder_expires_at_ms stays null (docs/design.md §12).
    holder_session_epoch = models.BigIntegerField(null=True, blank=True)

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
            # By engine, then claim time: an engine's claims, and its recent grants alone
            # (reclaim's audit of rows naming it, claims.protocol.discovery).
            models.Index(
                fields=["holder_engine_id", "holder_claimed_at_ms"],
                name="workflow_claim_granted_idx",
            ),
            # The claims list's sorts (claims.selectors.claims.sorting), each read along its own
            # index with the workflow id as tie-breaker. Expiry and claim time exist on held
            # rows only, so their indexes are partial and small; docs/design.md §7.
            models.Index(
                fields=["holder_expires_at_ms", "workflow_id"],
                condition=Q(holder_expires_at_ms__isnull=False),
                name="workflow_claim_expires_idx",
            ),
            models.Index(
                fields=["holder_claimed_at_ms", "workflow_id"],
                condition=Q(holder_claimed_at_ms__isnull=False),
                name="workflow_claim_claimed_idx",
            ),
            models.Index(fields=["epoch", "workflow_id"], name="workflow_claim_epoch_idx"),
            models.Index(
                fields=["workflow_id"], condition=HOLDER_GARBLED, name="workflow_claim_garbled_idx"
            ),
            # The sessions claims name, for reclaim's discovery: one step along this index
            # per (engine, session) pair. Empty in the workflow-lease mode.
            models.Index(
                fields=["holder_engine_id", "holder_session_epoch"],
                condition=Q(holder_session_epoch__isnull=False),
                name="workflow_claim_session_idx",
            ),
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
    ENGINE_LEASE = "engine-lease"


class OwnershipModeMarker(models.Model):
    """Written once by the first engine; every later engine must run the same mode."""

    id = singleton_id()
    # No choices: an unknown stored value must be read back and refused, not coerced.
    mode = models.CharField(max_length=32)
    established_at_ms = models.BigIntegerField(null=True)

    class Meta:
        constraints = [only_row_one("ownership_mode_marker_singleton")]

    def __str__(self) -> str:
        return self.mode


class ClaimEventKind(models.TextChoices):
    ACQUIRED = "acquired"
    TAKEOVER = "takeover"
    RELEASED = "released"
    DEPOSED = "deposed"
    ROTATED = "rotated"
    FORCED_RELEASE = "forced_release"
    FORCED_TAKEOVER = "forced_takeover"
    ADOPTED = "adopted"


# The moves (claims.protocol.records.MOVE_KINDS), spelled out here for the index's
# condition and its migration (a test holds them equal); the reads name the same list.
MOVED_FROM_KINDS = ["forced_release", "forced_takeover", "rotated", "takeover"]
MOVED_FROM_INDEX = "claim_event_moved_from_idx"


class ClaimEvent(models.Model):
    """A claim transition or operator action. Renewals are not logged one by one."""

    # Not a foreign key: events outlive a deleted workflow row, as its claim row does.
    workflow_id = models.CharField(max_length=WORKFLOW_ID_MAX_LENGTH)
    kind = models.CharField(max_length=16, choices=ClaimEventKind.choices)
    epoch_before = models.BigIntegerField(null=True, blank=True)
    epoch_after = models.BigIntegerField(null=True, blank=True)
    engine_id = models.CharField(max_length=ENGINE_ID_MAX_LENGTH, null=True, blank=True)
    actor = models.CharField(max_length=150, null=True, blank=True)
    reason = models.TextField(blank=True)
    at_ms = models.BigIntegerField()
    # The bulk job (claims.models.BulkJob) that made this transition, if one did.
    bulk_job_id = models.BigIntegerField(null=True, blank=True)
    # For a move: the engine the row named as holder before it (migrations 0030, 0031), so
    # that each engine under a session reads the moves of its own claims only; null: none
    # or not known, and every engine reads it (docs/design.md §12).
    holder_before = models.CharField(max_length=ENGINE_ID_MAX_LENGTH, null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(
                fields=["holder_before", "at_ms"],
                condition=Q(kind__in=MOVED_FROM_KINDS),
                name=MOVED_FROM_INDEX,
            ),
            models.Index(
                fields=["bulk_job_id", "id"],
                condition=Q(bulk_job_id__isnull=False),
                name="claim_event_bulk_job_idx",
            ),
            models.Index(fields=["workflow_id", "id"], name="claim_event_workflow_idx"),
            models.Index(fields=["at_ms"], name="claim_event_at_idx"),
            # An engine's recent events (its page), newest first, read along one engine's
            # entries: through the time index alone they are found among every engine's.
            models.Index(fields=["engine_id", "at_ms", "id"], name="claim_event_engine_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.workflow_id} {self.kind} {self.epoch_before}->{self.epoch_after}"
