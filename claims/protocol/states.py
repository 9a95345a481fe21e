"""The state an operator sees for a claim, derived with the protocol's own expiry rule."""

from __future__ import annotations

from typing import Literal

from .records import ClaimRow
from .sessions import SessionRow, SessionState, derive_session_state
from .timing import ClaimTiming, is_claim_expired

ClaimState = Literal["live", "in-grace", "expired", "invalid", "ownerless"]
CLAIM_STATES: tuple[ClaimState, ...] = ("live", "in-grace", "expired", "invalid", "ownerless")

# A session holder's claim is in its session's state; a closed session's claims may be
# taken over at once, as an expired claim's may (docs/design.md §12).
_BY_SESSION_STATE: dict[SessionState, ClaimState] = {
    "live": "live",
    "in-grace": "in-grace",
    "expired": "expired",
    "closed": "expired",
    "invalid": "invalid",
}


def derive_claim_state(row: ClaimRow, now_ms: int, timing: ClaimTiming) -> ClaimState:
    """live until expires_at; in grace until takeover is allowed; then expired."""
    if row.holder is None:
        return "ownerless"
    if not row.holder_is_valid():
        return "invalid"
    if row.holder.session_epoch is not None:
        return _BY_SESSION_STATE[derive_session_state(row.session, now_ms, timing)]
    expires = row.holder.expires_at_ms
    assert expires is not None
    if now_ms <= expires:
        return "live"
    return "expired" if is_claim_expired(expires, now_ms, timing) else "in-grace"


def session_holder_state(
    session: SessionRow | None, engine_id: str, session_epoch: int, now_ms: int, timing: ClaimTiming
) -> ClaimState:
    """The state of a holder that is well formed in its own columns and names session
    ``session_epoch`` of ``engine_id``, given that engine's session row as read (None: no
    row). The same rule as derive_claim_state, for a count that groups such holders by
    session and reads each session once."""
    if session is None or not names_valid_session(session, engine_id, session_epoch):
        return "invalid"
    return _BY_SESSION_STATE[derive_session_state(session, now_ms, timing)]


def names_valid_session(session: SessionRow | None, engine_id: str, session_epoch: int) -> bool:
    """Whether ``session`` (that engine's row as read; None: no row) is a valid row of
    ``engine_id`` at ``session_epoch``, so a holder naming that session lives by its
    expiry; a holder naming a missing, garbled or moved-on session is invalid."""
    return (
        session is not None
        and session.is_valid()
        and session.engine_id == engine_id
        and session.epoch == session_epoch
    )


def takeover_eligible(row: ClaimRow, now_ms: int, timing: ClaimTiming) -> bool:
    """Whether anyone may take this held claim over now: expired or invalid."""
    return derive_claim_state(row, now_ms, timing) in ("expired", "invalid")
