"""The engine session rows: one read and three compare-and-swaps, each one statement."""

from __future__ import annotations

from collections.abc import Iterable

from claims.models import EngineSession
from claims.protocol.sessions import SessionRow

from .prepared import database, fetch_one, run
from .sql.engine_sessions import SESSION_FIELDS, session_statements


class SessionQueries:
    def read_session(self, engine_id: str) -> SessionRow | None:
        db = database()
        values = fetch_one(db, session_statements(db.vendor).read, (engine_id,))
        return None if values is None else SessionRow(engine_id, *values)

    def read_sessions(self, engine_ids: Iterable[str]) -> dict[str, SessionRow]:
        """The session rows of these engines; engines without one are absent."""
        rows = EngineSession.objects.filter(engine_id__in=list(engine_ids)).values_list(
            "engine_id", *SESSION_FIELDS
        )
        return {engine_id: SessionRow(engine_id, *values) for engine_id, *values in rows}

    def read_unclosed_sessions(self) -> dict[str, SessionRow]:
        """The session rows not closed: the live engines', and those of engines gone
        without closing theirs (until the engine that takes their claims over does)."""
        rows = EngineSession.objects.filter(closed_at_ms__isnull=True).values_list(
            "engine_id", *SESSION_FIELDS
        )
        return {engine_id: SessionRow(engine_id, *values) for engine_id, *values in rows}

    def cas_open_session(
        self, engine_id: str, *, expected_epoch: int | None, expires_at_ms: int, now_ms: int
    ) -> bool:
        db = database()
        statements = session_statements(db.vendor)
        if expected_epoch is None:
            params: tuple[object, ...] = (engine_id, 1, expires_at_ms, now_ms, now_ms, "")
            return run(db, statements.open_first, params) == 1
        params = (expected_epoch + 1, expires_at_ms, now_ms, now_ms, engine_id, expected_epoch)
        return run(db, statements.reopen, params) == 1

    def cas_renew_session(
        self,
        engine_id: str,
        *,
        epoch: int,
        expected_expires_at_ms: int,
        expires_at_ms: int,
        renewed_at_ms: int,
    ) -> bool:
        db = database()
        params = (expires_at_ms, renewed_at_ms, engine_id, epoch, expected_expires_at_ms)
        return run(db, session_statements(db.vendor).renew, params) == 1

    def cas_close_session(
        self,
        engine_id: str,
        *,
        epoch: int,
        expected_expires_at_ms: int,
        closed_at_ms: int,
        closed_by: str,
    ) -> bool:
        db = database()
        params = (closed_at_ms, closed_by, engine_id, epoch, expected_expires_at_ms)
        return run(db, session_statements(db.vendor).close, params) == 1
