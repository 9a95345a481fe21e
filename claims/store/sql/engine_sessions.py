"""The session rows' statements (``EngineSession``, the engine-lease mode's liveness).

Each is one statement with the same text on PostgreSQL and SQLite. The renewal touches
one narrow row that no index covers beyond its key, so on PostgreSQL it is a HOT update.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from django.db import connection

from claims.models import EngineSession
from claims.protocol.constants import MAX_SAFE_INTEGER

from ._names import column, columns, insert_unless_present, table

SESSION_FIELDS = (
    "epoch",
    "expires_at_ms",
    "renewed_at_ms",
    "started_at_ms",
    "closed_at_ms",
    "closed_by",
)
OPEN_FIELDS = ("engine_id", "epoch", "expires_at_ms", "renewed_at_ms", "started_at_ms", "closed_by")


def open_session(engine: str, epoch: str) -> str:
    """SQL true when the session ``epoch`` of ``engine`` (two SQL expressions) is open: a
    valid row at that epoch, not closed (``SessionRow.is_valid``, as SQL)."""
    sessions = table(EngineSession)
    s_engine, s_epoch, expires, renewed, started, closed = columns(
        EngineSession,
        ("engine_id", "epoch", "expires_at_ms", "renewed_at_ms", "started_at_ms", "closed_at_ms"),
    )
    in_range = " AND ".join(
        f"s.{name} BETWEEN 0 AND {MAX_SAFE_INTEGER}" for name in (expires, renewed, started)
    )
    return (
        f"EXISTS (SELECT 1 FROM {sessions} s WHERE s.{s_engine} = {engine} "
        f"AND s.{s_epoch} = {epoch} AND s.{closed} IS NULL AND {in_range})"
    )


@dataclass(frozen=True)
class SessionStatements:
    """Each statement takes its parameters positionally, in the order noted beside it."""

    read: str  # engine_id -> SESSION_FIELDS
    open_first: str  # OPEN_FIELDS: epoch 1, closed_by '' (nothing if the engine has a row)
    reopen: str  # new epoch, expires, renewed, started, engine_id, expected epoch
    renew: str  # expires, renewed, engine_id, epoch, expected expires
    close: str  # closed at, closed by, engine_id, epoch, expected expires


@functools.cache
def _statements(vendor: str) -> SessionStatements:
    sessions = table(EngineSession)
    engine, epoch, expires, renewed, started, closed_at, closed_by = columns(
        EngineSession, ("engine_id", *SESSION_FIELDS)
    )
    open_at = f"{engine} = %s AND {epoch} = %s AND {expires} = %s AND {closed_at} IS NULL"
    return SessionStatements(
        read=(
            f"SELECT {', '.join(columns(EngineSession, SESSION_FIELDS))} "
            f"FROM {sessions} WHERE {column(EngineSession, 'engine_id')} = %s"
        ),
        open_first=insert_unless_present(EngineSession, OPEN_FIELDS),
        reopen=(
            f"UPDATE {sessions} SET {epoch} = %s, {expires} = %s, {renewed} = %s, "
            f"{started} = %s, {closed_at} = NULL, {closed_by} = '' "
            f"WHERE {engine} = %s AND {epoch} = %s"
        ),
        renew=f"UPDATE {sessions} SET {expires} = %s, {renewed} = %s WHERE {open_at}",
        close=f"UPDATE {sessions} SET {closed_at} = %s, {closed_by} = %s WHERE {open_at}",
    )


def session_statements(vendor: str | None = None) -> SessionStatements:
    """The statements for a database vendor, the default database's unless named."""
    return _statements(vendor or connection.vendor)
