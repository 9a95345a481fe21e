"""The session a claim granted from outside an engine must name (docs/design.md §12)."""

from __future__ import annotations

from claims.protocol.sessions import SessionStore, derive_session_state
from claims.protocol.timing import ClaimTiming


def open_session_epoch(
    store: SessionStore, engine_id: str, *, now_ms: int, timing: ClaimTiming
) -> int | None:
    """The epoch of the engine's session while it is alive (live or in grace), or None for
    an engine that holds its claims one by one (the workflow-lease mode), or whose session
    is expired, closed or garbled (its engine is dead or dying: a claim naming that session
    would be takeover-eligible at once).

    A claim granted to an engine under a session must name that session: the engine
    renews the session, never a claim, so a claim with its own expiry would lapse. A
    session that closes between this read and the grant leaves the claim takeover-eligible
    at once, which is safe: its epoch still fences every write."""
    session = store.read_session(engine_id)
    if session is None or derive_session_state(session, now_ms, timing) not in ("live", "in-grace"):
        return None
    return session.epoch
