"""The session a claim granted from outside an engine must name (docs/design.md §12)."""

from __future__ import annotations

from claims.protocol.sessions import SessionStore


def open_session_epoch(store: SessionStore, engine_id: str) -> int | None:
    """The epoch of the engine's open session, or None for an engine that holds its claims
    one by one (the workflow-lease mode), or whose session is gone.

    A claim granted to an engine under a session must name that session: the engine
    renews the session, never a claim, so a claim with its own expiry would lapse. A
    session that closes between this read and the grant leaves the claim takeover-eligible
    at once, which is safe: its epoch still fences every write."""
    session = store.read_session(engine_id)
    if session is None or not session.is_valid() or session.closed_at_ms is not None:
        return None
    return session.epoch
