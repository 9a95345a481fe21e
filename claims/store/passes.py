"""Set-based statements for the engine passes: bulk renewal and the three reclaim sources."""

from __future__ import annotations

import json
from collections.abc import Sequence

from django.db import connection, transaction
from django.db.models import Exists, F, OuterRef, Q

from claims.models import (
    PendingRedrive,
    ReclaimCursor,
    Workflow,
    WorkflowClaim,
    WorkflowStatus,
    WorkflowVisibility,
)
from claims.protocol.constants import MAX_SAFE_INTEGER
from claims.protocol.records import Holder, ScanPage, WorkflowInfo

from .rows import insert_if_absent

# The predicate of the partial index workflow_claim_held_idx, term for term: PostgreSQL
# and SQLite use a partial index only for a query that repeats its predicate, and
# through it the reclaim queries read the held rows instead of every claim row.
HOLDER_PRESENT = (
    Q(holder_engine_id__isnull=False)
    | Q(holder_epoch__isnull=False)
    | Q(holder_expires_at_ms__isnull=False)
    | Q(holder_claimed_at_ms__isnull=False)
)

# The same validity rule as ClaimRow.holder_is_valid, as SQL.
HOLDER_INVALID = (
    Q(holder_engine_id__isnull=True)
    | Q(holder_engine_id="")
    | Q(holder_epoch__isnull=True)
    | ~Q(holder_epoch=F("epoch"))
    | Q(holder_expires_at_ms__isnull=True)
    | Q(holder_claimed_at_ms__isnull=True)
    | Q(holder_expires_at_ms__lt=0)
    | Q(holder_claimed_at_ms__lt=0)
    | Q(holder_expires_at_ms__gt=MAX_SAFE_INTEGER)
    | Q(holder_claimed_at_ms__gt=MAX_SAFE_INTEGER)
)

# Each chunk must reach its claim rows by key. The explicit key list keeps the scan of
# the claim table to the chunk's rows whatever join the planner picks; and the holder
# epoch comes as its own array because equating both epoch columns to one input lets
# the planner infer epoch = holder_epoch, misjudge the match as a few rows, and hash
# the whole table for every chunk.
_RENEW_POSTGRES = """
UPDATE {table} AS c SET holder_expires_at_ms = %s
FROM unnest(%s::text[], %s::bigint[], %s::bigint[], %s::text[], %s::bigint[], %s::bigint[])
    AS u(wid, ep, holder_ep, engine, expires, claimed)
WHERE c.workflow_id = ANY(%s::text[])
  AND c.workflow_id = u.wid AND c.epoch = u.ep AND c.holder_epoch = u.holder_ep
  AND c.holder_engine_id = u.engine AND c.holder_expires_at_ms = u.expires
  AND c.holder_claimed_at_ms = u.claimed
RETURNING c.workflow_id
"""

_RENEW_SQLITE = """
UPDATE {table} SET holder_expires_at_ms = %s
FROM (
    SELECT json_extract(value, '$[0]') AS wid, json_extract(value, '$[1]') AS ep,
           json_extract(value, '$[2]') AS engine, json_extract(value, '$[3]') AS expires,
           json_extract(value, '$[4]') AS claimed
    FROM json_each(%s)
) AS u
WHERE {table}.workflow_id = u.wid AND {table}.epoch = u.ep AND {table}.holder_epoch = u.ep
  AND {table}.holder_engine_id = u.engine AND {table}.holder_expires_at_ms = u.expires
  AND {table}.holder_claimed_at_ms = u.claimed
RETURNING {table}.workflow_id
"""


class PassQueries:
    """What the renew and reclaim passes ask of the database, each in one or two statements."""

    def renew_many(self, held: Sequence[tuple[str, Holder]], *, expires_at_ms: int) -> set[str]:
        if not held:
            return set()
        table = connection.ops.quote_name(WorkflowClaim._meta.db_table)
        rows = [(wf, h.epoch, h.engine_id, h.expires_at_ms, h.claimed_at_ms) for wf, h in held]
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                ids, epochs, engines, expires, claimed = (
                    list(column) for column in zip(*rows, strict=True)
                )
                cursor.execute(
                    _RENEW_POSTGRES.format(table=table),
                    [expires_at_ms, ids, epochs, epochs, engines, expires, claimed, ids],
                )
            else:
                sql = _RENEW_SQLITE.format(table=table)
                cursor.execute(sql, [expires_at_ms, json.dumps(rows)])
            return {workflow_id for (workflow_id,) in cursor.fetchall()}

    def read_workflow(self, workflow_id: str) -> WorkflowInfo | None:
        values = (
            Workflow.objects.filter(workflow_id=workflow_id)
            .values_list("status", "workflow_type")
            .first()
        )
        return None if values is None else WorkflowInfo(workflow_id, *values)

    def list_stale_holders(self, *, expired_before_ms: int) -> list[str]:
        return list(
            WorkflowClaim.objects.filter(HOLDER_PRESENT)
            .filter(Q(holder_expires_at_ms__lt=expired_before_ms) | HOLDER_INVALID)
            .order_by("workflow_id")
            .values_list("workflow_id", flat=True)
        )

    def list_held_by(self, *, engine_id: str) -> list[str]:
        return list(
            WorkflowClaim.objects.filter(HOLDER_PRESENT, holder_engine_id=engine_id)
            .order_by("workflow_id")
            .values_list("workflow_id", flat=True)
        )

    def list_unheld_running_indexed(self) -> list[str]:
        holder = WorkflowClaim.objects.filter(HOLDER_PRESENT, workflow_id=OuterRef("workflow_id"))
        return list(
            WorkflowVisibility.objects.filter(status=WorkflowStatus.RUNNING)
            .filter(~Exists(holder))
            .order_by("workflow_id")
            .values_list("workflow_id", flat=True)
        )

    def scan_unheld_running(
        self, *, cursor_name: str, limit: int, scanned_by: str, now_ms: int
    ) -> ScanPage:
        insert_if_absent(
            ReclaimCursor,
            {
                "name": cursor_name,
                "wraps": 0,
                "scanned_total": 0,
                "updated_at_ms": now_ms,
                "updated_by": scanned_by,
            },
        )
        with transaction.atomic():
            # Locking the cursor row makes concurrent engines scan successive pages.
            cursor = ReclaimCursor.objects.select_for_update().get(name=cursor_name)
            page = Workflow.objects.order_by("workflow_id")
            if cursor.last_workflow_id is not None:
                page = page.filter(workflow_id__gt=cursor.last_workflow_id)
            rows = list(page.values_list("workflow_id", "status")[:limit])
            running = [wf for wf, status in rows if status == WorkflowStatus.RUNNING]
            held = set(
                WorkflowClaim.objects.filter(HOLDER_PRESENT, workflow_id__in=running).values_list(
                    "workflow_id", flat=True
                )
            )
            wrapped = len(rows) < limit
            ReclaimCursor.objects.filter(name=cursor_name).update(
                last_workflow_id=None if wrapped else rows[-1][0],
                wraps=F("wraps") + int(wrapped),
                scanned_total=F("scanned_total") + len(rows),
                updated_at_ms=now_ms,
                updated_by=scanned_by,
            )
        return ScanPage([wf for wf in running if wf not in held], len(rows), wrapped)

    def save_pending_redrive(
        self, *, engine_id: str, workflow_id: str, epoch: int, error: str, now_ms: int
    ) -> None:
        changes = {"epoch": epoch, "last_error": error, "last_failed_at_ms": now_ms}
        with transaction.atomic():
            mine = PendingRedrive.objects.filter(engine_id=engine_id, workflow_id=workflow_id)
            if not mine.update(attempts=F("attempts") + 1, **changes):
                PendingRedrive.objects.create(
                    engine_id=engine_id,
                    workflow_id=workflow_id,
                    first_failed_at_ms=now_ms,
                    **changes,
                )

    def drop_pending_redrive(self, *, engine_id: str, workflow_id: str) -> None:
        PendingRedrive.objects.filter(engine_id=engine_id, workflow_id=workflow_id).delete()
