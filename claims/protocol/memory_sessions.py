"""The session rows of the in-memory store: the ``SessionStore`` contract behind one lock."""

from __future__ import annotations

import threading
from dataclasses import replace

from .records import Holder
from .sessions import SessionRow, session_is_open


class MemorySessionRows:
    """Mixed into ``MemoryClaimStore``, which owns the lock and the rows."""

    _lock: threading.RLock
    _sessions: dict[str, SessionRow]

    def read_session(self, engine_id: str) -> SessionRow | None:
        with self._lock:
            return self._sessions.get(engine_id)

    def cas_open_session(
        self, engine_id: str, *, expected_epoch: int | None, expires_at_ms: int, now_ms: int
    ) -> bool:
        with self._lock:
            row = self._sessions.get(engine_id)
            current = None if row is None else row.epoch
            if current != expected_epoch:
                return False
            epoch = 1 if expected_epoch is None else expected_epoch + 1
            self._sessions[engine_id] = SessionRow(engine_id, epoch, expires_at_ms, now_ms, now_ms)
            return True

    def cas_renew_session(
        self,
        engine_id: str,
        *,
        epoch: int,
        expected_expires_at_ms: int,
        expires_at_ms: int,
        renewed_at_ms: int,
    ) -> bool:
        with self._lock:
            row = self._open_at(engine_id, epoch, expected_expires_at_ms)
            if row is None:
                return False
            self._sessions[engine_id] = replace(
                row, expires_at_ms=expires_at_ms, renewed_at_ms=renewed_at_ms
            )
            return True

    def cas_close_session(
        self,
        engine_id: str,
        *,
        epoch: int,
        expected_expires_at_ms: int,
        closed_at_ms: int,
        closed_by: str,
    ) -> bool:
        with self._lock:
            row = self._open_at(engine_id, epoch, expected_expires_at_ms)
            if row is None:
                return False
            self._sessions[engine_id] = replace(row, closed_at_ms=closed_at_ms, closed_by=closed_by)
            return True

    def session_of(self, holder: Holder | None) -> SessionRow | None:
        """The session row a claim holder names, as a read joins it (None: no row)."""
        engine = None if holder is None else holder.session_engine()
        if engine is None:
            return None
        with self._lock:
            return self._sessions.get(engine)

    def holder_session_open(self, holder: Holder | None) -> bool:
        """Whether the session a holder names is open: a valid row at that epoch, not
        closed. A takeover of a session holder's claim is refused while it is."""
        return holder is not None and session_is_open(self.session_of(holder), holder.session_epoch)

    def put_session(self, row: SessionRow) -> None:
        """Write a session row as-is (garbled ones included), bypassing every condition."""
        with self._lock:
            self._sessions[row.engine_id] = row

    def _open_at(self, engine_id: str, epoch: int, expires_at_ms: int) -> SessionRow | None:
        row = self._sessions.get(engine_id)
        if row is None or row.epoch != epoch or row.expires_at_ms != expires_at_ms:
            return None
        return None if row.closed_at_ms is not None else row
