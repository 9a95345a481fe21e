"""Claim rows counted per derived state (and per holder engine): the state decided in SQL as
far as the row alone decides it, each session named judged once (docs/design.md §12)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from django.db.models import Case, CharField, Count, Value, When

from claims.models.claims import HOLDER_INVALID, HOLDER_PRESENT
from claims.protocol.states import CLAIM_STATES, ClaimState, session_holder_state
from claims.protocol.timing import ClaimTiming
from claims.store import OrmClaimStore

# A holder well formed in its own columns that names a session: its state is its session's.
BY_SESSION = "session"


def _row_state_case(now_ms: int, timing: ClaimTiming) -> Case:
    """derive_claim_state as far as the claim row decides it, as one SQL CASE (each row
    stops at its first matching branch); a session holder's state is left to its session.
    No branch reads another table, so a count over a million rows stays one plain scan."""
    takeover_from = now_ms - timing.grace_ms
    return Case(
        When(~HOLDER_PRESENT, then=Value("ownerless")),
        When(HOLDER_INVALID, then=Value("invalid")),
        When(holder_session_epoch__isnull=False, then=Value(BY_SESSION)),
        When(holder_expires_at_ms__gte=now_ms, then=Value("live")),
        When(holder_expires_at_ms__gte=takeover_from, then=Value("in-grace")),
        default=Value("expired"),
        output_field=CharField(),
    )


def claims_by_state(claims: Any, now_ms: int, timing: ClaimTiming) -> dict[ClaimState, int]:
    """Claim rows per derived state (every state present, zeros included)."""
    return claims_by_state_and_holder(claims, now_ms, timing).by_state


@dataclass(frozen=True)
class StateCounts:
    by_state: dict[ClaimState, int]  # every state, zeros included
    by_holder: dict[str, int]  # claim rows per holder engine
    by_holder_state: dict[str, dict[str, int]]  # per holder engine, its rows per state


def claims_by_state_and_holder(claims: Any, now_ms: int, timing: ClaimTiming) -> StateCounts:
    """Per derived state, per holder engine, and both: one grouped scan of the claims, by
    holder, session and the state the row alone decides, then one read of the sessions the
    groups name (none in the workflow-lease mode), each judged once for all of its claims."""
    groups = list(
        claims.annotate(row_state=_row_state_case(now_ms, timing))
        .values_list("holder_engine_id", "holder_session_epoch", "row_state")
        .annotate(n=Count("pk"))
        .order_by()
    )
    return tally_states(groups, now_ms, timing)


def tally_states(
    groups: list[tuple[str | None, int | None, str, int]], now_ms: int, timing: ClaimTiming
) -> StateCounts:
    """Counts of (holder, session epoch, state or BY_SESSION, rows) groups per derived state,
    holder and both, each session the groups name read once and judged once."""
    counts = StateCounts(dict.fromkeys(CLAIM_STATES, 0), {}, {})
    named = {holder for holder, _, state, _ in groups if state == BY_SESSION and holder}
    sessions = OrmClaimStore().read_sessions(named) if named else {}
    for holder, session_epoch, state, n in groups:
        if state == BY_SESSION:  # a valid session holder names both
            state = session_holder_state(
                sessions.get(holder or ""), holder or "", session_epoch or 0, now_ms, timing
            )
        counts.by_state[cast(ClaimState, state)] += n
        if holder:
            counts.by_holder[holder] = counts.by_holder.get(holder, 0) + n
            held = counts.by_holder_state.setdefault(holder, {})
            held[state] = held.get(state, 0) + n
    return counts
