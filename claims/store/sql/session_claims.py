"""The claims of one dead session, taken over a chunk a statement (docs/design.md §4, "A
mass failure is split").

When an engine dies holding thousands of claims, each live engine takes them over by the
session, not by the id: one statement picks up to a chunk of the rows naming the dead
session, of running types this engine runs, and moves each to its next epoch under the
taker's open session, with its event. Nothing is read first: the session was judged
dead once, and the statement itself checks that it is no longer open (a closed session
never opens again at that epoch). ``FOR UPDATE SKIP LOCKED`` leaves rows another engine
is taking to it, so the live engines take disjoint parts of the failure at once.
"""

from __future__ import annotations

import functools

from django.db import connection

from claims.models import ClaimEvent, Workflow, WorkflowClaim

from ._names import columns, dialect, table
from .claim_rows import EVENT_FIELDS, HOLDER_COLUMNS
from .engine_sessions import open_session


@functools.cache
def _take_over_session(vendor: str) -> str:
    claims, events, workflows = table(WorkflowClaim), table(ClaimEvent), table(Workflow)
    wf, epoch, engine, holder_epoch, expires, claimed, session = columns(
        WorkflowClaim, ("workflow_id", "epoch", *HOLDER_COLUMNS)
    )
    w_id, w_type, w_status = columns(Workflow, ("workflow_id", "workflow_type", "status"))
    event_columns = ", ".join(columns(ClaimEvent, EVENT_FIELDS))

    def set_holder(row: str) -> str:
        return (
            f"{epoch} = {row}{epoch} + 1, {engine} = %s, {holder_epoch} = {row}{epoch} + 1, "
            f"{expires} = %s, {claimed} = %s, {session} = %s"
        )

    # The session's own columns as constants: the check is judged once for the chunk.
    still_open = open_session("%s", "%s")
    postgresql = f"""
WITH picked AS (
    SELECT c.{wf}, w.{w_status} AS status
    FROM {claims} c JOIN {workflows} w ON w.{w_id} = c.{wf}
    WHERE c.{engine} = %s AND c.{session} = %s
      AND (%s::text[] IS NULL OR w.{w_type} = ANY(%s::text[]))
      AND NOT c.{wf} = ANY(%s::text[])
      AND NOT {still_open}
    LIMIT %s
    FOR UPDATE OF c SKIP LOCKED
), taken AS (
    UPDATE {claims} c SET {set_holder("c.")}
    FROM picked WHERE c.{wf} = picked.{wf}
    RETURNING c.{wf} AS wf, c.{epoch} AS epoch, picked.status
), logged AS (
    INSERT INTO {events} ({event_columns})
    SELECT wf, 'takeover', epoch - 1, epoch, %s, NULL, '', %s, %s FROM taken
)
SELECT wf, epoch, status FROM taken
"""
    # SQLite runs one writer at a time, so nothing is locked or skipped; the caller
    # reads the statuses and writes the events in the same transaction.
    sqlite = f"""
UPDATE {claims} SET {set_holder("")}
WHERE {wf} IN (
    SELECT p.{wf} FROM {claims} p JOIN {workflows} w ON w.{w_id} = p.{wf}
    WHERE p.{engine} = %s AND p.{session} = %s
      AND (%s IS NULL OR w.{w_type} IN (SELECT value FROM json_each(%s)))
      AND p.{wf} NOT IN (SELECT value FROM json_each(%s))
      AND NOT {still_open}
    LIMIT %s
)
RETURNING {wf}, {epoch}
"""
    return dialect(vendor, postgresql=postgresql, sqlite=sqlite)


def take_over_session_statement(vendor: str | None = None) -> str:
    """Parameters, positionally. The pick: the dead session's engine id and epoch; the
    workflow types (None: any) twice; the ids to skip; the dead session's engine id and
    epoch again; the limit. The taker: its engine id, expiry (None), claim time and
    session epoch. PostgreSQL writes the pick first, then the taker, then the event's
    engine id, time and the dead session's engine id (the holder before), and returns
    (id, new epoch, workflow status), the types and the skipped ids as arrays; SQLite
    writes the taker first, then the pick, and returns (id, new epoch), the types and the
    skipped ids as JSON arrays."""
    return _take_over_session(vendor or connection.vendor)
