"""Engine sessions, the liveness of the engine-lease ownership mode (docs/design.md §12).

In that mode an engine holds one session lease row with its own epoch and expiry and
renews that row alone; a claim it holds names the engine and the session, and is alive
exactly while the session is. This module holds the session row as read, the pure
judgements on it, and the storage contract of the session rows. The judgement of expiry
is the claims' own (``is_claim_expired``): a session is expired strictly after its
expiry plus two renew intervals, on the fleet clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from .constants import MAX_SAFE_INTEGER
from .timing import ClaimTiming, is_claim_expired

# live: inside its expiry. in-grace: past it, not yet takeover-eligible. expired: past the
# grace, so anyone may close it. closed: closed by its engine or by a takeover; it can
# never be renewed again. invalid: no row, or a row no engine could have written.
SessionState = Literal["live", "in-grace", "expired", "closed", "invalid"]
SESSION_STATES: tuple[SessionState, ...] = ("live", "in-grace", "expired", "closed", "invalid")
# The states whose claims any engine may take over at once.
TAKEOVER_ELIGIBLE_SESSION_STATES: frozenset[SessionState] = frozenset(
    {"expired", "closed", "invalid"}
)


@dataclass(frozen=True, slots=True)
class SessionRow:
    """One engine's session lease, exactly as stored."""

    engine_id: str
    epoch: int
    expires_at_ms: int
    renewed_at_ms: int
    started_at_ms: int
    closed_at_ms: int | None = None
    closed_by: str = ""

    def is_valid(self) -> bool:
        """A garbled row (blank engine, epoch below 1, a time out of range) holds nothing:
        its claims are takeover-eligible at once, as an invalid claim holder is."""
        if not self.engine_id or not isinstance(self.epoch, int) or self.epoch < 1:
            return False
        times = (self.expires_at_ms, self.renewed_at_ms, self.started_at_ms)
        return all(isinstance(ts, int) and 0 <= ts <= MAX_SAFE_INTEGER for ts in times)


def derive_session_state(row: SessionRow | None, now_ms: int, timing: ClaimTiming) -> SessionState:
    if row is None or not row.is_valid():
        return "invalid"
    if row.closed_at_ms is not None:
        return "closed"
    if now_ms <= row.expires_at_ms:
        return "live"
    return "expired" if is_claim_expired(row.expires_at_ms, now_ms, timing) else "in-grace"


def session_is_open(row: SessionRow | None, epoch: int | None) -> bool:
    """Whether the session ``epoch`` is open: a valid row at that epoch, not closed. While
    it is, no claim naming it may be taken over (the stores' test, ``cas_grant``)."""
    return row is not None and row.is_valid() and row.epoch == epoch and row.closed_at_ms is None


def may_close_for_takeover(row: SessionRow | None, now_ms: int, timing: ClaimTiming) -> bool:
    """Whether an engine other than the holder may close this session to take its claims:
    only once it is expired by the rule, and never earlier."""
    return derive_session_state(row, now_ms, timing) == "expired"


class SessionStore(Protocol):
    """The session rows' statements. Each ``cas_*`` is one conditional statement that
    applies only while the row still holds exactly the values named, and says whether it
    applied; the store never judges expiry."""

    def read_session(self, engine_id: str) -> SessionRow | None: ...

    def cas_open_session(
        self, engine_id: str, *, expected_epoch: int | None, expires_at_ms: int, now_ms: int
    ) -> bool:
        """Start a session: the row at epoch 1 if the engine has none (``expected_epoch``
        None), else the next epoch if the row is still at ``expected_epoch``. A new epoch
        is open (not closed), renewed and started now."""
        ...

    def cas_renew_session(
        self,
        engine_id: str,
        *,
        epoch: int,
        expected_expires_at_ms: int,
        expires_at_ms: int,
        renewed_at_ms: int,
    ) -> bool:
        """Move the expiry if the row is at ``epoch``, open, and expires when last read."""
        ...

    def cas_close_session(
        self,
        engine_id: str,
        *,
        epoch: int,
        expected_expires_at_ms: int,
        closed_at_ms: int,
        closed_by: str,
    ) -> bool:
        """Close the session for good if it is at ``epoch``, open, and expires when read."""
        ...


def open_session_epoch(
    store: SessionStore, engine_id: str, *, now_ms: int, timing: ClaimTiming
) -> int | None:
    """The session a claim granted from outside the engine (a forced or bulk takeover, a
    start) must name: its epoch while the engine's session is alive (live or in grace), or
    None for an engine that holds its claims one by one (the workflow-lease mode), or whose
    session is expired, closed or garbled (its engine is dead or dying: a claim naming that
    session would be takeover-eligible at once).

    A claim granted to an engine under a session must name that session: the engine
    renews the session, never a claim, so a claim with its own expiry would lapse. A
    session that closes between this read and the grant leaves the claim takeover-eligible
    at once, which is safe: its epoch still fences every write."""
    session = store.read_session(engine_id)
    if session is None or derive_session_state(session, now_ms, timing) not in ("live", "in-grace"):
        return None
    return session.epoch
