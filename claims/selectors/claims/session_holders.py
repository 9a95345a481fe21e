"""The engine-lease mode on the pages: a session holder's claim lives while its session
does, so its state and expiry come from the session row (docs/design.md §12).

Two forms of one rule (claims.protocol.states.derive_claim_state): claim rows read with
their sessions, for views of a page of rows; and the sessions the claims name, each judged
once, for filters over every row. In the workflow-lease mode no holder names a session, so
neither reads a session row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import Q

from claims.protocol.records import ClaimRow
from claims.protocol.sessions import SessionRow
from claims.protocol.states import ClaimState, names_valid_session, session_holder_state
from claims.protocol.timing import ClaimTiming
from claims.store import OrmClaimStore
from claims.store.rows import claim_row_from_values

# Where a holder names its engine and session among (workflow_id, epoch, *HOLDER_COLUMNS).
_ENGINE, _SESSION_EPOCH = 2, 6


def rows_with_sessions(values: Sequence[Sequence[Any]]) -> list[ClaimRow]:
    """Claim rows from (workflow_id, epoch, *HOLDER_COLUMNS) values, each session holder's
    with its session row: one query for the page, none when no holder names a session."""
    engines = {v[_ENGINE] for v in values if v[_SESSION_EPOCH] is not None and v[_ENGINE]}
    sessions = OrmClaimStore().read_sessions(engines) if engines else {}
    rows = []
    for workflow_id, epoch, engine_id, holder_epoch, expires, claimed, session_epoch in values:
        session = None if session_epoch is None else sessions.get(engine_id)
        rows.append(
            claim_row_from_values(
                workflow_id,
                epoch,
                engine_id,
                holder_epoch,
                expires,
                claimed,
                session_epoch,
                session,
            )
        )
    return rows


# An engine and the epoch of its session that a holder names.
SessionPair = tuple[str, int]
# The pairs the claims name, by the state their claims are in (no key: no such claims).
JudgedSessions = dict[ClaimState, list[SessionPair]]


def _named_sessions() -> list[tuple[SessionPair, SessionRow | None]]:
    """Every (engine, session) pair the claims name, with that engine's session row as read
    (None: no row): one step along the session index per pair and one read of the rows."""
    store = OrmClaimStore()
    pairs = store.list_session_pairs()
    if not pairs:
        return []
    sessions = store.read_sessions({engine for engine, _ in pairs})
    return [((engine, epoch), sessions.get(engine)) for engine, epoch in pairs]


def judge_sessions(now_ms: int, timing: ClaimTiming) -> JudgedSessions:
    """Every (engine, session) pair the claims name, judged once with its session row by
    the protocol's rule: one step along the session index per pair and one read of those
    sessions, none of it growing with the claims (one statement that finds nothing in the
    workflow-lease mode). A filter then reads a state's session holders by their pairs.
    A pair first named after this read is in no state's list until the next request."""
    judged: JudgedSessions = {}
    for (engine, epoch), session in _named_sessions():
        state = session_holder_state(session, engine, epoch, now_ms, timing)
        judged.setdefault(state, []).append((engine, epoch))
    return judged


def session_expiries() -> dict[SessionPair, int]:
    """The (engine, session) pairs the claims name whose session row is there and valid at
    that epoch (names_valid_session, as judge_sessions judges them), each with its
    session's expiry: the expiry of every claim that names it. The same reads as
    judge_sessions (none growing with the claims). A pair missing here has no expiry."""
    expiries: dict[SessionPair, int] = {}
    for (engine, epoch), session in _named_sessions():
        if session is not None and names_valid_session(session, engine, epoch):
            expiries[(engine, epoch)] = session.expires_at_ms
    return expiries


def holders_of(pairs: Sequence[SessionPair]) -> Q:
    """The claims whose holder names one of these sessions (nothing for no pairs)."""
    condition = Q(pk__in=[])
    for engine, epoch in pairs:
        condition |= Q(holder_engine_id=engine, holder_session_epoch=epoch)
    return condition
