"""One engine's session lease in the engine-lease mode (docs/design.md §12).

The engine renews this one row per renew interval, whatever it holds: one conditional
statement. A renewal that does not apply means the session is gone (a takeover closed it
after it expired, or it was reopened), and with it every claim naming it; the engine
learns that from the one failed statement, without a write per claim.

A statement that raised may have committed. Its intended expiry is remembered, and the
next call reads the row before acting: the row shows the intended expiry (it landed),
the one before (it did not), or something else (the session is gone). A renewal taken
wrongly as lost would drop every claim of the session, so a failure with a doubt
outstanding is checked by a read before it is believed.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Literal

from .offset_clock import Clock
from .sessions import SessionRow, SessionStore, may_close_for_takeover
from .timing import ClaimTiming

# A few statements in doubt at most: each later renewal supersedes the earlier ones.
MAX_SESSION_DOUBTS = 4

SessionStatus = Literal["opened", "renewed", "lost", "closed", "not-open"]


@dataclass(frozen=True, slots=True)
class SessionResult:
    status: SessionStatus
    epoch: int | None
    expires_at_ms: int | None = None


class EngineSessionLease:
    """Open, renew and close one engine's session; its local deadline follows the last
    renewal that is known to have applied."""

    def __init__(
        self,
        store: SessionStore,
        *,
        engine_id: str,
        clock: Clock,
        timing: ClaimTiming,
        monotonic: Clock | None = None,
    ) -> None:
        if not engine_id:
            raise ValueError("engine_id must be a non-empty string")
        self.store = store
        self.engine_id = engine_id
        self.clock = clock
        self._monotonic = monotonic if monotonic is not None else clock
        self.timing = timing
        # Statements on the row run one at a time; the state lock guards only the fields,
        # so a grant asking for the epoch never waits on a statement in flight.
        self._serial = threading.Lock()
        self._state = threading.Lock()
        self._epoch: int | None = None
        self._expires_at_ms: int | None = None  # as last written and known to have applied
        self._renewed_at_ms: int | None = None
        self._deadline_ms: int | None = None  # monotonic: sent before that write, plus TTL
        self._doubted_expiries: list[int] = []

    # -- local reads -------------------------------------------------------------------

    @property
    def epoch(self) -> int | None:
        """The open session's epoch, or None when no session is open."""
        with self._state:
            return self._epoch

    @property
    def expires_at_ms(self) -> int | None:
        with self._state:
            return self._expires_at_ms

    @property
    def renewed_at_ms(self) -> int | None:
        with self._state:
            return self._renewed_at_ms

    def within_deadline(self) -> bool:
        """True while the last renewal known to have applied cannot yet have lapsed."""
        with self._state:
            deadline = self._deadline_ms
        return deadline is not None and self._monotonic() < deadline

    # -- statements --------------------------------------------------------------------

    def open(self) -> SessionResult:
        """Start a new session: epoch 1 for an engine with no row, else the epoch after
        the row's (which ends whatever session the row held). Returns ``opened``, or
        ``lost`` if another writer moved the row between the read and the write."""
        with self._serial:
            return self._open()

    def ensure_open(self) -> SessionResult:
        """The open session, opening one only if none is: threads that all find no session
        open one between them, not one each (each new one would end the one before, and
        with it every claim just granted under it)."""
        with self._serial:
            with self._state:
                epoch, expires = self._epoch, self._expires_at_ms
            if epoch is not None:
                return SessionResult("opened", epoch, expires)
            return self._open()

    def _open(self) -> SessionResult:
        """``open``; the caller holds the statement lock."""
        row = self.store.read_session(self.engine_id)
        now, sent = self.clock(), self._monotonic()
        expires = now + self.timing.ttl_ms
        expected = None if row is None else row.epoch
        opened = self.store.cas_open_session(
            self.engine_id, expected_epoch=expected, expires_at_ms=expires, now_ms=now
        )
        epoch = 1 if expected is None else expected + 1
        if not opened:
            self._forget()
            return SessionResult("lost", epoch)
        with self._state:
            self._epoch, self._expires_at_ms, self._renewed_at_ms = epoch, expires, now
            self._deadline_ms = sent + self.timing.ttl_ms
            self._doubted_expiries = []
        return SessionResult("opened", epoch, expires)

    def renew(self) -> SessionResult:
        """Extend the session with one conditional statement. ``lost`` means the session
        is gone for good, and every claim naming it with it."""
        with self._serial:
            current = self._as_known()
            if isinstance(current, SessionResult):
                return current
            epoch, expected = current
            expires = self._renew_statement(epoch, expected)
            if expires is None and self._doubted_expiries:
                # A statement in doubt may have landed after the read that settled it.
                settled = self._settle(epoch)
                if settled is not None and settled != expected:
                    expires = self._renew_statement(epoch, settled)
            if expires is None:
                return self._lost(epoch)
            return SessionResult("renewed", epoch, expires)

    def _renew_statement(self, epoch: int, expected: int) -> int | None:
        """The renewal itself: the new expiry if it applied, None if it did not."""
        now, sent = self.clock(), self._monotonic()
        expires = now + self.timing.ttl_ms
        try:
            renewed = self.store.cas_renew_session(
                self.engine_id,
                epoch=epoch,
                expected_expires_at_ms=expected,
                expires_at_ms=expires,
                renewed_at_ms=now,
            )
        except Exception:
            self._doubt(expires)
            raise
        if not renewed:
            return None
        self._applied(epoch, expires, now, sent)
        return expires

    def close(self) -> SessionResult:
        """End the session at shutdown: its claims are takeover-eligible at once."""
        with self._serial:
            current = self._as_known()
            if isinstance(current, SessionResult):
                return current
            epoch, expected = current
            closed = self.store.cas_close_session(
                self.engine_id,
                epoch=epoch,
                expected_expires_at_ms=expected,
                closed_at_ms=self.clock(),
                closed_by=self.engine_id,
            )
            self._forget()
            return SessionResult("closed" if closed else "lost", epoch)

    # -- state -------------------------------------------------------------------------

    def _as_known(self) -> tuple[int, int] | SessionResult:
        """The open session's epoch and the expiry a statement on it must compare, with
        any statements in doubt settled by a read first; or the answer to give instead
        (``not-open``, or ``lost`` when the read shows the session gone). The caller
        holds the statement lock."""
        with self._state:
            epoch, expected = self._epoch, self._expires_at_ms
        if epoch is None or expected is None:
            return SessionResult("not-open", None)
        if self._doubted_expiries:
            settled = self._settle(epoch)
            if settled is None:
                return self._lost(epoch)
            expected = settled
        return epoch, expected

    def _settle(self, epoch: int) -> int | None:
        """Read the row to learn what the statements in doubt did: the expiry the row now
        holds if the session is still this engine's at ``epoch`` and open, else None."""
        row = self.store.read_session(self.engine_id)
        if row is None or not row.is_valid() or row.epoch != epoch or row.closed_at_ms is not None:
            return None
        with self._state:
            if row.expires_at_ms in self._doubted_expiries:
                # It landed: the session expires then, and was renewed no later than now.
                self._expires_at_ms = row.expires_at_ms
            return self._expires_at_ms if self._expires_at_ms == row.expires_at_ms else None

    def _doubt(self, intended_expires_at_ms: int) -> None:
        with self._state:
            self._doubted_expiries = [
                *self._doubted_expiries[-(MAX_SESSION_DOUBTS - 1) :],
                intended_expires_at_ms,
            ]

    def _applied(self, epoch: int, expires: int, now: int, sent: int) -> None:
        with self._state:
            if self._epoch == epoch:
                self._expires_at_ms, self._renewed_at_ms = expires, now
                self._deadline_ms = sent + self.timing.ttl_ms
                self._doubted_expiries = []

    def _lost(self, epoch: int) -> SessionResult:
        self._forget()
        return SessionResult("lost", epoch)

    def _forget(self) -> None:
        with self._state:
            self._epoch = self._expires_at_ms = self._renewed_at_ms = self._deadline_ms = None
            self._doubted_expiries = []


def close_expired_session(
    store: SessionStore, row: SessionRow | None, *, now_ms: int, timing: ClaimTiming, by: str
) -> bool:
    """Close another engine's session so its claims can be taken over, if the rule says it
    is expired; the CAS on the expiry read means a renewal that landed first wins."""
    if row is None or not may_close_for_takeover(row, now_ms, timing):
        return False
    return store.cas_close_session(
        row.engine_id,
        epoch=row.epoch,
        expected_expires_at_ms=row.expires_at_ms,
        closed_at_ms=now_ms,
        closed_by=by,
    )
