"""The engine-lease mode on the pages: a session holder's claim lives while its session
does, so its state and expiry come from the session row (docs/design.md §12).

Two forms of one rule (claims.protocol.states.derive_claim_state): claim rows read with
their sessions, for views of a page of rows; and SQL conditions, for filters and counts
over every row. In the workflow-lease mode no holder names a session, so neither reads a
session row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import Exists, OuterRef, Q

from claims.models import EngineSession
from claims.protocol.constants import MAX_SAFE_INTEGER
from claims.protocol.records import ClaimRow
from claims.store import OrmClaimStore
from claims.store.rows import claim_row_from_values

# Where a holder names its engine and session among (workflow_id, epoch, *HOLDER_COLUMNS).
_ENGINE, _SESSION_EPOCH = 2, 6

BY_SESSION = Q(holder_session_epoch__isnull=False)


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


def _holders_session(*conditions: Q) -> Exists:
    """A session row of the holder's engine at the epoch the holder names, well formed
    (SessionRow.is_valid) and meeting ``conditions``."""
    in_range = {
        f"{column}__{bound}": limit
        for column in ("expires_at_ms", "renewed_at_ms", "started_at_ms")
        for bound, limit in (("gte", 0), ("lte", MAX_SAFE_INTEGER))
    }
    return Exists(
        EngineSession.objects.filter(
            *conditions,
            engine_id=OuterRef("holder_engine_id"),
            epoch=OuterRef("holder_session_epoch"),
            **in_range,
        )
    )


def session_missing() -> Q:
    """A session holder whose session row is missing, garbled or at another epoch: such a
    claim is invalid, and stealable at once."""
    return BY_SESSION & ~Q(_holders_session())


def session_expiring(since_ms: int | None = None, until_ms: int | None = None) -> Q:
    """A session holder whose open session expires in [since_ms, until_ms); a closed
    session counts as expired long ago (its claims may be taken over at once)."""
    open_span = Q(closed_at_ms__isnull=True)
    if since_ms is not None:
        open_span &= Q(expires_at_ms__gte=since_ms)
    if until_ms is not None:
        open_span &= Q(expires_at_ms__lt=until_ms)
    span = open_span if since_ms is not None else open_span | Q(closed_at_ms__isnull=False)
    return BY_SESSION & Q(_holders_session(span))
