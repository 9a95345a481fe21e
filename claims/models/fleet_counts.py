"""The fleet's counts kept by the writes that change them (docs/design.md §7, "The fleet
snapshot"): what beat's snapshot reads instead of scanning every claim and workflow.

The database writes the deltas itself, by triggers on the claims and workflows tables
(migration 0029), in the transaction of the write: a claim row that changes its holder, its
session or its row class (ownerless, invalid, session, lease) adds -1 under its old key and
+1 under its new one; a workflow that changes status or type likewise. A renewal changes
none of these, so it writes nothing. Beat folds the deltas into the kept counts (deleting
each delta in the same transaction that adds it in, so each is counted once), and recounts
from the rows now and then in one snapshot, which checks and repairs them.
"""

from __future__ import annotations

from django.db import models

from .ids import ENGINE_ID_MAX_LENGTH
from .singletons import only_row_one, singleton_id

FLEET_COUNT_DELTA_TABLE = "claims_fleetcountdelta"


class FleetCountKind(models.TextChoices):
    CLAIM = "claim"  # name: holder engine (null when none), part: row class
    WORKFLOW = "workflow"  # name: status, part: workflow type


class FleetCountDelta(models.Model):
    """One change of a count, written by a trigger; folded and deleted by beat."""

    kind = models.CharField(max_length=8, choices=FleetCountKind.choices)
    name = models.CharField(max_length=ENGINE_ID_MAX_LENGTH, null=True)
    session_epoch = models.BigIntegerField(null=True)
    part = models.CharField(max_length=100)
    n = models.IntegerField()

    class Meta:
        db_table = FLEET_COUNT_DELTA_TABLE

    def __str__(self) -> str:
        return f"{self.kind} {self.name}/{self.session_epoch}/{self.part} {self.n:+d}"


class FleetCounts(models.Model):
    """The kept counts, one row: ``claims`` as [holder, session epoch, class, n] and
    ``workflows`` as [status, type, n], with zero counts left out; ``recounted_at_ms`` is
    when they were last counted from the rows; ``unmarked_ownerless`` the running workflows
    that recount found with no holder and no ownerless mark (claims.models.ownerless),
    judged again by every snapshot until they are held or done."""

    id = singleton_id()
    recounted_at_ms = models.BigIntegerField()
    claims = models.JSONField(default=list)
    workflows = models.JSONField(default=list)
    unmarked_ownerless = models.JSONField(default=list)

    class Meta:
        constraints = [only_row_one("fleet_counts_singleton")]

    def __str__(self) -> str:
        return f"fleet counts recounted at {self.recounted_at_ms}"
