"""Closing the expired sessions a takeover's rows name, before it judges them (docs/design.md
§12, "Why a takeover closes the session first").

Engines of either mode do this: whatever an engine of the engine-lease mode left when it
died is taken over at the next epoch by whichever engines run after it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace

from .held_claims import HeldClaims
from .log_events import log_event
from .metrics import ClaimMetrics
from .records import ClaimRow, SessionPair
from .session_lease import close_expired_session
from .sessions import SessionRow, SessionStore, may_close_for_takeover, session_is_open
from .timing import ClaimTiming

logger = logging.getLogger("weftboard.claims")


def close_expired_sessions_for(
    claims: HeldClaims, rows: Mapping[str, ClaimRow], now_ms: int
) -> dict[str, ClaimRow]:
    """``close_expired_sessions`` as the engine holding ``claims``, with its store, timing
    and metrics."""
    return close_expired_sessions(
        claims.store,
        rows,
        now_ms=now_ms,
        timing=claims.timing,
        by=claims.engine_id,
        metrics=claims.metrics,
    )


def close_expired_sessions(
    store: SessionStore,
    rows: Mapping[str, ClaimRow],
    *,
    now_ms: int,
    timing: ClaimTiming,
    by: str,
    metrics: ClaimMetrics | None,
) -> dict[str, ClaimRow]:
    """Close, once each, the expired sessions the rows' holders name, and return the rows
    with each session as it now stands: closed by ``by``, or as a fresh read shows it when
    the close did not apply (a renewal, or another engine, came first)."""
    expired: dict[tuple[str, int], SessionRow] = {}
    for row in rows.values():
        session = row.session
        if session is not None and may_close_for_takeover(session, now_ms, timing):
            expired[(session.engine_id, session.epoch)] = session
    if not expired:
        return dict(rows)
    now_known = {
        key: _close(store, session, now_ms=now_ms, timing=timing, by=by, metrics=metrics)
        for key, session in expired.items()
    }
    return {
        workflow_id: (
            row
            if row.session is None
            or (key := (row.session.engine_id, row.session.epoch)) not in now_known
            else replace(row, session=now_known[key])
        )
        for workflow_id, row in rows.items()
    }


def _close(
    store: SessionStore,
    session: SessionRow,
    *,
    now_ms: int,
    timing: ClaimTiming,
    by: str,
    metrics: ClaimMetrics | None,
) -> SessionRow | None:
    """Close one expired session; the row as it now stands (a fresh read when the close
    did not apply: a renewal, or another engine, came first)."""
    try:
        closed = close_expired_session(store, session, now_ms=now_ms, timing=timing, by=by)
    except Exception:
        # It may have committed: the read below shows what the row holds now.
        logger.exception("could not close the expired session of %s", session.engine_id)
        closed = False
    if not closed:
        return store.read_session(session.engine_id)
    if metrics is not None:
        metrics.record_session("closed-expired")
    log_event(
        logger,
        logging.WARNING,
        "session-expired",
        engine=session.engine_id,
        epoch=session.epoch,
        closed_by=by,
    )
    return replace(session, closed_at_ms=now_ms, closed_by=by)


def session_closed_for_sweep(claims: HeldClaims, pair: SessionPair, now_ms: int) -> bool:
    """Whether the claims naming the session ``pair`` may be taken over by the session: it
    is not open (closed, moved on an epoch, gone or garbled), or it is expired by the rule
    and this engine closes it now. A session renewed meanwhile is alive again: False."""
    engine_id, epoch = pair
    row = claims.store.read_session(engine_id)
    expired = row is not None and may_close_for_takeover(row, now_ms, claims.timing)
    if row is not None and row.epoch == epoch and expired:
        row = _close(
            claims.store,
            row,
            now_ms=now_ms,
            timing=claims.timing,
            by=claims.engine_id,
            metrics=claims.metrics,
        )
    return not session_is_open(row, epoch)
