"""The floor under a bulk release on PostgreSQL: the writes the job must make, by hand.

A job that releases N claims writes, per item, the claim's compare-and-swap, its audit
event and its outcome, after freezing the N items. This does exactly those writes and
nothing else (no judgement, no locks, no rules, no progress row), each batch one
data-modifying statement in its own transaction: what the job's figure is to be read
against beside the claims-only baseline."""

from __future__ import annotations

from django.db import connection, transaction
from django.db.models import Model

from claims.models import BulkJob, BulkJobItem, ClaimEvent, WorkflowClaim


def _table(model: type[Model]) -> str:
    return str(connection.ops.quote_name(model._meta.db_table))


def _statement() -> str:
    claims, events, items = _table(WorkflowClaim), _table(ClaimEvent), _table(BulkJobItem)
    return f"""
WITH batch AS (
    -- The job's items, by primary key: its ids are one range (it alone froze meanwhile).
    SELECT id, workflow_id, frozen_epoch FROM {items} WHERE id BETWEEN %s AND %s
), changed AS (
    UPDATE {claims} c SET epoch = c.epoch + 1, holder_engine_id = NULL, holder_epoch = NULL,
        holder_expires_at_ms = NULL, holder_claimed_at_ms = NULL, holder_session_epoch = NULL
    FROM batch b WHERE c.workflow_id = b.workflow_id AND c.epoch = b.frozen_epoch
    RETURNING b.id AS item_id, c.workflow_id, c.epoch
), audited AS (
    INSERT INTO {events}
        (workflow_id, kind, epoch_before, epoch_after, engine_id, actor, reason, at_ms,
         bulk_job_id)
    SELECT workflow_id, 'forced_release', epoch - 1, epoch, NULL, 'bench', 'floor', %s, %s
    FROM changed ORDER BY item_id
)
UPDATE {items} i SET outcome = 'done', epoch_after = m.epoch, acted_at_ms = %s
FROM changed m WHERE i.id = m.item_id AND i.id BETWEEN %s AND %s
"""


def release_floor(engine_id: str, batch: int, now_ms: int) -> int:
    """Freeze ``engine_id``'s claims into a job's items, then release them a batch at a time
    with their events and outcomes; returns how many were released."""
    with transaction.atomic():
        job = BulkJob.objects.create(
            list_name="claims",
            query="floor",
            action="release",
            reason="floor",
            requested_by="bench",
            created_at_ms=now_ms,
            status="running",
        )
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {_table(BulkJobItem)} "
                "(job_id, workflow_id, frozen_epoch, outcome, detail) "
                f"SELECT %s, workflow_id, epoch, 'pending', '' FROM {_table(WorkflowClaim)} "
                "WHERE holder_engine_id = %s ORDER BY workflow_id",
                [job.pk, engine_id],
            )
            cursor.execute(
                f"SELECT min(id), max(id) FROM {_table(BulkJobItem)} WHERE job_id = %s",
                [job.pk],
            )
            first, last = cursor.fetchone()
    released = 0
    statement = _statement()
    with connection.cursor() as cursor:
        for start in range(first, last + 1, batch):
            end = min(start + batch - 1, last)
            with transaction.atomic():
                cursor.execute(statement, [start, end, now_ms, job.pk, now_ms, start, end])
                released += cursor.rowcount
    return released
