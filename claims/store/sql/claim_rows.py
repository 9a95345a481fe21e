"""The claim rows' statements (``WorkflowClaim``, and the ``ClaimEvent`` each transition logs).

Every compare-and-swap compares with null-safe equality (PostgreSQL's IS NOT
DISTINCT FROM, SQLite's IS), which is what the ORM's ``filter(col=None)`` meant:
an absent holder is all nulls, and a garbage holder may have any of them null.

A holder that names an engine session (the engine-lease mode, docs/design.md §12) is
taken over only once that session is not open: the grants add that condition
(``OPEN_SESSION``), which a closed session never leaves.

On PostgreSQL a transition and its ClaimEvent row are one statement: the CAS runs
in a data-modifying CTE whose RETURNING feeds the event INSERT, so the event is
written exactly when the CAS applied, and the pair commits without a BEGIN/COMMIT
round trip. SQLite has no data-modifying CTEs; there the store runs the CAS and the
INSERT in one transaction.

The set-based statements (``grant_many``, ``insert_many``, ``renew_many``) take their
rows as one array per column on PostgreSQL (``unnest``) and as one JSON array of rows
on SQLite (``json_each``), and return the keys of the rows they changed.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from django.db import connection

from claims.models import ClaimEvent, WorkflowClaim

from ._names import POSTGRESQL, column, columns, dialect, table
from .engine_sessions import open_session

HOLDER_COLUMNS = (
    "holder_engine_id",
    "holder_epoch",
    "holder_expires_at_ms",
    "holder_claimed_at_ms",
    "holder_session_epoch",
)
# What an event says happened, in ClaimEvent's order; the audit CSV and the admin list
# show these too.
EVENT_TRANSITION_FIELDS = (
    "workflow_id",
    "kind",
    "epoch_before",
    "epoch_after",
    "engine_id",
    "actor",
)
EVENT_FIELDS = (*EVENT_TRANSITION_FIELDS, "reason", "at_ms", "holder_before")


@dataclass(frozen=True)
class ClaimStatements:
    """Each statement takes its parameters positionally, in the order noted beside it."""

    read: str  # workflow_id
    renew: str  # new expiry, workflow_id, epoch, held holder x5
    event: str  # the event's EVENT_FIELDS
    # insert:  workflow_id, holder x5
    # grant:   new epoch, holder x5, workflow_id, expected epoch, expected holder x5
    # grant_from_session: grant's, then the expected holder's engine and session epoch
    # rotate:  new epoch, holder x5, workflow_id, expected epoch
    # release: workflow_id, epoch, held holder x5
    transitions: Mapping[str, str]
    # PostgreSQL only (empty on SQLite): a transition's parameters, then its event's.
    logged: Mapping[str, str]
    # PostgreSQL: one array per column of the GrantPlan rows (claims.store.claim_sets);
    # SQLite: the rows as one JSON array. Each returns the keys it changed.
    grant_many: str  # wid, epoch, observed holder x5, new engine, expires, claimed, session
    insert_many: str  # wid, engine, expires, claimed, session
    # new expiry; then PostgreSQL: wid, epoch, holder epoch, engine, expires, claimed,
    # session, wid again; SQLite: JSON rows of wid, epoch, engine, expires, claimed, session.
    renew_many: str
    # The (engine, session epoch) pair after the one given, in the order of the partial
    # index workflow_claim_session_idx: one index step per pair the claims name.
    next_session_pair: str  # engine, session epoch
    # Every such pair in one statement: the same index steps, walked by the server in a
    # recursive query (PostgreSQL; SQLite has no LATERAL and steps from the client).
    session_pairs: str | None


class _Names(NamedTuple):
    """The claim table and its columns, quoted."""

    claims: str
    wf: str
    epoch: str
    engine: str
    holder_epoch: str
    expires: str
    claimed: str
    session: str


def _names() -> _Names:
    return _Names(
        table(WorkflowClaim),
        *columns(WorkflowClaim, ("workflow_id", "epoch", *HOLDER_COLUMNS)),
    )


def _grant_many(vendor: str) -> str:
    claims, wf, epoch, engine, holder_epoch, expires, claimed, session = _names()
    set_holder = (
        f"{epoch} = u.ep + 1, {engine} = u.n_engine, {holder_epoch} = u.ep + 1, "
        f"{expires} = u.n_expires, {claimed} = u.n_claimed, {session} = u.n_session"
    )
    # A null observed session matches no session row, so the condition holds trivially
    # for a per-workflow holder.
    not_open = f"NOT {open_session('u.o_engine', 'u.o_session')}"
    # SKIP LOCKED: rows another engine is writing are left to it (reported as not
    # granted) instead of being waited on, and the ORDER BY keeps two engines that
    # lock overlapping sets from deadlocking.
    grant_postgresql = f"""
WITH u AS (
    SELECT * FROM unnest(
        %s::text[], %s::bigint[], %s::text[], %s::bigint[], %s::bigint[], %s::bigint[],
        %s::bigint[], %s::text[], %s::bigint[], %s::bigint[], %s::bigint[]
    ) AS u(wid, ep, o_engine, o_epoch, o_expires, o_claimed, o_session,
           n_engine, n_expires, n_claimed, n_session)
), locked AS (
    SELECT c.{wf} FROM {claims} c JOIN u ON c.{wf} = u.wid
    WHERE c.{epoch} = u.ep
      AND c.{engine} IS NOT DISTINCT FROM u.o_engine
      AND c.{holder_epoch} IS NOT DISTINCT FROM u.o_epoch
      AND c.{expires} IS NOT DISTINCT FROM u.o_expires
      AND c.{claimed} IS NOT DISTINCT FROM u.o_claimed
      AND c.{session} IS NOT DISTINCT FROM u.o_session
      AND {not_open}
    ORDER BY c.{wf}
    FOR UPDATE OF c SKIP LOCKED
)
UPDATE {claims} c SET {set_holder}
FROM u, locked
WHERE c.{wf} = locked.{wf} AND u.wid = c.{wf} AND c.{epoch} = u.ep
RETURNING c.{wf}
"""
    # SQLite runs one writer at a time (IMMEDIATE transactions), so no row locks are
    # needed; IS is SQLite's null-safe equality.
    grant_sqlite = f"""
UPDATE {claims} SET {set_holder}
FROM (
    SELECT json_extract(value, '$[0]') AS wid, json_extract(value, '$[1]') AS ep,
           json_extract(value, '$[2]') AS o_engine, json_extract(value, '$[3]') AS o_epoch,
           json_extract(value, '$[4]') AS o_expires, json_extract(value, '$[5]') AS o_claimed,
           json_extract(value, '$[6]') AS o_session,
           json_extract(value, '$[7]') AS n_engine, json_extract(value, '$[8]') AS n_expires,
           json_extract(value, '$[9]') AS n_claimed, json_extract(value, '$[10]') AS n_session
    FROM json_each(%s)
) AS u
WHERE {claims}.{wf} = u.wid AND {claims}.{epoch} = u.ep
  AND {claims}.{engine} IS u.o_engine AND {claims}.{holder_epoch} IS u.o_epoch
  AND {claims}.{expires} IS u.o_expires
  AND {claims}.{claimed} IS u.o_claimed
  AND {claims}.{session} IS u.o_session
  AND {not_open}
RETURNING {claims}.{wf}
"""
    return dialect(vendor, postgresql=grant_postgresql, sqlite=grant_sqlite)


def _insert_many(vendor: str) -> str:
    claims, wf, epoch, engine, holder_epoch, expires, claimed, session = _names()
    holder = f"{wf}, {epoch}, {engine}, {holder_epoch}, {expires}, {claimed}, {session}"
    insert_postgresql = f"""
INSERT INTO {claims} ({holder})
SELECT u.wid, 1, u.n_engine, 1, u.n_expires, u.n_claimed, u.n_session
FROM unnest(%s::text[], %s::text[], %s::bigint[], %s::bigint[], %s::bigint[])
    AS u(wid, n_engine, n_expires, n_claimed, n_session)
ORDER BY u.wid
ON CONFLICT ({wf}) DO NOTHING
RETURNING {wf}
"""
    # "WHERE true" lets SQLite tell the upsert clause from a join constraint.
    insert_sqlite = f"""
INSERT INTO {claims} ({holder})
SELECT json_extract(value, '$[0]'), 1, json_extract(value, '$[1]'), 1,
       json_extract(value, '$[2]'), json_extract(value, '$[3]'), json_extract(value, '$[4]')
FROM json_each(%s) WHERE true
ON CONFLICT ({wf}) DO NOTHING
RETURNING {wf}
"""
    return dialect(vendor, postgresql=insert_postgresql, sqlite=insert_sqlite)


def _renew_many(vendor: str) -> str:
    claims, wf, epoch, engine, holder_epoch, expires, claimed, session = _names()
    # Each chunk must reach its claim rows by key. The explicit key list keeps the scan
    # of the claim table to the chunk's rows whatever join the planner picks; and the
    # holder epoch comes as its own array because equating both epoch columns to one
    # input lets the planner infer epoch = holder_epoch, misjudge the match as a few
    # rows, and hash the whole table for every chunk. A holder renewed here carries its
    # own expiry, so plain equality holds for four columns (a null never matches); the
    # session epoch, null for such a holder, compares null-safely like every CAS's.
    renew_postgresql = f"""
UPDATE {claims} AS c SET {expires} = %s
FROM unnest(
    %s::text[], %s::bigint[], %s::bigint[], %s::text[], %s::bigint[], %s::bigint[], %s::bigint[]
) AS u(wid, ep, holder_ep, engine, expires, claimed, session)
WHERE c.{wf} = ANY(%s::text[])
  AND c.{wf} = u.wid AND c.{epoch} = u.ep AND c.{holder_epoch} = u.holder_ep
  AND c.{engine} = u.engine AND c.{expires} = u.expires
  AND c.{claimed} = u.claimed AND c.{session} IS NOT DISTINCT FROM u.session
RETURNING c.{wf}
"""
    renew_sqlite = f"""
UPDATE {claims} SET {expires} = %s
FROM (
    SELECT json_extract(value, '$[0]') AS wid, json_extract(value, '$[1]') AS ep,
           json_extract(value, '$[2]') AS engine, json_extract(value, '$[3]') AS expires,
           json_extract(value, '$[4]') AS claimed, json_extract(value, '$[5]') AS session
    FROM json_each(%s)
) AS u
WHERE {claims}.{wf} = u.wid AND {claims}.{epoch} = u.ep AND {claims}.{holder_epoch} = u.ep
  AND {claims}.{engine} = u.engine AND {claims}.{expires} = u.expires
  AND {claims}.{claimed} = u.claimed AND {claims}.{session} IS u.session
RETURNING {claims}.{wf}
"""
    return dialect(vendor, postgresql=renew_postgresql, sqlite=renew_sqlite)


def _next_session_pair() -> str:
    claims, _wf, _epoch, engine, _holder_epoch, _expires, _claimed, session = _names()
    # The row-value comparison is one index range on both databases; the IS NOT NULL
    # repeats the partial index's predicate so the planners pick it.
    return (
        f"SELECT {engine}, {session} FROM {claims} "
        f"WHERE {session} IS NOT NULL AND ({engine}, {session}) > (%s, %s) "
        f"ORDER BY {engine}, {session} LIMIT 1"
    )


def _session_pairs(vendor: str) -> str | None:
    if vendor != "postgresql":
        return None
    claims, _wf, _epoch, engine, _holder_epoch, _expires, _claimed, session = _names()
    step = (
        f"SELECT {engine}, {session} FROM {claims} WHERE {session} IS NOT NULL"
        " {after} "
        f"ORDER BY {engine}, {session} LIMIT 1"
    )
    return (
        "WITH RECURSIVE pairs(engine, session) AS ("
        f"({step.format(after='')}) UNION ALL "
        "SELECT next.* FROM pairs, LATERAL ("
        f"{step.format(after=f'AND ({engine}, {session}) > (pairs.engine, pairs.session)')}"
        ") AS next) SELECT engine, session FROM pairs"
    )


@functools.cache
def _statements(vendor: str) -> ClaimStatements:
    same = dialect(vendor, postgresql="IS NOT DISTINCT FROM", sqlite="IS")
    claims = table(WorkflowClaim)
    wf, epoch = column(WorkflowClaim, "workflow_id"), column(WorkflowClaim, "epoch")
    holder = columns(WorkflowClaim, HOLDER_COLUMNS)
    expires = column(WorkflowClaim, "holder_expires_at_ms")

    set_holder = ", ".join(f"{name} = %s" for name in holder)
    clear_holder = ", ".join(f"{name} = NULL" for name in holder)
    holder_is = " AND ".join(f"{name} {same} %s" for name in holder)
    at_epoch = f"{wf} = %s AND {epoch} = %s"

    events = table(ClaimEvent)
    event_columns = ", ".join(columns(ClaimEvent, EVENT_FIELDS))
    event_values = ", ".join(["%s"] * len(EVENT_FIELDS))

    grant = f"UPDATE {claims} SET {epoch} = %s, {set_holder} WHERE {at_epoch} AND {holder_is}"
    holder_values = ", ".join(["%s"] * len(holder))
    transitions = {
        "insert": (
            f"INSERT INTO {claims} ({wf}, {epoch}, {', '.join(holder)}) "
            f"VALUES (%s, 1, {holder_values}) ON CONFLICT DO NOTHING"
        ),
        "grant": grant,
        "grant_from_session": f"{grant} AND NOT {open_session('%s', '%s')}",
        "rotate": f"UPDATE {claims} SET {epoch} = %s, {set_holder} WHERE {at_epoch}",
        "release": f"UPDATE {claims} SET {clear_holder} WHERE {at_epoch} AND {holder_is}",
    }
    logged: dict[str, str] = {}
    if vendor == POSTGRESQL:
        logged = {
            name: (
                f"WITH applied AS ({sql} RETURNING 1) "
                f"INSERT INTO {events} ({event_columns}) SELECT {event_values} FROM applied"
            )
            for name, sql in transitions.items()
        }
    return ClaimStatements(
        read=f"SELECT {epoch}, {', '.join(holder)} FROM {claims} WHERE {wf} = %s",
        renew=f"UPDATE {claims} SET {expires} = %s WHERE {at_epoch} AND {holder_is}",
        event=f"INSERT INTO {events} ({event_columns}) VALUES ({event_values})",
        transitions=transitions,
        logged=logged,
        grant_many=_grant_many(vendor),
        insert_many=_insert_many(vendor),
        renew_many=_renew_many(vendor),
        next_session_pair=_next_session_pair(),
        session_pairs=_session_pairs(vendor),
    )


def claim_statements(vendor: str | None = None) -> ClaimStatements:
    """The statements for a database vendor, the default database's unless named (built on
    first use, then cached)."""
    return _statements(vendor or connection.vendor)
