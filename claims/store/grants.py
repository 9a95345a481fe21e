"""Set-based reads and grants for the reclaim pass: many takeovers in one statement."""

from __future__ import annotations

import json
from collections.abc import Sequence

from django.db import connection, transaction

from claims.models import ClaimEvent, Workflow, WorkflowClaim
from claims.protocol.records import ClaimRow, GrantPlan, WorkflowInfo

from .rows import HOLDER_COLUMNS, claim_row_from_values, event_row

CHUNK = 5_000

# SKIP LOCKED: rows another engine is writing are left to it (reported as not
# granted) instead of being waited on, and the ORDER BY keeps two engines that
# lock overlapping sets from deadlocking.
_GRANT_POSTGRES = """
WITH u AS (
    SELECT * FROM unnest(
        %s::text[], %s::bigint[], %s::text[], %s::bigint[], %s::bigint[], %s::bigint[],
        %s::text[], %s::bigint[], %s::bigint[]
    ) AS u(wid, ep, o_engine, o_epoch, o_expires, o_claimed, n_engine, n_expires, n_claimed)
), locked AS (
    SELECT c.workflow_id FROM {table} c JOIN u ON c.workflow_id = u.wid
    WHERE c.epoch = u.ep
      AND c.holder_engine_id IS NOT DISTINCT FROM u.o_engine
      AND c.holder_epoch IS NOT DISTINCT FROM u.o_epoch
      AND c.holder_expires_at_ms IS NOT DISTINCT FROM u.o_expires
      AND c.holder_claimed_at_ms IS NOT DISTINCT FROM u.o_claimed
    ORDER BY c.workflow_id
    FOR UPDATE OF c SKIP LOCKED
)
UPDATE {table} c SET epoch = u.ep + 1, holder_engine_id = u.n_engine, holder_epoch = u.ep + 1,
    holder_expires_at_ms = u.n_expires, holder_claimed_at_ms = u.n_claimed
FROM u, locked
WHERE c.workflow_id = locked.workflow_id AND u.wid = c.workflow_id AND c.epoch = u.ep
RETURNING c.workflow_id
"""

# SQLite runs one writer at a time (IMMEDIATE transactions), so no row locks are needed;
# IS is SQLite's null-safe equality.
_GRANT_SQLITE = """
UPDATE {table} SET epoch = u.ep + 1, holder_engine_id = u.n_engine, holder_epoch = u.ep + 1,
    holder_expires_at_ms = u.n_expires, holder_claimed_at_ms = u.n_claimed
FROM (
    SELECT json_extract(value, '$[0]') AS wid, json_extract(value, '$[1]') AS ep,
           json_extract(value, '$[2]') AS o_engine, json_extract(value, '$[3]') AS o_epoch,
           json_extract(value, '$[4]') AS o_expires, json_extract(value, '$[5]') AS o_claimed,
           json_extract(value, '$[6]') AS n_engine, json_extract(value, '$[7]') AS n_expires,
           json_extract(value, '$[8]') AS n_claimed
    FROM json_each(%s)
) AS u
WHERE {table}.workflow_id = u.wid AND {table}.epoch = u.ep
  AND {table}.holder_engine_id IS u.o_engine AND {table}.holder_epoch IS u.o_epoch
  AND {table}.holder_expires_at_ms IS u.o_expires
  AND {table}.holder_claimed_at_ms IS u.o_claimed
RETURNING {table}.workflow_id
"""


_INSERT_POSTGRES = """
INSERT INTO {table} (workflow_id, epoch, holder_engine_id, holder_epoch,
                     holder_expires_at_ms, holder_claimed_at_ms)
SELECT u.wid, 1, u.n_engine, 1, u.n_expires, u.n_claimed
FROM unnest(%s::text[], %s::text[], %s::bigint[], %s::bigint[])
    AS u(wid, n_engine, n_expires, n_claimed)
ORDER BY u.wid
ON CONFLICT (workflow_id) DO NOTHING
RETURNING workflow_id
"""

# "WHERE true" lets SQLite tell the upsert clause from a join constraint.
_INSERT_SQLITE = """
INSERT INTO {table} (workflow_id, epoch, holder_engine_id, holder_epoch,
                     holder_expires_at_ms, holder_claimed_at_ms)
SELECT json_extract(value, '$[0]'), 1, json_extract(value, '$[1]'), 1,
       json_extract(value, '$[2]'), json_extract(value, '$[3]')
FROM json_each(%s) WHERE true
ON CONFLICT (workflow_id) DO NOTHING
RETURNING workflow_id
"""


def _plan_row(plan: GrantPlan) -> list[object]:
    observed = plan.expected_holder
    return [
        plan.workflow_id,
        plan.expected_epoch,
        None if observed is None else observed.engine_id,
        None if observed is None else observed.epoch,
        None if observed is None else observed.expires_at_ms,
        None if observed is None else observed.claimed_at_ms,
        plan.holder.engine_id,
        plan.holder.expires_at_ms,
        plan.holder.claimed_at_ms,
    ]


class GrantQueries:
    def read_claims(self, workflow_ids: Sequence[str]) -> dict[str, ClaimRow]:
        rows: dict[str, ClaimRow] = {}
        for start in range(0, len(workflow_ids), CHUNK):
            chunk = workflow_ids[start : start + CHUNK]
            for workflow_id, *values in WorkflowClaim.objects.filter(
                workflow_id__in=chunk
            ).values_list("workflow_id", "epoch", *HOLDER_COLUMNS):
                rows[workflow_id] = claim_row_from_values(workflow_id, *values)
        return rows

    def read_workflows(self, workflow_ids: Sequence[str]) -> dict[str, WorkflowInfo]:
        infos: dict[str, WorkflowInfo] = {}
        for start in range(0, len(workflow_ids), CHUNK):
            chunk = workflow_ids[start : start + CHUNK]
            for workflow_id, status, workflow_type in Workflow.objects.filter(
                workflow_id__in=chunk
            ).values_list("workflow_id", "status", "workflow_type"):
                infos[workflow_id] = WorkflowInfo(workflow_id, status, workflow_type)
        return infos

    def grant_many(self, plans: Sequence[GrantPlan]) -> set[str]:
        granted: set[str] = set()
        for start in range(0, len(plans), CHUNK):
            granted |= self._grant_chunk(plans[start : start + CHUNK])
        return granted

    def insert_many(self, plans: Sequence[GrantPlan]) -> set[str]:
        inserted: set[str] = set()
        for start in range(0, len(plans), CHUNK):
            chunk = plans[start : start + CHUNK]
            rows: list[list[object]] = [
                [p.workflow_id, p.holder.engine_id, p.holder.expires_at_ms, p.holder.claimed_at_ms]
                for p in chunk
            ]
            inserted |= self._execute_with_events(_INSERT_POSTGRES, _INSERT_SQLITE, rows, chunk)
        return inserted

    def _grant_chunk(self, plans: Sequence[GrantPlan]) -> set[str]:
        if not plans:
            return set()
        rows = [_plan_row(plan) for plan in plans]
        return self._execute_with_events(_GRANT_POSTGRES, _GRANT_SQLITE, rows, plans)

    def _execute_with_events(
        self,
        postgres_sql: str,
        sqlite_sql: str,
        rows: list[list[object]],
        plans: Sequence[GrantPlan],
    ) -> set[str]:
        """Run one set-based statement and write the events of the rows it changed,
        in one transaction."""
        table = connection.ops.quote_name(WorkflowClaim._meta.db_table)
        with transaction.atomic(), connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                columns = [list(column) for column in zip(*rows, strict=True)]
                cursor.execute(postgres_sql.format(table=table), columns)
            else:
                cursor.execute(sqlite_sql.format(table=table), [json.dumps(rows)])
            changed = {workflow_id for (workflow_id,) in cursor.fetchall()}
            ClaimEvent.objects.bulk_create(
                event_row(plan.event)
                for plan in plans
                if plan.event is not None and plan.workflow_id in changed
            )
        return changed
